"""Reading parallel corpora: two aligned text files, or one TSV.

Every problem names the file and the line: mismatched line counts, empty
corpora, undecodable bytes, TSV lines without exactly two fields, and more
than 1% of pairs with one blank side (fewer are skipped, counted and logged).

Example:
    >>> sources, targets = read_parallel(["train.en", "train.de"])
"""

from __future__ import annotations

import logging
from pathlib import Path

from keras_s2s.files import read_text

log = logging.getLogger("keras_s2s")
# more pairs with one blank side than this means the files are misaligned
MAX_ONE_SIDED_FRACTION = 0.01


class CorpusError(ValueError):
    """A corpus file is missing, malformed or does not match its pair."""


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file, without line endings (or a byte order mark)."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: file not found")
    try:
        text = read_text(path)  # a byte order mark dropped
    except ValueError as error:
        raise CorpusError(str(error)) from None
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _check_not_empty(pairs: list, name: str) -> None:
    if not pairs:
        raise CorpusError(f"{name}: corpus is empty")


def _drop_blank(rows: list[tuple[int, str, str]], name: str) -> tuple[list[str], list[str]]:
    """Drop pairs with a blank side: blank on both sides silently; one-sided blanks are counted and
    logged, and are an error when there are too many of them (a sign of misaligned files)."""
    one_sided = [number for number, s, t in rows if bool(s) != bool(t)]
    if one_sided:
        share = len(one_sided) / len(rows)
        first = ", ".join(map(str, one_sided[:5]))
        if share > MAX_ONE_SIDED_FRACTION:
            raise CorpusError(
                f"{name}: {len(one_sided)} of {len(rows)} lines ({share:.1%}) have text on one side "
                f"only (lines {first}...): are the two sides aligned?"
            )
        log.warning(
            "%s: skipped %d pairs with an empty side (lines %s)", name, len(one_sided), first
        )
    kept = [(s, t) for _, s, t in rows if s and t]
    _check_not_empty(kept, name)
    return [s for s, _ in kept], [t for _, t in kept]


def read_tsv(path: str | Path) -> tuple[list[str], list[str]]:
    """Source and target columns of a two-column TSV file."""
    rows = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusError(
                f"{path}, line {number}: expected 2 tab-separated fields (source, target), got {len(fields)}"
            )
        rows.append((number, fields[0].strip(), fields[1].strip()))
    return _drop_blank(rows, str(path))


def read_parallel(paths: list[str | Path]) -> tuple[list[str], list[str]]:
    """Read one TSV or two aligned files; drops pairs where either side is blank."""
    if len(paths) == 1:
        return read_tsv(paths[0])
    if len(paths) != 2:
        raise CorpusError(f"expected one TSV or two aligned files, got {len(paths)} paths: {paths}")
    source_lines, target_lines = read_lines(paths[0]), read_lines(paths[1])
    if len(source_lines) != len(target_lines):
        raise CorpusError(
            f"{paths[0]} has {len(source_lines)} lines but {paths[1]} has {len(target_lines)}: "
            "aligned files need one sentence per line each"
        )
    rows = [
        (n, s.strip(), t.strip())
        for n, (s, t) in enumerate(zip(source_lines, target_lines), start=1)
    ]
    return _drop_blank(rows, f"{paths[0]} + {paths[1]}")
