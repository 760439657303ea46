"""Precision and XLA on one accelerator, in one run: float32 (TF32 off) vs TF32 vs mixed_float16 vs
mixed_bfloat16, each with and without XLA (jit_compile); tokens/s and peak memory per training step.

Variants are timed interleaved (median of `repeats` rounds of `steps`
steps), in two groups: first everything with TF32 allowed (TensorFlow's
default: the tf32 and mixed variants), then the float32 variants with TF32
switched off (switching retraces every function, so it happens once). Peak memory is
the growth of the device's peak allocation during the variant's steps over
what was allocated before them (activations, gradients, workspace).
Meant for an NVIDIA GPU (benchmarks/gpu_suite.sh); on a CPU it runs too
(TF32 then equals float32, and there is no memory figure).

    python benchmarks/bench_gpu.py                          # the gnmt card's sizes
    python benchmarks/bench_gpu.py --model transformer --batch 64 --length 64
    python benchmarks/bench_gpu.py --units 64 --layers 2 --vocab 500 --batch 8 --length 16   # CPU smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_s2s import zoo  # noqa: E402

PRECISIONS = {
    "float32": ("float32", False),
    "tf32": ("float32", True),
    "mixed_float16": ("mixed_float16", False),
    "mixed_bfloat16": ("mixed_bfloat16", False),
}


def build(args, policy: str, xla: bool) -> keras.Model:
    keras.utils.set_random_seed(0)
    sizes = {
        "gnmt": dict(units=args.units, num_layers=args.layers),
        "transformer": dict(d_model=args.units, num_layers=args.layers, ffn_dim=4 * args.units),
    }[args.model]
    return zoo.load(
        args.model,
        vocab_size=args.vocab,
        dropout=0.0,
        precision=policy,
        strategy="default",
        jit_compile=xla,
        **sizes,
    )


def device_name() -> str | None:
    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name.replace("/device:", "") if gpus else None


def timed_steps(model, batch, steps: int, device: str | None) -> tuple[float, float]:
    """(seconds per step, peak bytes above the allocation before the steps)."""
    if device:
        tf.config.experimental.reset_memory_stats(device)
        before = tf.config.experimental.get_memory_info(device)["current"]
    start = time.perf_counter()
    for _ in range(steps):
        logs = model.train_on_batch(*batch, return_dict=True)
    seconds = (time.perf_counter() - start) / steps
    peak = (
        tf.config.experimental.get_memory_info(device)["peak"] - before if device else float("nan")
    )
    if not np.isfinite(logs["loss"]):
        raise RuntimeError(f"non-finite loss {logs['loss']}")
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", choices=("gnmt", "transformer"), default="gnmt")
    parser.add_argument("--units", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--length", type=int, default=48)
    parser.add_argument(
        "--precisions", nargs="+", default=list(PRECISIONS), choices=list(PRECISIONS)
    )
    parser.add_argument("--no-xla", action="store_true", help="skip the jit_compile variants")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    device = device_name()
    rng = np.random.default_rng(0)
    ids = rng.integers(4, args.vocab, (args.batch, args.length)).astype("int32")
    batch = ({"source": ids, "target_in": ids}, ids)
    variants = [
        (name, xla)
        for name in args.precisions
        for xla in ((False,) if args.no_xla else (False, True))
    ]
    models = {variant: build(args, PRECISIONS[variant[0]][0], variant[1]) for variant in variants}
    times = {v: [] for v in variants}
    peaks = {}
    # switching TF32 makes TensorFlow retrace every function: time the TF32-on variants (TensorFlow's
    # default) interleaved, then switch it off once and time the pure float32 ones interleaved
    groups = {
        True: [v for v in variants if v[0] != "float32"],
        False: [v for v in variants if v[0] == "float32"],
    }
    for tf32, group in groups.items():
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
        for variant in group:
            start = time.perf_counter()
            timed_steps(models[variant], batch, 2, device)  # trace, compile, warm up
            print(
                f"warmed up {variant[0]}{' + XLA' if variant[1] else ''} in {time.perf_counter() - start:.0f}s",
                flush=True,
            )
        for _ in range(args.repeats):
            for variant in group:
                seconds, peaks[variant] = timed_steps(models[variant], batch, args.steps, device)
                times[variant].append(seconds)
    tf.config.experimental.enable_tensor_float_32_execution(True)  # TensorFlow's default
    median = {v: statistics.median(t) for v, t in times.items()}
    base = median[variants[0]]
    tokens = args.batch * args.length
    print(
        f"\n{args.model} {args.layers} layers x {args.units}, vocabulary {args.vocab}, batch {args.batch} x "
        f"{args.length} on {device or 'CPU'}; median of {args.repeats} x {args.steps} interleaved steps"
    )
    print(
        f"{'precision':16s} {'XLA':4s} {'s/step':>8s} {'tokens/s':>9s} {'speedup':>8s} {'peak MiB':>9s}"
    )
    for (name, xla), seconds in median.items():
        print(
            f"{name:16s} {'yes' if xla else 'no':4s} {seconds:8.4f} {tokens / seconds:9.0f} "
            f"{base / seconds:7.2f}x {peaks[(name, xla)] / 2**20:9.0f}"
        )


if __name__ == "__main__":
    main()
