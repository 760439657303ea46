"""The GPU suite's tables (Markdown) from the JSON lines `bench_gpu.py` and `peer_torch.py` wrote.

One row per card and precision: step time, tokens or frames per second, the
speed-up over the card's float32 (or TF32) row, compile seconds, peak memory,
model TFLOP/s and MFU against the chip's dense bfloat16 peak and against the
bfloat16 matmul measured in the same run; then the PyTorch peers with ours
divided by theirs at the same batch shape.

    python benchmarks/gpu_tables.py $OUT/gpu_suite.jsonl > $OUT/gpu_tables.md
"""

from __future__ import annotations

import json
import sys

PEERS = {"pytorch transformer": "transformer", "pytorch gnmt": "gnmt"}


def read_rows(path: str) -> list[dict]:
    rows = []
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def _baseline(rows: list[dict], card: str) -> dict | None:
    for precision in ("float32", "tf32"):
        for row in rows:
            if row.get("card") == card and row.get("precision") == precision and "error" not in row:
                return row
    return None


def tables(rows: list[dict]) -> str:
    matmul = [row["tflops"] for row in rows if "matmul" in row]
    reference = max(matmul) if matmul else None
    lines = []
    if reference:
        lines.append(f"Measured bfloat16 8192^3 matmul in this run: {reference:.0f} TFLOP/s.\n")
    lines += [
        "| card | precision | batch | ms/step | units/s | x float32 | compile s | peak GiB | "
        "TFLOP/s | MFU (peak) | MFU (matmul) | loss |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    ours = [row for row in rows if "card" in row]
    for row in ours:
        if "error" in row:
            lines.append(f"| {row['card']} | {row['precision']} | failed: {row['error'][:80]} |")
            continue
        base = _baseline(ours, row["card"])
        speedup = base["seconds_per_step"] / row["seconds_per_step"] if base else float("nan")
        memory = row.get("peak_memory_bytes")
        matmul_mfu = row["model_tflops"] / reference if reference else float("nan")
        lines.append(
            f"| {row['card']} | {row['precision']} | {row['batch']} | "
            f"{row['seconds_per_step'] * 1e3:.1f} | {row['units_per_second']:,.0f} {row['unit']} | "
            f"{speedup:.2f} | {row['compile_seconds']:.1f} | "
            f"{memory / 2**30 if memory else float('nan'):.2f} | {row['model_tflops']:.1f} | "
            f"{100 * row['mfu_vs_peak']:.1f}% | {100 * matmul_mfu:.1f}% | {row.get('loss', float('nan')):.3f} |"
        )
    peers = [row for row in rows if "peer" in row]
    if peers:
        lines += [
            "",
            "| peer | precision | batch x length | ms/step | tokens/s | ours (mixed_bfloat16) tokens/s | ours / peer |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for peer in peers:
            card = PEERS.get(peer["peer"])
            mine = next(
                (
                    row
                    for row in ours
                    if row.get("card") == card
                    and row.get("precision") == "mixed_bfloat16"
                    and "error" not in row
                ),
                None,
            )
            ratio = mine["units_per_second"] / peer["tokens_per_second"] if mine else float("nan")
            lines.append(
                f"| {peer['peer']} (compiled: {peer['compiled']}) | {peer['precision']} | "
                f"{peer['batch']} x {peer['length']} | {peer['seconds_per_step'] * 1e3:.1f} | "
                f"{peer['tokens_per_second']:,.0f} | "
                f"{mine['units_per_second'] if mine else float('nan'):,.0f} | {ratio:.2f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(tables(read_rows(sys.argv[1])), end="")
