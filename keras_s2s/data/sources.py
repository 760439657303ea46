"""Where parallel text comes from: a directory of splits, or a TensorFlow Datasets set.

A split directory holds `train`, `valid` (or `dev`) and `test` splits, each
either a TSV (`train.tsv`, source then target) or two aligned files
(`train.en` + `train.de`, with `direction: en-de` in the card's data part
naming the source and target sides). Missing valid/test splits are cut
from the training split.

`tfds:NAME/CONFIG` reads a TensorFlow Datasets translation set (needs the
`tfds` extra: `pip install "keras-s2s[tfds]"`); `direction` picks the
languages, else the dataset's supervised keys.

Example:
    >>> train, valid, test = read_split_dir("corpus/", direction="en-de")
    >>> train, valid, test = read_tfds("tfds:wmt14_translate/de-en", direction="en-de")
"""

from __future__ import annotations

import difflib
from pathlib import Path

from keras_s2s.text.corpus import CorpusError, read_parallel

SPLIT_NAMES = {"train": ("train",), "valid": ("valid", "dev", "validation"), "test": ("test",)}
TFDS_SPLITS = {"train": ("train",), "valid": ("validation", "valid", "dev"), "test": ("test",)}


def _languages(direction: str | None, where: str) -> tuple[str, str] | None:
    if not direction:
        return None
    parts = direction.split("-")
    if len(parts) != 2 or not all(parts):
        raise CorpusError(
            f"{where}: direction must look like 'en-de' (source-target), got {direction!r}"
        )
    return parts[0], parts[1]


def _split_files(directory: Path, name: str, languages) -> list[Path] | None:
    """The files of one split (a TSV, or source + target), or None if absent."""
    for stem in SPLIT_NAMES[name]:
        tsv = directory / f"{stem}.tsv"
        if tsv.is_file():
            return [tsv]
        sides = sorted(p for p in directory.glob(f"{stem}.*") if p.suffix != ".tsv")
        if not sides:
            continue
        if languages is None:
            suffixes = ", ".join(p.suffix[1:] for p in sides)
            raise CorpusError(
                f"{directory}: split '{stem}' has files for {suffixes}; say which side is the "
                f"source with data.direction (e.g. --set direction={sides[0].suffix[1:]}-"
                f"{sides[-1].suffix[1:]})"
            )
        files = [directory / f"{stem}.{lang}" for lang in languages]
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise CorpusError(f"{directory}: split '{stem}' lacks {', '.join(missing)}")
        return files
    return None


def is_split_dir(source: str) -> bool:
    return Path(source).is_dir()


def read_split_dir(directory: str | Path, direction: str | None = None):
    """(train, valid, test) lists of (source, target) pairs from a directory of splits."""
    directory = Path(directory)
    languages = _languages(direction, str(directory))
    splits = {}
    for name in SPLIT_NAMES:
        files = _split_files(directory, name, languages)
        if files is None:
            if name == "train":
                raise CorpusError(
                    f"{directory}: no training split; expected train.tsv, or train.SRC and "
                    "train.TGT (with valid/dev and test splits beside them)"
                )
            splits[name] = []
            continue
        splits[name] = list(zip(*read_parallel(files)))
    return splits["train"], splits["valid"], splits["test"]


def read_tfds(
    source: str, direction: str | None = None, data_dir: str | None = None, download: bool = True
):
    """(train, valid, test) pairs of a TensorFlow Datasets translation set `tfds:NAME[/CONFIG]`."""
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise CorpusError(
            f'{source}: TensorFlow Datasets is not installed; pip install "keras-s2s[tfds]"'
        ) from None
    name = source[len("tfds:") :]
    dataset_name = name.split("/")[0].split(":")[0]
    known = tfds.list_builders()
    if dataset_name not in known:
        close = difflib.get_close_matches(dataset_name, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise CorpusError(f"{source}: unknown TensorFlow Datasets name '{dataset_name}'.{hint}")
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except (ValueError, KeyError) as exc:  # unknown config and the like
        raise CorpusError(f"{source}: {exc}") from None
    keys = builder.info.supervised_keys
    languages = _languages(direction, source) or (tuple(keys) if keys else None)
    if languages is None:
        raise CorpusError(
            f"{source}: the dataset has no supervised keys; set data.direction, e.g. en-de"
        )
    available = list(builder.info.splits.keys()) or None
    if download:
        try:
            builder.download_and_prepare()
        except (
            Exception
        ) as exc:  # network, disk or checksum problems, reported by TFDS in its own types
            raise CorpusError(
                f"{source}: could not download or prepare the dataset ({type(exc).__name__}: "
                f"{str(exc)[:300]}); prepare it once with network access, or set "
                "TFDS_DATA_DIR to where it is"
            ) from None
    splits = {}
    for name, candidates in TFDS_SPLITS.items():
        split = next((c for c in candidates if available is None or c in available), None)
        if split is None:
            splits[name] = []
            continue
        rows = tfds.as_numpy(builder.as_dataset(split=split))
        splits[name] = [
            (row[languages[0]].decode("utf-8").strip(), row[languages[1]].decode("utf-8").strip())
            for row in rows
        ]
        splits[name] = [(s, t) for s, t in splits[name] if s and t]
    if not splits["train"]:
        raise CorpusError(f"{source}: the training split is empty")
    return splits["train"], splits["valid"], splits["test"]
