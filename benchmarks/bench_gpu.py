"""Training throughput of zoo cards on Keras's JAX backend, one card per process, every precision in it.

For each precision (float32 with TF32 off, TF32, mixed_bfloat16,
mixed_float16 with dynamic loss scaling) the card is built with `zoo.load`
and trained through `fit()` on a synthetic batch at the card's batch size
(`synthetic.py`): the first `fit` call (`--warmup` steps) holds the
compilation, the second (`--steps` steps) is timed to the last step's
result. Printed and appended as JSON lines to `--json`:

* s/step and target tokens/s (text) or frames/s (speech);
* compile seconds: the warm-up call's time less its steps at the timed rate;
* peak device memory (JAX's allocator peak so far in this process; precisions
  run from the smallest footprint up, so each figure is its own);
* model FLOP/s (counted analytically, `flops.py`) and MFU against `--peak-tflops`
  (the chip's dense bfloat16 peak) and against the bfloat16 8192^3 matmul
  measured in the same process (`--matmul`).

Runs where TensorFlow is absent (the GPU machine); on a CPU it runs too, e.g.
the dry run of `gpu_suite.sh`:

    KERAS_BACKEND=jax python benchmarks/bench_gpu.py --card transformer --json out.jsonl
    KERAS_BACKEND=jax python benchmarks/bench_gpu.py --card gnmt_demo --batch 4 --steps 2 --warmup 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from flops import TEXT, training_flops  # noqa: E402
from synthetic import add_batch_arguments, synthetic_batch  # noqa: E402

from keras_s2s import zoo  # noqa: E402

# precision name -> (Keras policy, JAX float32 matmul precision)
PRECISIONS = {
    "mixed_bfloat16": ("mixed_bfloat16", "default"),
    "mixed_float16": ("mixed_float16", "default"),
    "tf32": ("float32", "tensorfloat32"),
    "float32": ("float32", "highest"),
}
H200_BF16_DENSE_TFLOPS = 989.0  # NVIDIA's H200 SXM figure, dense (no sparsity)


def matmul_tflops(n: int = 8192, repeats: int = 10) -> float:
    """TFLOP/s of an n^3 bfloat16 matmul on the default device (the practical peak)."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.key(0), (n, n), jnp.bfloat16)
    product = jax.jit(lambda x: x @ x)
    for _ in range(3):
        product(a).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        out = product(a)
    out.block_until_ready()
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e12


def peak_memory_bytes() -> int | None:
    import jax

    stats = jax.local_devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def _sync(model) -> None:
    import jax

    jax.block_until_ready([v.value for v in model.trainable_variables[:1]])


def measure(card: str, precision: str, args) -> dict:
    """One card at one precision: build, warm up (compile), time `args.steps` steps."""
    import jax

    policy, matmul = PRECISIONS[precision]
    jax.config.update("jax_default_matmul_precision", matmul)
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    overrides = dict(precision=policy, strategy="default")
    if args.batch:
        overrides["batch_size"] = args.batch
    card_obj = zoo.get_card(card, **overrides)
    batch = int(card_obj.data["batch_size"])
    built = time.perf_counter()
    model = zoo.load(card, **overrides)
    build_seconds = time.perf_counter() - built
    architecture = card_obj.architecture
    rng = np.random.default_rng(0)
    inputs, labels, shape, units, unit = synthetic_batch(architecture, model, batch, args, rng)
    steps = max(args.steps, args.warmup)
    # `steps` copies of the batch: fit slices one per step, as it would a corpus
    repeat = lambda a: np.concatenate([a] * steps)  # noqa: E731
    x = {key: repeat(value) for key, value in inputs.items()}
    y = repeat(labels)

    losses = []

    def run(count):
        start = time.perf_counter()
        history = model.fit(
            x, y, batch_size=batch, steps_per_epoch=count, epochs=1, shuffle=False, verbose=0
        )
        _sync(model)
        losses.append(float(history.history["loss"][-1]))
        return time.perf_counter() - start

    warm = run(args.warmup)
    timed = run(args.steps)
    step = timed / args.steps
    flops = training_flops(architecture, model, shape)
    row = {
        "card": card,
        "precision": precision,
        "policy": policy,
        "batch": batch,
        "shape": shape,
        "unit": unit,
        "parameters": int(model.count_params()),
        "seconds_per_step": step,
        "units_per_second": units / step,
        "compile_seconds": max(warm - args.warmup * step, 0.0),
        "build_seconds": build_seconds,
        "peak_memory_bytes": peak_memory_bytes(),
        "model_tflops": flops / step / 1e12,
        "mfu_vs_peak": flops / step / 1e12 / args.peak_tflops,
        "device": str(jax.devices()[0].device_kind),
        "loss": losses[-1],
        "text": architecture in TEXT,
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--card", required=True, help="a zoo card, e.g. transformer or gnmt_demo")
    parser.add_argument(
        "--precisions", nargs="+", default=list(PRECISIONS), choices=list(PRECISIONS)
    )
    parser.add_argument("--batch", type=int, default=0, help="batch size (0 = the card's)")
    parser.add_argument("--warmup", type=int, default=2, help="steps of the compiling call")
    parser.add_argument("--peak-tflops", type=float, default=H200_BF16_DENSE_TFLOPS)
    parser.add_argument("--matmul", type=int, default=0, help="also time an N^3 bfloat16 matmul")
    parser.add_argument("--json", help="append one JSON line per result here")
    add_batch_arguments(parser)
    args = parser.parse_args()
    if args.matmul:
        reference = matmul_tflops(args.matmul)
        print(f"matmul {args.matmul}^3 bfloat16: {reference:.1f} TFLOP/s", flush=True)
        if args.json:
            with open(args.json, "a") as handle:
                handle.write(json.dumps({"matmul": args.matmul, "tflops": reference}) + "\n")
    for precision in args.precisions:
        try:
            row = measure(args.card, precision, args)
        except Exception as error:  # one precision failing must not lose the others
            row = {
                "card": args.card,
                "precision": precision,
                "error": f"{type(error).__name__}: {error}"[:500],
            }
            print(f"{args.card} {precision}: FAILED {row['error']}", file=sys.stderr, flush=True)
        else:
            memory = row["peak_memory_bytes"]
            print(
                f"{row['card']:16s} {precision:15s} {row['seconds_per_step'] * 1e3:9.1f} ms/step "
                f"{row['units_per_second']:12,.0f} {row['unit']}/s  compile {row['compile_seconds']:6.1f} s  "
                f"peak {memory / 2**30 if memory else float('nan'):6.2f} GiB  "
                f"{row['model_tflops']:7.2f} TFLOP/s  MFU {100 * row['mfu_vs_peak']:5.1f}%",
                flush=True,
            )
        if args.json:
            with open(args.json, "a") as handle:
                handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
