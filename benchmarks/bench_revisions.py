"""One benchmark, this tree against an earlier revision, in one interleaved run: per-row ratios.

The benchmark script runs in turn from this tree and from a temporary git
worktree of the revision (each importing its own `keras_s2s`), `--rounds`
times, alternating, so both see the same machine load. The script must take
`--json PATH` and write a list of rows there; rows are matched on their
non-float fields (e.g. engine, batch, beam) and `--metric` (higher is better)
is compared as the median over rounds. The old decoder, against the one
decoder of both backends (`6b20188` is the last revision with the TensorFlow-only one):

    python benchmarks/bench_revisions.py --against 6b20188 -- \\
        benchmarks/bench_serving.py --model runs/transformer_demo \\
        --engines native_float32,native_bfloat16 --sentences 100
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_benchmark(tree: Path, command: list[str], json_path: Path) -> list[dict]:
    """The benchmark's rows when run from `tree` (its own keras_s2s first on the path)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])
    )
    subprocess.run(
        [sys.executable, *command, "--json", str(json_path)], cwd=tree, env=env, check=True
    )
    return json.loads(json_path.read_text())


def row_key(row: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in row.items() if not isinstance(v, float)))


def median_by_key(runs: list[list[dict]], metric: str) -> dict:
    values: dict[tuple, list[float]] = {}
    for rows in runs:
        for row in rows:
            values.setdefault(row_key(row), []).append(row[metric])
    return {key: statistics.median(v) for key, v in values.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", required=True, help="a git revision (commit, tag, branch)")
    parser.add_argument("--repository", default=str(ROOT), help="the work tree (default: this one)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each tree, alternating")
    parser.add_argument("--metric", default="tokens_per_s", help="a row field; higher is better")
    parser.add_argument("--json", help="also write the rows and ratios here")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS...")
    args = parser.parse_args(argv)
    command = [c for c in args.command if c != "--"]
    if not command:
        parser.error("give the benchmark after --, e.g. -- benchmarks/bench_serving.py --model RUN")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1; got {args.rounds}")
    root = Path(args.repository).resolve()
    revision = subprocess.run(["git", "rev-parse", "--short", args.against], cwd=root,
                              capture_output=True, text=True)  # fmt: skip
    if revision.returncode:
        parser.error(f"--against {args.against!r} is not a revision of {root}")
    with tempfile.TemporaryDirectory(prefix="bench-revisions-") as scratch:
        old_tree = Path(scratch) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old_tree), args.against],
                       cwd=root, check=True)  # fmt: skip
        try:
            runs = {"this tree": [], args.against: []}
            for round_ in range(args.rounds):
                for name, tree in ((args.against, old_tree), ("this tree", root)):
                    print(f"--- round {round_ + 1}/{args.rounds}: {name}", flush=True)
                    out = Path(scratch) / f"{len(runs[name])}-{name.replace(' ', '_')}.json"
                    runs[name].append(run_benchmark(tree, command, out))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=root)
    new, old = (
        median_by_key(runs["this tree"], args.metric),
        median_by_key(runs[args.against], args.metric),
    )
    print(f"\n{args.metric}, median of {args.rounds} round(s): this tree / {args.against}")
    ratios = []
    for key in new:
        if key in old:
            label = "  ".join(f"{k} {v}" for k, v in key)
            ratios.append(
                {
                    **dict(key),
                    "this_tree": new[key],
                    "against": old[key],
                    "ratio": new[key] / old[key],
                }
            )
            print(f"  {label:50s} {new[key]:9.1f} / {old[key]:9.1f} = {new[key] / old[key]:5.2f}x")
    if ratios:
        mean = statistics.geometric_mean([r["ratio"] for r in ratios])
        print(f"  geometric mean over {len(ratios)} rows: {mean:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"against": args.against, "rows": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
