"""Parallel training on one host, in one run: GNMT training steps on one device vs MirroredStrategy
vs the hybrid data-model parallel mode (with and without time-chunk pipelining) over 2 logical CPU
devices, same global batch, each device limited to one thread.

The machine's CPU is split into two logical devices and TensorFlow is given
one thread per op (`intra_op` 1, `inter_op` 2), so that each replica runs
on one core as it would on its own accelerator. Configurations are timed
interleaved (median of `repeats` rounds of `steps` steps). For GPUs, see
benchmarks/cost_model.py (a prediction) and benchmarks/gpu_suite.sh.

    python benchmarks/bench_strategies.py
    python benchmarks/bench_strategies.py --units 512 --batch 128
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from benchlib import interleaved_step_times  # noqa: E402

from keras_s2s import zoo  # noqa: E402
from keras_s2s.distribution import (
    HybridParallel,  # noqa: E402
    get_strategy,  # noqa: E402
)


def split_device(gpu: bool, memory_mb: int = 16384) -> list[str]:
    """Two logical devices: two slices of GPU 0 (`memory_mb` each), or the CPU with one thread per op."""
    if gpu:
        physical = tf.config.list_physical_devices("GPU")
        if not physical:
            raise SystemExit("--gpu: this machine has no GPU")
        tf.config.set_logical_device_configuration(
            physical[0], [tf.config.LogicalDeviceConfiguration(memory_limit=memory_mb)] * 2
        )
        return [d.name for d in tf.config.list_logical_devices("GPU")]
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64, help="global batch")
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--precision", default="float32")
    parser.add_argument(
        "--chunks", type=int, default=4, help="time chunks of the pipelined hybrid run"
    )
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="split GPU 0 into 2 logical GPUs (a smoke test of "
        "the strategies on a GPU: both halves share its cores) instead of the CPU",
    )
    parser.add_argument("--gpu-memory-mb", type=int, default=16384, help="memory of each GPU slice")
    args = parser.parse_args()
    devices = split_device(args.gpu, args.gpu_memory_mb)
    strategies = {
        "one device": get_strategy("default"),
        "mirrored x2": get_strategy("mirrored", devices=devices),
        "hybrid x2": HybridParallel(devices),
        f"hybrid x2, {args.chunks} chunks": HybridParallel(devices, time_chunks=args.chunks),
    }
    models = {}
    for name, strategy in strategies.items():
        keras.utils.set_random_seed(0)
        models[name] = zoo.load(
            "gnmt",
            vocab_size=args.vocab,
            units=args.units,
            num_layers=args.layers,
            precision=args.precision,
            strategy=strategy,
            dropout=0.0,
        )
    rng = np.random.default_rng(0)
    inputs = {
        "source": rng.integers(3, args.vocab, (args.batch, args.length)).astype("int32"),
        "target_in": rng.integers(3, args.vocab, (args.batch, args.length)).astype("int32"),
    }
    labels = rng.integers(3, args.vocab, (args.batch, args.length)).astype("int32")
    medians = interleaved_step_times(models, inputs, labels, args.steps, args.repeats)
    tokens = args.batch * args.length
    where = "2 slices of one GPU" if args.gpu else "2 logical CPU devices with one thread each"
    print(
        f"\nGNMT {args.layers}x{args.units}, vocabulary {args.vocab}, global batch {args.batch} x {args.length}, "
        f"{args.precision}, {where}; median of {args.repeats} x {args.steps} interleaved steps"
    )
    print(f"{'strategy':22s} {'s/step':>7s} {'tokens/s':>9s} {'speedup':>8s}")
    for name in models:
        print(
            f"{name:22s} {medians[name]:7.3f} {tokens / medians[name]:9.0f} "
            f"{medians['one device'] / medians[name]:7.2f}x"
        )


if __name__ == "__main__":
    main()
