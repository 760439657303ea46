"""XLA (`jit_compile`) off and on, float32 and mixed_bfloat16, measured in one run.

Each zoo architecture's demo card (card batch size) is built four times —
float32 and mixed_bfloat16, each with `training.jit_compile` false and
true — and the four train the same synthetic batch through `fit()`, timed
interleaved (median of all steps). A model XLA cannot compile is reported
as such, with the first line of the error.

    python benchmarks/bench_xla.py
    python benchmarks/bench_xla.py --models transformer convs2s --repeats 6 --steps 2
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench_speed import interleaved_medians, measure_each_model  # noqa: E402

VARIANTS = [
    ("float32", False),
    ("float32", True),
    ("mixed_bfloat16", False),
    ("mixed_bfloat16", True),
]


def measure(architecture: str, args) -> dict | str:
    """Median s/step per (policy, jit) variant, or the reason XLA failed."""
    variants = {(policy, jit): dict(precision=policy, jit_compile=jit) for policy, jit in VARIANTS}
    try:
        return interleaved_medians(architecture, variants, args)
    except Exception as error:  # noqa: BLE001 (XLA refuses some ops; the table says which model and why)
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        telling = [
            line
            for line in lines
            if any(
                word in line
                for word in ("XLA", "unsupported", "compile", "must be a compile-time constant")
            )
        ]
        return f"{type(error).__name__}: {(telling or lines or [''])[0][:160]}"


def main() -> None:
    results = measure_each_model(measure, __doc__)
    print(
        "\nSeconds per step (median), XLA off -> on, and the speed-ups (all measured in this run):"
    )
    print(
        f"{'model':12s} {'fp32':>7s} {'fp32 XLA':>9s} {'bf16':>7s} {'bf16 XLA':>9s} {'XLA/no fp32':>12s} "
        f"{'XLA/no bf16':>12s} {'bf16/fp32':>10s} {'best bf16/fp32':>15s}"
    )
    for name, r in results.items():
        if isinstance(r, str):
            print(f"{name:12s} XLA failed: {r}")
            continue
        f0, f1 = r["float32", False], r["float32", True]
        b0, b1 = r["mixed_bfloat16", False], r["mixed_bfloat16", True]
        print(
            f"{name:12s} {f0:7.3f} {f1:9.3f} {b0:7.3f} {b1:9.3f} {f0 / f1:11.2f}x {b0 / b1:11.2f}x "
            f"{f0 / b0:9.2f}x {min(f0, f1) / min(b0, b1):14.2f}x"
        )


if __name__ == "__main__":
    main()
