"""A cost model of one GNMT training step: data-parallel vs hybrid data-model parallel on N devices.

It counts, per device and step, the FLOPs (forward + backward = 3x the
forward matmuls) and the bytes moved between devices, and turns them into
time with three numbers of the hardware: matmul throughput, the shortest
time of one recurrent LSTM step (a kernel cannot run faster than its launch
and synchronisation, however small the batch), and link bandwidth.

Why hybrid can win: an LSTM advances one time step at a time. Data
parallelism splits the batch, so each device's recurrent matmul gets N times
smaller but, once it is latency-bound, no faster; and every parameter's
gradient must be all-reduced. Hybrid keeps the whole batch on each LSTM layer
(layers of different devices run at once, pipelined over time chunks;
the decoder stack does not wait for the encoder, as there is no input
feeding), splits only the attention and softmax, and exchanges only the
readout's gradients and the activations at layer boundaries.

Assumptions, stated so they can be argued with: no overlap of communication
and compute; the readout's gradients are summed on the first device (as
`keras_s2s.distribution.placement` does); sparse embedding gradients move their
rows only; a pipeline of k stages over c chunks idles (k - 1) / c of the
time (Ono et al. pipeline per time step, c = T).

Example:
    >>> shape = GNMTShape(layers=4, units=1024, vocab=32000, batch=128, source=50, target=50)
    >>> hw = HARDWARE["h200-nvlink"]
    >>> single, dp, hyb = step_time(shape, hw, 1), step_time(shape, hw, 4, "data"), step_time(shape, hw, 4, "hybrid")
    >>> single.total / hyb.total     # predicted hybrid speedup on 4 devices
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class GNMTShape:
    """A GNMT (`keras_s2s.models.GNMT`, embedding and attention sizes = units) and one batch's shape."""

    layers: int = 4
    units: int = 1024
    vocab: int = 32000
    batch: int = 128
    source: int = 50
    target: int = 50
    bytes_per_value: int = 2  # activations in float16 / bfloat16; gradients of weights are float32


@dataclasses.dataclass(frozen=True)
class Hardware:
    """matmul FLOP/s, the shortest recurrent LSTM step (s) and the bandwidth between devices (bytes/s)."""

    flops: float
    step_latency: float
    bandwidth: float


HARDWARE = {
    # ~60% of the dense bf16/fp16 peak; cuDNN LSTM steps ~10 us; NVLink / PCIe per direction
    "v100-nvlink": Hardware(flops=75e12, step_latency=10e-6, bandwidth=150e9),
    "v100-pcie": Hardware(flops=75e12, step_latency=10e-6, bandwidth=12e9),
    "h200-nvlink": Hardware(flops=600e12, step_latency=8e-6, bandwidth=450e9),
}


def lstm_parameters(inputs: int, units: int) -> int:
    return 4 * units * (inputs + units) + 4 * units


def lstm_layers(shape: GNMTShape) -> list[tuple[int, int, int, int]]:
    """(position in its stack, directions, input size, time steps) of every LSTM layer, encoder then decoder."""
    u = shape.units
    encoder = [(0, 2, u, shape.source), (1, 1, 2 * u, shape.source)]
    encoder += [(i, 1, u, shape.source) for i in range(2, shape.layers)]
    return encoder + [(i, 1, u, shape.target) for i in range(shape.layers)]


def parameter_counts(shape: GNMTShape) -> dict[str, int]:
    """Parameters of each part: embeddings, recurrent layers, readout (attention + combine + projection)."""
    u, v = shape.units, shape.vocab
    rnn = sum(d * lstm_parameters(i, u) for _, d, i, _ in lstm_layers(shape))
    attention = 2 * u * u + 2 * u + 1  # query and memory projections, v, b, g
    return {
        "embeddings": 2 * v * u,
        "rnn": rnn,
        "readout": attention + (2 * u * u + u) + (u * v + v),
    }


def _lstm_cost(directions: int, inputs: int, units: int, batch: float, steps: int, hw: Hardware):
    """(seconds, FLOPs) of one layer forward + backward: the hoisted input matmul, then a recurrence
    whose every step costs at least `hw.step_latency`."""
    input_flops = 3 * 2 * batch * steps * 4 * units * inputs
    step_flops = 3 * 2 * batch * 4 * units * units
    seconds = input_flops / hw.flops + 3 * steps * max(step_flops / 3 / hw.flops, hw.step_latency)
    return directions * seconds, directions * (input_flops + steps * step_flops)


def _readout_flops(shape: GNMTShape, batch: float) -> float:
    u, v, s, t = shape.units, shape.vocab, shape.source, shape.target
    # projections; tanh scores + context
    attention = 2 * batch * (s + t) * u * u + 6 * batch * t * s * u
    return 3 * (attention + 2 * batch * t * 2 * u * u + 2 * batch * t * u * v + 5 * batch * t * v)


@dataclasses.dataclass(frozen=True)
class StepCost:
    """One step on the busiest device: seconds of recurrent layers, readout and communication; FLOPs; bytes."""

    rnn: float
    readout: float
    communication: float
    flops: float
    bytes_moved: float

    @property
    def total(self) -> float:
        return self.rnn + self.readout + self.communication


def step_time(
    shape: GNMTShape, hw: Hardware, devices: int = 1, mode: str = "data", chunks: int | None = None
) -> StepCost:
    """Predicted cost of one training step on `devices` devices (`mode`: "data" or "hybrid").

    `chunks`: hybrid pipelining pieces per sequence (default: the target length, one per time step).
    """
    if mode not in ("data", "hybrid"):
        raise ValueError(f"mode must be 'data' or 'hybrid', got {mode!r}")
    n, u, width = devices, shape.units, shape.bytes_per_value
    params = parameter_counts(shape)
    readout_flops = _readout_flops(shape, shape.batch / n)
    if mode == "data" or n == 1:
        costs = [_lstm_cost(d, i, u, shape.batch / n, t, hw) for _, d, i, t in lstm_layers(shape)]
        # sparse embedding gradients: only touched rows
        rows = shape.batch / n * (shape.source + shape.target)
        moved = 2 * (n - 1) / n * 4 * (params["rnn"] + params["readout"]) + (n - 1) * 4 * rows * u
        return StepCost(
            sum(c[0] for c in costs),
            readout_flops / hw.flops,
            moved / hw.bandwidth,
            sum(c[1] for c in costs) + readout_flops,
            moved,
        )
    seconds, flops, longest = [0.0] * n, [readout_flops] * n, 0.0
    for position, d, i, t in lstm_layers(shape):  # layer i of both stacks on device i mod n
        layer_seconds, layer_flops = _lstm_cost(d, i, u, shape.batch, t, hw)
        seconds[position % n] += layer_seconds
        flops[position % n] += layer_flops
        longest = max(longest, layer_seconds)
    stages = min(n, shape.layers)
    # pipeline fill and drain
    rnn = max(seconds) + (stages - 1) / (chunks or shape.target) * longest
    tokens = shape.batch * (shape.source + shape.target)
    # a device receives activations and sends gradients at ~2 boundaries
    boundaries = 2 * tokens * u * width * 2
    # decoder outputs and memory out to the shards, gradients back
    shards = 2 * (n - 1) / n * tokens * u * width
    # summed on the first device, weights sent back
    readout_gradients = 2 * (n - 1) * 4 * params["readout"]
    moved = boundaries + shards + readout_gradients
    return StepCost(rnn, readout_flops / hw.flops, moved / hw.bandwidth, max(flops), moved)


def speedups(
    shape: GNMTShape, hw: Hardware, devices: int, chunks: int | None = None
) -> dict[str, float]:
    """Predicted speedup over one device of data-parallel and hybrid training on `devices` devices."""
    single = step_time(shape, hw, 1).total
    return {
        "data": single / step_time(shape, hw, devices, "data").total,
        "hybrid": single / step_time(shape, hw, devices, "hybrid", chunks).total,
    }
