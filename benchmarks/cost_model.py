"""Predicted speedup of data-parallel and hybrid GNMT training on N GPUs (keras_s2s.distribution.cost_model).

Prints, for the GNMT card's sizes and each hardware profile, the per-device
FLOPs and bytes moved per step and the predicted step-time ratios, beside
Ono et al.'s measured 4.13-4.20x (hybrid, 4 GPUs vs 1).

    python benchmarks/cost_model.py
    python benchmarks/cost_model.py --layers 8 --batch 256 --devices 2 4 8
"""

from __future__ import annotations

import argparse

from keras_s2s.distribution.cost_model import HARDWARE, GNMTShape, step_time


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--units", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument(
        "--length", type=int, default=50, help="source and target tokens per sentence"
    )
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    shape = GNMTShape(
        layers=args.layers,
        units=args.units,
        vocab=args.vocab,
        batch=args.batch,
        source=args.length,
        target=args.length,
    )
    print(
        f"GNMT {args.layers}+{args.layers} x {args.units}, vocabulary {args.vocab}, batch {args.batch} x "
        f"{args.length}; per step, on the busiest device"
    )
    print(
        f"{'hardware':12s} {'devices':>7s} {'mode':7s} {'TFLOP':>6s} {'GB moved':>8s} {'ms':>7s} {'speedup':>8s}"
    )
    for name, hardware in HARDWARE.items():
        single = step_time(shape, hardware, 1)
        print(
            f"{name:12s} {1:7d} {'-':7s} {single.flops / 1e12:6.2f} {0:8.2f} {single.total * 1e3:7.1f} "
            f"{1:7.2f}x"
        )
        for devices in args.devices:
            for mode in ("data", "hybrid"):
                cost = step_time(shape, hardware, devices, mode)
                print(
                    f"{'':12s} {devices:7d} {mode:7s} {cost.flops / 1e12:6.2f} {cost.bytes_moved / 1e9:8.2f} "
                    f"{cost.total * 1e3:7.1f} {single.total / cost.total:7.2f}x"
                )
    print(
        "Ono et al. 2019 measured 4.13-4.20x for hybrid on 4 GPUs vs 1 (their hardware and baseline)."
    )


if __name__ == "__main__":
    main()
