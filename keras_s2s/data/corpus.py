"""Reading parallel corpora: two aligned text files, or one TSV.

Every problem names the file and the line: mismatched line counts, empty
corpora, undecodable bytes, TSV lines without exactly two fields.

Example:
    >>> sources, targets = read_parallel(["train.en", "train.de"])
"""

from __future__ import annotations

from pathlib import Path


class CorpusError(ValueError):
    """A corpus file is missing, malformed or does not match its pair."""


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file, without line endings."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: file not found")
    data = path.read_bytes()
    lines = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as exc:
            raise CorpusError(
                f"{path}, line {number}: bytes that are not UTF-8 at column {exc.start + 1} "
                f"({raw[exc.start:exc.start + 4]!r})"
            ) from None
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _check_not_empty(pairs: list, name: str) -> None:
    if not pairs:
        raise CorpusError(f"{name}: corpus is empty")


def read_tsv(path: str | Path) -> tuple[list[str], list[str]]:
    """Source and target columns of a two-column TSV file."""
    sources, targets = [], []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusError(
                f"{path}, line {number}: expected 2 tab-separated fields (source, target), got {len(fields)}"
            )
        sources.append(fields[0].strip())
        targets.append(fields[1].strip())
    _check_not_empty(sources, str(path))
    return sources, targets


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
    pairs = [(s.strip(), t.strip()) for s, t in zip(source_lines, target_lines) if s.strip() and t.strip()]
    _check_not_empty(pairs, f"{paths[0]} + {paths[1]}")
    return [s for s, _ in pairs], [t for _, t in pairs]
