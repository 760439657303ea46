"""Whether one training step at a run's largest batch fits in memory: checked before training starts.

A translation card's `max_length` (fitted to the corpus, or given) and `batch_size` set the
largest batch a step sees, [rows, max_length] in the longest length bucket. The model estimates
what a step on it takes (`Seq2SeqLM.training_step_bytes`, float32: mixed precision needs less);
a run that would not fit is refused with the largest `max_length` and `batch_size` that would,
instead of an out-of-memory crash hours into training.

Example:
    >>> check_step_memory(model, (96, 1024), "transformer_demo")
    ValueError: transformer_demo: one training step on the longest batches (96 x 1024 tokens)
    needs about 61.2 GiB of memory, and 19.8 GiB are available here; ...
"""

from __future__ import annotations

import logging
from pathlib import Path

from keras_s2s.distribution.runtime import Runtime

log = logging.getLogger("keras_s2s")
GIB = 2**30


def available_memory() -> tuple[int, str] | None:
    """(bytes, "here") free for training on this machine: its available memory within its cgroup's
    limit; None where it cannot be read."""
    free = _meminfo_available()
    if free is None:
        return None
    limit = _cgroup_room()
    return (min(free, limit) if limit is not None else free), "here"


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room() -> int | None:
    """What a cgroup v2 memory limit leaves (None without one)."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text())
    except (OSError, ValueError):
        return None


def check_step_memory(
    model, longest_batch: tuple[int, int] | None, name: str, runtime: Runtime | None = None
) -> None:
    """Refuse a run whose largest training step would not fit in the memory available (ValueError);
    log the estimate otherwise. Models without an estimate, and machines whose memory cannot be
    read, pass. `runtime`: on an accelerator, each of its replicas takes its share of the rows in
    its own memory."""
    estimate = getattr(model, "training_step_bytes", None)
    accelerator = runtime.accelerator_memory() if runtime is not None else None
    room = accelerator or available_memory()
    if longest_batch is None or estimate is None or room is None:
        return
    (rows, length), (free, where) = longest_batch, room
    if accelerator:
        rows = max(1, rows // runtime.replicas)
    needed = estimate(rows, length)
    if needed is None:
        return
    log.info(
        "one training step on the longest batches (%d x %d tokens) takes about %.1f GiB; %.1f GiB "
        "are available %s",
        rows,
        length,
        needed / GIB,
        free / GIB,
        where,
    )
    if needed <= free:
        return
    lengths = [n for n in range(length - 8, 7, -8) if estimate(rows, n) <= free]
    batches = [n for n in range(rows - 1, 0, -1) if estimate(n, length) <= free]
    fixes = [f"--set max_length={lengths[0]}" if lengths else None,
             f"--set batch_size={batches[0]}" if batches else None]  # fmt: skip
    fixes = " or ".join(fix for fix in fixes if fix) or "a smaller model"
    raise ValueError(
        f"{name}: one training step on the longest batches ({rows} x {length} tokens) needs about "
        f"{needed / GIB:.1f} GiB of memory, and {free / GIB:.1f} GiB are available {where}: lower "
        f"data.max_length or data.batch_size ({fixes} would fit), or free memory"
    )
