"""Writing run files so that readers never see half a file.

Example:
    >>> atomic_write(Path("runs/x/eval.json"), lambda p: p.write_text("{}"))
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def atomic_write(path: Path, write) -> None:
    """Call `write(tmp_path)`, then rename onto `path`: readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}")  # keeps suffixes such as .weights.h5 that writers check
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_results(out_dir: Path, name: str, lines: list[str], result: dict, beam_width: int = 1) -> None:
    """`name.txt` and `eval.json` for greedy decoding, `name-beamK.txt` and `eval-beamK.json` for beam K."""
    suffix = "" if beam_width == 1 else f"-beam{beam_width}"
    atomic_write(Path(out_dir) / f"{name}{suffix}.txt",
                 lambda p: p.write_text("\n".join(lines) + "\n", encoding="utf-8"))
    atomic_write(Path(out_dir) / f"eval{suffix}.json",
                 lambda p: p.write_text(json.dumps(result, indent=2), encoding="utf-8"))
