"""Hybrid data-model parallel training (Ono, Utiyama & Sumita 2019).

The RNN layers of the encoder and decoder sit on different devices (model
parallel: layer i on device i mod N, each embedding with the first layer of
its stack); attention, the output projection and the loss run on batch
shards, one shard per device (data parallel), and the shard losses are
combined as the single-device loss is: summed over all real tokens, divided
by their count. Backward ops run where their forward ops ran (`tf.gradients`
colocates them). With `time_chunks` = k > 1 the unidirectional LSTMs run
on k pieces of the sequence, each carrying its state into the next, so
layer i+1 can work on piece c while layer i works on piece c+1 (pipelining).

The model must be "GNMT-style": it exposes `encoder_layers`,
`decoder_layers`, `source_embedding`, `target_embedding` and accepts a plan
by `set_placement(plan)` before it is built (`keras_s2s.models.GNMT`).

Example:
    >>> hybrid = HybridParallel(devices=["/gpu:0", "/gpu:1"], time_chunks=2)
    >>> model = keras_s2s.zoo.load("gnmt", tokenizer=tok, strategy=hybrid)   # built placed
    >>> model.fit(train_ds)                                               # hybrid train_step
    >>> print(model.placement.describe())
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

import keras

from keras_s2s.backend import tf

log = logging.getLogger("keras_s2s")


def _canonical(device: str) -> str:
    spec = tf.DeviceSpec.from_string(device)
    if not spec.device_type:
        raise ValueError(f"device {device!r} names no device type; write e.g. /gpu:0 or /cpu:1")
    return f"/device:{spec.device_type.upper()}:{spec.device_index or 0}"


def available_devices() -> list[str]:
    """Logical devices of this process, canonical names (`/device:CPU:0`, `/device:GPU:1`, ...)."""
    return [
        _canonical(d.name)
        for d in tf.config.list_logical_devices()
        if d.device_type in ("CPU", "GPU")
    ]


def default_devices() -> list[str]:
    """All GPUs when there are several, else all logical CPU devices."""
    gpus = [_canonical(d.name) for d in tf.config.list_logical_devices("GPU")]
    return (
        gpus
        if len(gpus) > 1
        else [_canonical(d.name) for d in tf.config.list_logical_devices("CPU")]
    )


def check_devices(devices: list[str]) -> list[str]:
    """Canonical names of `devices`; a clear error for a device this process does not have."""
    if not devices:
        raise ValueError("a strategy over devices needs at least one device")
    return known_device_names(devices, [_canonical(d) for d in devices], available_devices())


def known_device_names(given: list[str], names: list[str], known: list[str]) -> list[str]:
    """`names` (the canonical names of the devices `given`) if each is `known` and none repeats; a
    ValueError naming the device otherwise (TensorFlow and JAX alike)."""
    for device, name in zip(given, names):
        if name not in known:
            raise ValueError(
                f"device {device!r} does not exist here; this process has {', '.join(known)}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"devices repeat: {', '.join(given)}")
    return names


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """Where each placed layer runs, and how batches and sequences are split.

    Args:
        devices: tuple[str]. Canonical device names; the readout (attention,
            combination, output projection) keeps its weights on the first
            and runs one batch shard on each.
        layers: dict[str, str]. Layer name -> device of the RNN layers and embeddings.
        time_chunks: int. Pieces each unidirectional LSTM runs its sequence in (1 = whole).
    """

    devices: tuple
    layers: dict
    time_chunks: int = 1

    def on(self, layer_name: str):
        """A `tf.device` scope for the layer, or no scope for a layer the plan does not place."""
        device = self.layers.get(layer_name)
        return tf.device(device) if device else contextlib.nullcontext()

    def readout_scope(self):
        """Scope in which the data-parallel readout builds its weights (the first device)."""
        return tf.device(self.devices[0])

    def shard_bounds(self, batch_size):
        """[(start, end)] of the N batch shards (sizes differ by at most one; a shard may be empty)."""
        n = len(self.devices)
        edges = [(batch_size * i) // n for i in range(n + 1)]
        return list(zip(edges[:-1], edges[1:]))

    def split(self, tensor) -> list:
        """The N batch shards of `tensor` (split on its first axis)."""
        tensor = tf.convert_to_tensor(tensor)
        return [tensor[start:end] for start, end in self.shard_bounds(tf.shape(tensor)[0])]

    def map_shards(self, fn, *tensors):
        """[fn(*shard_i) run on device i for each shard]; tensors are split on their first axis."""
        shards = zip(*[self.split(t) for t in tensors])
        results = []
        for index, (device, shard) in enumerate(zip(self.devices, shards)):
            with tf.device(device), tf.name_scope(f"shard_{index}"):
                results.append(fn(*shard))
        return results

    def describe(self) -> str:
        """One line per placed layer, then the readout, for logs."""
        lines = [f"  {name:24s} {device}" for name, device in self.layers.items()]
        shards = ", ".join(self.devices)
        lines.append(f"  {'readout (batch shards)':24s} {shards}; weights on {self.devices[0]}")
        if self.time_chunks > 1:
            lines.append(f"  LSTMs run in {self.time_chunks} time chunks (pipelined)")
        return "\n".join(lines)


def default_plan(
    model, devices: list[str], time_chunks: int = 1, overrides: dict | None = None
) -> LayerPlan:
    """Layer i of each stack on device i mod N, each embedding with its stack's first layer.

    Args:
        model: a GNMT-style model (not built yet).
        devices: list[str]. Devices to use, e.g. ["/gpu:0", "/gpu:1"].
        time_chunks: int. See `LayerPlan`.
        overrides: dict | None. Layer name -> device (or index into `devices`) to change the default.
    """
    _check_model(model)
    devices = check_devices(list(devices))
    if time_chunks < 1:
        raise ValueError(f"time_chunks must be >= 1, got {time_chunks}")
    overrides = dict(overrides or {})
    stacks = (
        (model.source_embedding, model.encoder_layers),
        (model.target_embedding, model.decoder_layers),
    )
    placeable = [layer.name for embedding, stack in stacks for layer in (embedding, *stack)]
    for name, device in overrides.items():
        if name not in placeable:
            raise ValueError(
                f"the plan names layer {name!r}; placeable layers are {', '.join(placeable)}"
            )
        if isinstance(device, int) and not 0 <= device < len(devices):
            raise ValueError(
                f"the plan puts {name!r} on device index {device}; there are {len(devices)} devices"
            )
        overrides[name] = devices[device] if isinstance(device, int) else check_devices([device])[0]
    layers = {}
    for embedding, stack in stacks:
        for index, layer in enumerate(stack):
            layers[layer.name] = overrides.get(layer.name, devices[index % len(devices)])
        layers[embedding.name] = overrides.get(embedding.name, layers[stack[0].name])
    return LayerPlan(tuple(devices), layers, time_chunks)


def _check_model(model) -> None:
    needed = (
        "encoder_layers",
        "decoder_layers",
        "source_embedding",
        "target_embedding",
        "set_placement",
    )
    missing = [name for name in needed if not hasattr(model, name)]
    if missing:
        raise ValueError(
            f"hybrid placement needs a GNMT-style model (RNN stacks without input feeding); "
            f"{type(model).__name__} lacks {', '.join(missing)}"
        )


class HybridParallel:
    """The `hybrid` strategy: pass it where a `tf.distribute.Strategy` goes (`zoo.load(strategy=...)`).

    It is one replica (the batch is not split by tf.distribute): the model
    itself places its layers and splits its readout. `scope()` is the default
    strategy's scope.

    Args:
        devices: list[str] | None. Devices (default: all GPUs when there are
            several, else all logical CPUs).
        time_chunks: int. Pipelining pieces for the LSTMs (1 = off).
        plan: dict | None. Layer name -> device overrides of the default plan.
    """

    num_replicas_in_sync = 1

    def __init__(
        self, devices: list[str] | None = None, time_chunks: int = 1, plan: dict | None = None
    ):
        self.devices = check_devices(list(devices) if devices else default_devices())
        self.time_chunks = int(time_chunks)
        self.overrides = dict(plan or {})
        if len(self.devices) == 1:
            log.warning("hybrid strategy on one device (%s): nothing is split", self.devices[0])

    def scope(self):
        return tf.distribute.get_strategy().scope()

    def place(self, model) -> LayerPlan:
        """Give the (unbuilt) model its plan; build it afterwards."""
        plan = default_plan(model, self.devices, self.time_chunks, self.overrides)
        model.set_placement(plan)
        log.info("hybrid placement over %d device(s):\n%s", len(self.devices), plan.describe())
        return plan


def run_chunked(layer, pieces: list, masks: list, training: bool) -> list:
    """Run an LSTM built with `return_state=True` over time pieces, carrying its state from piece to piece."""
    state, outputs = None, []
    for piece, mask in zip(pieces, masks):
        output, *state = layer(piece, mask=mask, initial_state=state, training=training)
        outputs.append(output)
    return outputs


def split_in_time(x, mask, chunks: int):
    """Pieces of x [B, T, D] (and of mask [B, T]) after padding T to a multiple of `chunks`; each piece is non-empty.

    Padded steps are masked (or, without a mask, come after every real step of
    a causal layer) and are cut off again by `join_in_time`.
    """
    length = tf.shape(x)[1]
    size = (length + chunks - 1) // chunks
    pad = size * chunks - length
    x = tf.pad(x, [[0, 0], [0, pad], [0, 0]])
    pieces = [x[:, i * size : (i + 1) * size] for i in range(chunks)]
    if mask is None:
        return pieces, [None] * chunks
    mask = tf.pad(mask, [[0, 0], [0, pad]])
    return pieces, [mask[:, i * size : (i + 1) * size] for i in range(chunks)]


def join_in_time(pieces, length):
    """The inverse of `split_in_time`: [B, length, D]."""
    return tf.concat(pieces, axis=1)[:, :length] if len(pieces) > 1 else pieces[0]


def hybrid_loss(model, x, y, training: bool = True):
    """(loss, shard logits, shard labels) of a placed model; each shard's loss computed on its device.

    The loss is (sum of every shard's per-token losses) / (real tokens in the
    batch): the single-device model's masked mean.
    """
    token_loss = getattr(model.loss, "token_losses", None)
    if token_loss is None:
        raise ValueError(
            "the hybrid strategy needs a per-token loss (compile with SmoothedCrossEntropy)"
        )
    plan = model.placement
    logits = model.shard_logits(x, training=training)
    labels = plan.split(y)
    sums, counts = [], []
    for device, shard_logits, shard_labels in zip(plan.devices, logits, labels):
        with tf.device(device):
            sums.append(tf.reduce_sum(token_loss(shard_labels, shard_logits)))
            counts.append(tf.reduce_sum(tf.cast(tf.not_equal(shard_labels, 0), tf.float32)))
    return tf.add_n(sums) / tf.maximum(tf.add_n(counts), 1.0), logits, labels


def hybrid_train_step(model, data):
    """One optimizer step of a placed model (its `train_step`): `hybrid_loss`, then gradients, each
    computed on the device of the op it differentiates (`tf.gradients` colocates them)."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    if sample_weight is not None:
        raise ValueError("the hybrid strategy does not take sample weights")
    if getattr(model, "jit_compile", False):
        raise ValueError(
            "the hybrid strategy spans several devices; XLA compiles for one: compile with "
            "jit_compile=False (card: training.jit_compile: false)"
        )
    # eagerly: built inside the traced step, slots would lose their colocation
    if not model.optimizer.built:
        with tf.init_scope():
            model.optimizer.build(model.trainable_variables)
    eager = tf.executing_eagerly()
    with tf.GradientTape() if eager else contextlib.nullcontext() as tape:
        loss, logits, labels = hybrid_loss(model, x, y, training=True)
        scaled = model.optimizer.scale_loss(loss)
    variables = model.trainable_variables
    if eager:
        grads = tape.gradient(scaled, variables)
    else:  # a GradientTape would leave the backward ops unplaced (all on the first device)
        grads = tf.gradients(scaled, [v.value for v in variables])
    model.optimizer.apply(grads, variables)
    for shard_logits, shard_labels in zip(logits, labels):
        model.compute_metrics(x, shard_labels, shard_logits)
    next(m for m in model.metrics if m.name == "loss").update_state(
        loss, sample_weight=tf.shape(y)[0]
    )
    return model.get_metrics_result()
