"""Learning curves of training runs side by side: one line per run, a metric of its `history.json`.

    python examples/plot_runs.py "dropout 0.1=runs/before" "no dropout=runs/after" --out curves.png
    python examples/plot_runs.py runs/a runs/b --metric val_loss --out loss.png

Each argument is a run directory (`keras-s2s train --out`), optionally `LABEL=DIR`; the metric is
any key of the history (`val_bleu`, the default, `val_loss`, `loss`, `val_chrf`, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from keras_s2s.plots import plot_curves


def read_curve(run: str, metric: str) -> tuple[str, list[float]]:
    """(label, values per epoch) of `run` (`DIR` or `LABEL=DIR`); a SystemExit naming what is missing."""
    label, _, directory = run.rpartition("=")
    history_file = Path(directory) / "history.json"
    if not history_file.is_file():
        raise SystemExit(f"{directory}: no history.json (not a finished or resumed training run)")
    history = json.loads(history_file.read_text())
    if metric not in history:
        raise SystemExit(f"{history_file}: no {metric!r} (it has {', '.join(sorted(history))})")
    return label or Path(directory).name, [float(value) for value in history[metric]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, each DIR or LABEL=DIR")
    parser.add_argument("--metric", default="val_bleu")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", required=True, help="the PNG file to write")
    args = parser.parse_args(argv)
    curves = dict(read_curve(run, args.metric) for run in args.runs)
    ylabel = {"val_bleu": "dev BLEU (greedy)", "val_loss": "dev loss"}.get(args.metric, args.metric)
    print(plot_curves(curves, args.out, ylabel, title=args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
