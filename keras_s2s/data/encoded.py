"""An encoded parallel corpus: the training pairs as token ids, tokenized once, in a compact folder.

`keras-s2s encode` (or `parallel.encode_corpus`) learns the subword
vocabulary on a corpus and writes a folder that trains without learning or
tokenizing again, and that is small enough to carry to another machine (the
Debian gettext corpus: 48 MB of text, 12 MB encoded):

    encoded.json          what it is: the source corpus, pair counts, vocabulary, sha256 of train
    train.ids.xz          the training pairs' ids (LZMA-compressed .npz: flat uint16/int32 ids and
                          lengths per side), in the order `read_splits` gave the text (its seed
                          applied): a run reads the same batches as from the text
    valid.tsv, test.tsv   the held-out splits as text (validation and test score text)
    tokenizer.model       the vocabulary (tokenizer.source.model + tokenizer.target.model when
                          the vocabularies are separate; tokenizer.vocab when pretokenized)

`--data FOLDER` reads it like any split directory: the run takes its
tokenizer from the folder, so the card's `vocab_size`, `tokenization` and
`shared_vocabulary` are the folder's.

Example:
    >>> write_encoded_corpus(Path("corpus_ids"), train_ids, valid, test, tokenizer, "sentencepiece", "corpus/")
    >>> train, valid, test = read_encoded_splits("corpus_ids")   # train: (source ids, target ids) pairs
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import shutil
from pathlib import Path

import numpy as np

from keras_s2s.data.batches import flat_rows
from keras_s2s.files import staging_folder
from keras_s2s.text.corpus import CorpusError, read_parallel
from keras_s2s.text.tokenizer import (
    TOKENIZER_FILES,
    TokenizerPair,
    load_run_tokenizer,
    run_tokenizer_files,
    save_run_tokenizer,
)

MANIFEST = "encoded.json"
TRAIN_FILE = "train.ids.xz"
FORMAT = "keras-s2s encoded parallel corpus"
VERSION = 1


def is_encoded_corpus(source) -> bool:
    """Whether `source` names a folder written by `write_encoded_corpus`."""
    return isinstance(source, (str, Path)) and (Path(source) / MANIFEST).is_file()


# the data settings an encoded folder fixes (its tokenizer's): a run on it records the folder's
FOLDER_SETTINGS = ("tokenization", "shared_vocabulary", "vocab_size", "source_vocab_size")


def settings_of_folder(source) -> set[str]:
    """The data settings that come from `source` rather than from the card: `FOLDER_SETTINGS` for an
    encoded corpus, none otherwise."""
    return set(FOLDER_SETTINGS) if is_encoded_corpus(source) else set()


def _rows(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    ids, ends = flat.tolist(), np.cumsum(lengths).tolist()
    return [ids[end - length : end] for end, length in zip(ends, lengths.tolist())]


def _write_tsv(path: Path, pairs: list) -> None:
    bad = next(
        (i for i, pair in enumerate(pairs) if any("\t" in s or "\n" in s for s in pair)), None
    )
    if bad is not None:
        raise CorpusError(f"{path.name}: pair {bad + 1} holds a tab or a line break")
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")


def check_out_folder(out: Path) -> None:
    """A ValueError unless `out` is absent or an empty folder: an encoded corpus replaces nothing."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not empty; remove it or choose another --out")


def write_encoded_corpus(
    out: Path, train_ids: list, valid: list, test: list, tokenizer, tokenization: str, source
) -> dict:
    """Write the folder `out` (built beside it, then renamed: never half-written); its manifest.

    `train_ids`: (source ids, target ids) pairs, without BOS/EOS; `valid`, `test`: text pairs.
    """
    out = Path(out)
    check_out_folder(out)
    if not train_ids or not valid or not test:
        raise CorpusError(
            f"{source}: an encoded corpus needs training, validation and test pairs "
            f"(got {len(train_ids)}, {len(valid)}, {len(test)})"
        )
    largest = max(tokenizer.vocab_size, tokenizer.source_vocab_size)
    dtype = np.uint16 if largest <= np.iinfo(np.uint16).max + 1 else np.int32
    arrays = {}
    for side, rows in (
        ("source", [s for s, _ in train_ids]),
        ("target", [t for _, t in train_ids]),
    ):
        arrays[side], arrays[f"{side}_lengths"] = flat_rows(rows, dtype)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    packed = lzma.compress(buffer.getvalue(), preset=6)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_folder(out)
    tmp.mkdir()
    try:
        manifest = _write_folder(tmp, packed, arrays, valid, test, tokenizer, tokenization, source)
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def _write_folder(tmp: Path, packed, arrays, valid, test, tokenizer, tokenization, source) -> dict:
    (tmp / TRAIN_FILE).write_bytes(packed)
    _write_tsv(tmp / "valid.tsv", valid)
    _write_tsv(tmp / "test.tsv", test)
    save_run_tokenizer(tokenizer, tmp, tokenization)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "source": str(source),
        "pairs": {
            "train": int(arrays["source_lengths"].size),
            "valid": len(valid),
            "test": len(test),
        },
        "tokens": {"source": int(arrays["source"].size), "target": int(arrays["target"].size)},
        "tokenization": tokenization,
        "shared_vocabulary": not isinstance(tokenizer, TokenizerPair),
        "vocab_size": tokenizer.vocab_size,
        "source_vocab_size": tokenizer.source_vocab_size,
        # every file the folder holds (folders written before 2026-12-06 hash the first only)
        "sha256": {
            path.name: _sha256(path)
            for path in sorted(tmp.iterdir(), key=lambda path: path.name != TRAIN_FILE)
        },
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# what each field of encoded.json must be: (check, what it should hold)
SCHEMA = {
    "pairs": (
        lambda v: (
            isinstance(v, dict) and all(_is_count(v.get(k)) for k in ("train", "valid", "test"))
        ),
        "counts of train, valid and test pairs",
    ),
    "tokenization": (lambda v: v in TOKENIZER_FILES, f"one of {', '.join(TOKENIZER_FILES)}"),
    "shared_vocabulary": (lambda v: isinstance(v, bool), "true or false"),
    "vocab_size": (lambda v: _is_count(v) and v > 0, "a count of pieces"),
    "source_vocab_size": (lambda v: _is_count(v) and v > 0, "a count of pieces"),
    "sha256": (
        lambda v: (
            isinstance(v, dict)
            and TRAIN_FILE in v
            and all(isinstance(h, str) and len(h) == 64 for h in v.values())
        ),
        f"the sha256 of {TRAIN_FILE} (and of the other files)",
    ),
}


def verify_file(folder: Path, name: str, manifest: dict) -> bytes:
    """The bytes of `folder / name`, refused by name when missing or when their sha256 is not the
    manifest's (a folder written before every file was hashed: only the files it hashed are checked)."""
    path = Path(folder) / name
    if not path.is_file():
        raise CorpusError(f"{path}: file not found (the encoded corpus is incomplete)")
    data = path.read_bytes()
    expected = manifest["sha256"].get(name)
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise CorpusError(
            f"{path}: its sha256 differs from the one {MANIFEST} records (a damaged, partial or "
            "foreign file); copy or encode the corpus again"
        )
    return data


def read_manifest(folder) -> dict:
    """The folder's `encoded.json`, checked: a clear error for another format or a newer version,
    or a field that is missing or holds the wrong kind of value."""
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CorpusError(f"{path}: not a readable manifest ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CorpusError(f"{path}: not a keras-s2s encoded corpus manifest")
    if manifest.get("version") != VERSION:
        raise CorpusError(
            f"{path}: format version {manifest.get('version')}; this keras-s2s reads version "
            f"{VERSION} (encode the corpus again with `keras-s2s encode`)"
        )
    for field, (valid, wanted) in SCHEMA.items():
        if not valid(manifest.get(field)):
            raise CorpusError(
                f"{path}: its field {field!r} is {manifest.get(field, 'missing')!r}; it must hold "
                f"{wanted} (a damaged manifest: encode the corpus again)"
            )
    return manifest


def read_encoded_tokenizer(folder, manifest: dict):
    """The corpus's tokenizer (a `TokenizerPair` when its vocabularies are separate); `manifest` is
    the folder's (`read_manifest`)."""
    kind, shared = manifest["tokenization"], manifest["shared_vocabulary"]
    files = list(run_tokenizer_files(Path(folder), kind, shared).values())
    for path in files:
        verify_file(Path(folder), path.name, manifest)
    try:
        return load_run_tokenizer(folder, kind, shared)
    except (RuntimeError, OSError, ValueError) as error:  # SentencePiece: RuntimeError
        raise CorpusError(
            f"{files[0]}: not a readable {kind} vocabulary ({str(error).splitlines()[0][:120]})"
        ) from None


def read_encoded_splits(folder):
    """(train, valid, test): train as (source ids, target ids) pairs in the stored order, valid and
    test as (source, target) text pairs."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    path = folder / TRAIN_FILE
    packed = verify_file(folder, TRAIN_FILE, manifest)
    with np.load(io.BytesIO(lzma.decompress(packed))) as arrays:
        sources = _rows(arrays["source"], arrays["source_lengths"])
        targets = _rows(arrays["target"], arrays["target_lengths"])
    if len(sources) != manifest["pairs"]["train"]:
        raise CorpusError(
            f"{path}: {len(sources)} pairs, the manifest says {manifest['pairs']['train']}"
        )
    held_out = []
    for split in ("valid", "test"):
        tsv = folder / f"{split}.tsv"
        verify_file(folder, tsv.name, manifest)
        pairs = list(zip(*read_parallel([tsv])))
        if len(pairs) != manifest["pairs"][split]:
            raise CorpusError(
                f"{tsv}: {len(pairs)} pairs, {MANIFEST} says {manifest['pairs'][split]} (a partial "
                "copy?); copy or encode the corpus again"
            )
        held_out.append(pairs)
    return list(zip(sources, targets)), held_out[0], held_out[1]
