"""Where the training step's time goes, for every zoo architecture, in one run.

For each architecture at its demo card and at its full card (both at the
card's own batch size; fewer repeats at full size), float32 and
mixed_bfloat16 train on the same synthetic batch through `fit()` on a
repeated `tf.data` dataset, timed interleaved (A/B/A/B; the median of all
timed steps, each timed by a callback). Printed:

* s/step, target tokens/s (text) or frames/s (speech), bf16/fp32 speed-up;
* utilisation: model FLOP/s (counted analytically, `flops.py`) over the
  FLOP/s of a 2048^3 matmul of the same dtype measured in the same run;
* cores busy: process CPU time / wall time of the timed fit() calls;
* where the step's kernel time goes by op class (matmul/conv, element-wise,
  casts, softmax/normalisation, embedding gathers, random numbers (dropout),
  optimizer update, input pipeline, ...), from a TensorFlow profiler trace
  of a few steps (`optrace.py`): each class's share of the kernel time
  summed over all threads, and its kernel seconds per step;
* which scopes (pass and layer) and op types spend the element-wise
  kernel time (the largest few);
* how many op kernels run at once (0, 1, 2+) over the traced span: the
  time no kernel runs is Python and runtime overhead, one kernel at a time
  leaves a core idle unless that kernel splits its own work.

    python benchmarks/bench_speed.py                       # everything (long: full sizes take minutes each)
    python benchmarks/bench_speed.py --sizes demo --models transformer gnmt
    python benchmarks/bench_speed.py --json results.json   # also write the rows as JSON (after every model)
    python benchmarks/bench_speed.py --table results.json  # print the table of a JSON file again
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import optrace  # noqa: E402
import tensorflow as tf  # noqa: E402
from benchlib import matmul_gflops  # noqa: E402
from flops import training_flops  # noqa: E402
from synthetic import ARCHITECTURES, add_batch_arguments, synthetic_batch  # noqa: E402

from keras_s2s import zoo  # noqa: E402

POLICIES = ("float32", "mixed_bfloat16")
PEAK_DTYPE = {"float32": "float32", "mixed_bfloat16": "bfloat16"}
CLASS_ORDER = (
    "matmul/conv",
    "element-wise",
    "random (dropout)",
    "casts",
    "softmax/normalisation",
    "embedding gathers",
    "data movement",
    "control flow",
    "optimizer update",
    "input pipeline",
    "other",
)
TOP_SCOPES = 8  # element-wise scopes listed per row


class StepTimer(keras.callbacks.Callback):
    """Wall seconds of every training step."""

    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_train_batch_begin(self, batch, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.seconds.append(time.perf_counter() - self.start)


def fit_steps(model, dataset, steps: int) -> tuple[list, float, float]:
    """Seconds of each of `steps` fit() steps, and the fit's wall and process CPU seconds."""
    timer = StepTimer()
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[timer])
    return timer.seconds, time.perf_counter() - wall, time.process_time() - cpu


def measure_each_model(measure, description: str, extra_arguments=None) -> dict:
    """Parse the batch options (and `extra_arguments(parser)`'s), run `measure(architecture, args)` for each
    `--models` entry, print progress; returns {architecture: result} (shared by bench_levers and bench_xla)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_batch_arguments(parser)
    if extra_arguments:
        extra_arguments(parser)
    args = parser.parse_args()
    results = {}
    for architecture in args.models:
        results[architecture] = measure(architecture, args)
        print(f"  measured {architecture}", flush=True)
    return results


def interleaved_medians(architecture: str, variants: dict, args) -> dict:
    """Median s/step of each variant of `architecture`'s demo card, timed interleaved in one run.

    variants: {key: {"precision": policy, "context": a function returning the context the model is traced
    in (optional), any other card override}}. Returns {key: seconds} plus "units" (tokens or frames per step).
    """
    card = ARCHITECTURES[architecture][0]
    batch = zoo.get_card(card).data["batch_size"]
    models, datasets = {}, {}
    for key, settings in variants.items():
        settings = dict(settings)
        context = settings.pop("context", contextlib.nullcontext)
        keras.utils.set_random_seed(0)
        model = zoo.load(card, strategy="default", **settings)
        inputs, labels, _, units, _ = synthetic_batch(
            architecture, model, batch, args, np.random.default_rng(0)
        )
        datasets[key] = tf.data.Dataset.from_tensors((inputs, labels)).repeat()
        with context():  # the train function is traced here
            fit_steps(model, datasets[key], 2)
        models[key] = model
    steps = {key: [] for key in variants}
    for _ in range(args.repeats):
        for key in variants:
            steps[key] += fit_steps(models[key], datasets[key], args.steps)[0]
    del models
    keras.backend.clear_session()
    return {key: statistics.median(values) for key, values in steps.items()} | {"units": units}


def op_class_profile(model, dataset, steps: int) -> tuple[dict, dict, dict]:
    """From a trace of `steps` fit() steps: kernel seconds per step of each op class (summed over threads),
    the share of the traced span with 0, 1 and 2+ kernels running at once, and the element-wise kernel
    seconds per step of the scopes and op types that spend most of them."""
    with tempfile.TemporaryDirectory() as logdir:
        with optrace.profiled(logdir):
            model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0)
        classes = {name: value / steps for name, value in optrace.op_class_seconds(logdir).items()}
        levels = optrace.kernel_concurrency(logdir)
        elementwise = {
            scope: value / steps
            for scope, value in optrace.op_scope_seconds(logdir, "element-wise").most_common(
                TOP_SCOPES
            )
        }
    span = sum(levels.values()) or 1.0
    at_once = {
        "0": levels.get(0, 0.0) / span,
        "1": levels.get(1, 0.0) / span,
        "2+": sum(v for k, v in levels.items() if k >= 2) / span,
    }
    return classes, at_once, elementwise


def measure(architecture: str, size: str, args, peak: dict) -> list[dict]:
    card_name = ARCHITECTURES[architecture][0 if size == "demo" else 1]
    batch = zoo.get_card(card_name).data["batch_size"]
    steps, repeats = (
        (args.steps, args.repeats) if size == "demo" else (args.full_steps, args.full_repeats)
    )
    models, datasets = {}, {}
    for policy in POLICIES:
        keras.utils.set_random_seed(0)
        models[policy] = zoo.load(card_name, precision=policy, strategy="default")
        inputs, labels, shape, units, unit_name = synthetic_batch(
            architecture, models[policy], batch, args, np.random.default_rng(0)
        )
        datasets[policy] = tf.data.Dataset.from_tensors((inputs, labels)).repeat()
        fit_steps(models[policy], datasets[policy], 2)  # trace and warm up
    times = {policy: [] for policy in POLICIES}
    for _ in range(repeats):
        for policy in POLICIES:
            times[policy].append(fit_steps(models[policy], datasets[policy], steps))
    flops = training_flops(architecture, models["float32"], shape)
    rows = []
    for policy in POLICIES:
        wall = statistics.median(step for t in times[policy] for step in t[0])
        cpu = sum(t[2] for t in times[policy]) / sum(t[1] for t in times[policy])
        profile, at_once, elementwise = op_class_profile(
            models[policy], datasets[policy], args.profile_steps
        )
        kernel_seconds = sum(profile.values()) or 1.0
        rows.append(
            {
                "architecture": architecture,
                "card": card_name,
                "size": size,
                "policy": policy,
                "batch": batch,
                "params": models[policy].count_params(),
                "s_per_step": wall,
                "units_per_s": units / wall,
                "unit": unit_name,
                "gflops": flops / wall / 1e9,
                "utilisation": flops / wall / 1e9 / peak[policy],
                "cores_busy": cpu,
                "kernel_seconds": profile,
                "kernels_at_once": at_once,
                "elementwise_top": elementwise,
                "op_classes": {name: value / kernel_seconds for name, value in profile.items()},
            }
        )
    rows[1]["speedup"] = rows[0]["s_per_step"] / rows[1]["s_per_step"]
    rows[0]["speedup"] = 1.0
    del models
    keras.backend.clear_session()
    return rows


def print_table(rows: list[dict], peak: dict) -> None:
    """The speed table, then each op class's share of the kernel time and its kernel seconds per step."""
    print(
        f"\nmatmul 2048^3: float32 {peak['float32']:.0f} GFLOP/s, bfloat16 {peak['mixed_bfloat16']:.0f} GFLOP/s "
        "(utilisation = model FLOP/s over the same dtype's matmul FLOP/s)\n"
    )
    print(
        f"{'card':18s} {'policy':15s} {'batch':>5s} {'s/step':>7s} {'units/s':>14s} {'vs fp32':>8s} "
        f"{'util.':>6s} {'cores':>5s}"
    )
    for row in rows:
        rate = f"{row['units_per_s']:,.0f} {row['unit'][:3]}"
        print(
            f"{row['card']:18s} {row['policy']:15s} {row['batch']:5d} {row['s_per_step']:7.3f} {rate:>14s} "
            f"{row['speedup']:7.2f}x {row['utilisation']:6.1%} {row['cores_busy']:5.2f}"
        )
    classes = [c for c in CLASS_ORDER if any(c in row["op_classes"] for row in rows)]
    print("\nShare of kernel time by op class (profiler trace):")
    print(f"{'card':18s} {'policy':15s} " + " ".join(f"{c[:12]:>12s}" for c in classes))
    for row in rows:
        shares = " ".join(f"{row['op_classes'].get(c, 0.0):12.1%}" for c in classes)
        print(f"{row['card']:18s} {row['policy']:15s} {shares}")
    print("\nKernel seconds per step by op class (all threads summed):")
    print(
        f"{'card':18s} {'policy':15s} "
        + " ".join(f"{c[:12]:>12s}" for c in classes)
        + f" {'total':>7s}"
    )
    for row in rows:
        seconds = row.get("kernel_seconds", {})
        cells = " ".join(f"{seconds.get(c, 0.0):12.3f}" for c in classes)
        print(f"{row['card']:18s} {row['policy']:15s} {cells} {sum(seconds.values()):7.3f}")
    if any("kernels_at_once" in row for row in rows):
        print(
            "\nShare of the traced span with 0, 1, 2+ op kernels running at once (0: Python, runtime, waiting):"
        )
        print(f"{'card':18s} {'policy':15s} {'0':>6s} {'1':>6s} {'2+':>6s}")
        for row in rows:
            at_once = row.get("kernels_at_once", {})
            print(
                f"{row['card']:18s} {row['policy']:15s} "
                + " ".join(f"{at_once.get(k, 0.0):6.1%}" for k in ("0", "1", "2+"))
            )
    for row in rows:
        if row.get("elementwise_top"):
            print(
                f"\nElement-wise kernel seconds per step, {row['card']} {row['policy']} (pass, scope, op type):"
            )
            for scope, seconds in row["elementwise_top"].items():
                print(f"  {seconds:7.3f}  {scope}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_batch_arguments(parser)
    parser.add_argument("--sizes", nargs="+", default=["demo", "full"], choices=["demo", "full"])
    parser.add_argument("--full-steps", type=int, default=1)
    parser.add_argument("--full-repeats", type=int, default=2)
    parser.add_argument("--profile-steps", type=int, default=2)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument(
        "--table", help="print the table of a JSON file written by --json, measure nothing"
    )
    args = parser.parse_args()
    if args.table:
        with open(args.table, encoding="utf-8") as handle:
            saved = json.load(handle)
        print_table(saved["rows"], saved["peak_gflops"])
        return

    peak = {policy: matmul_gflops(dtype) for policy, dtype in PEAK_DTYPE.items()}
    rows = []
    for size in args.sizes:
        for architecture in args.models:
            rows += measure(architecture, size, args, peak)
            for row in rows[-2:]:
                print(
                    f"  {row['card']} {row['policy']}: {row['s_per_step']:.3f} s/step", flush=True
                )
            if args.json:  # after every model, so a long run interrupted keeps what it measured
                with open(args.json, "w", encoding="utf-8") as handle:
                    json.dump({"peak_gflops": peak, "rows": rows}, handle, indent=1)
    print_table(rows, peak)


if __name__ == "__main__":
    main()
