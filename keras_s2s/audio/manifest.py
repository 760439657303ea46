"""Speech manifests: CSV or TSV files listing audio files and their transcripts.

The header names the columns. The audio column is one of `wav_filename`
(OpenSeq2Seq, DeepSpeech), `audio_filepath` (NeMo), `path`, `audio`,
`file`; the transcript column one of `transcript`, `text`, `sentence`.
Other columns (`wav_filesize`, `duration`, ...) are ignored. Relative
paths are relative to the manifest's folder. `read_librispeech` reads the
LibriSpeech distribution's own layout (`*.trans.txt` beside `.flac` files), `read_ljspeech`
the LJSpeech layout (`metadata.csv` with `ID|text|normalized text`, `wavs/ID.wav`).

Example:
    >>> entries = read_manifest("data/train.csv")
    >>> entries[0].path, entries[0].transcript
"""

from __future__ import annotations

import csv
import dataclasses
import os
from pathlib import Path

from keras_s2s.files import atomic_write
from keras_s2s.text.corpus import CorpusError, read_lines

AUDIO_COLUMNS = ("wav_filename", "audio_filepath", "path", "audio", "file")
TEXT_COLUMNS = ("transcript", "text", "sentence")


@dataclasses.dataclass(frozen=True)
class Utterance:
    """One manifest line: an audio file and what is said in it."""

    path: Path
    transcript: str
    line: int


def _column(header: list[str], names: tuple, manifest: Path, what: str) -> int:
    lowered = [h.strip().lower() for h in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    raise CorpusError(
        f"{manifest}, line 1: no {what} column; the header has {', '.join(header)}, expected one "
        f"of {', '.join(names)}"
    )


def read_manifest(path: str | Path, check_files: bool = True) -> list[Utterance]:
    """The utterances of a CSV/TSV manifest; names file and line of every problem."""
    path = Path(path)
    lines = read_lines(path)
    if not lines:
        raise CorpusError(f"{path}: the manifest is empty")
    delimiter = "\t" if "\t" in lines[0] else ","
    rows = list(csv.reader(lines, delimiter=delimiter))
    audio_col = _column(rows[0], AUDIO_COLUMNS, path, "audio path")
    text_col = _column(rows[0], TEXT_COLUMNS, path, "transcript")
    utterances, missing = [], []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(audio_col, text_col):
            raise CorpusError(
                f"{path}, line {number}: expected {len(rows[0])} fields, got {len(row)}"
            )
        audio = Path(row[audio_col].strip())
        audio = audio if audio.is_absolute() else path.parent / audio
        if check_files and not audio.is_file():
            missing.append(f"line {number}: {audio}")
        utterances.append(Utterance(audio, row[text_col].strip(), number))
    _check_found(path, missing)
    if not utterances:
        raise CorpusError(f"{path}: the manifest lists no utterances")
    return utterances


def read_librispeech(directory: str | Path) -> list[Utterance]:
    """Utterances of a LibriSpeech-layout folder: `SPEAKER/CHAPTER/SPEAKER-CHAPTER.trans.txt` files with
    `UTTERANCE-ID TEXT` lines, next to `UTTERANCE-ID.flac` (or `.wav`) files."""
    directory = Path(directory)
    utterances, missing = [], []
    for transcripts in sorted(directory.rglob("*.trans.txt")):
        for number, line in enumerate(read_lines(transcripts), start=1):
            if not line.strip():
                continue
            key, _, text = line.partition(" ")
            audio = next(
                (
                    transcripts.parent / f"{key}{ext}"
                    for ext in (".flac", ".wav")
                    if (transcripts.parent / f"{key}{ext}").is_file()
                ),
                None,
            )
            if audio is None:
                missing.append(f"{transcripts}, line {number}: {key}.flac")
                continue
            utterances.append(Utterance(audio, text.strip(), number))
    _check_found(directory, missing)
    if not utterances:
        raise CorpusError(f"{directory}: no *.trans.txt transcripts found (LibriSpeech layout)")
    return utterances


def read_ljspeech(directory: str | Path) -> list[Utterance]:
    """Utterances of an LJSpeech-layout folder: `metadata.csv` lines `ID|text|normalized text` (the
    normalized text is used when present) next to `wavs/ID.wav`."""
    directory = Path(directory)
    metadata = directory / "metadata.csv"
    utterances, missing = [], []
    for number, line in enumerate(read_lines(metadata), start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 2:
            raise CorpusError(
                f"{metadata}, line {number}: expected ID|text|normalized text, got {line[:60]!r}"
            )
        audio = directory / "wavs" / f"{fields[0].strip()}.wav"
        if not audio.is_file():
            missing.append(f"line {number}: {audio}")
        text = fields[2] if len(fields) > 2 and fields[2].strip() else fields[1]
        utterances.append(Utterance(audio, text.strip(), number))
    _check_found(metadata, missing)
    if not utterances:
        raise CorpusError(f"{metadata}: lists no utterances")
    return utterances


def _check_found(where: Path, missing: list[str]) -> None:
    """Raise one error naming the first few audio files that are not there."""
    if missing:
        shown = "; ".join(missing[:3]) + (
            f"; and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise CorpusError(f"{where}: {len(missing)} audio file(s) not found ({shown})")


def write_manifest(path: str | Path, utterances: list[tuple[str, float | None, str]]) -> None:
    """Write an OpenSeq2Seq-style CSV (wav_filename, duration, transcript); paths relative to `path`.

    A duration of None is left blank (readers measure the audio)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["wav_filename", "duration", "transcript"])
        for audio, duration, transcript in utterances:
            writer.writerow([audio, "" if duration is None else f"{duration:.3f}", transcript])


def combine_corpora(
    folder: str | Path, corpus: str | Path, extra_training: list[str | Path]
) -> Path:
    """Manifests in `folder` that train on more speech against the same yardstick; return `folder`.

    `train.csv` lists the training utterances of `corpus` and of every folder in
    `extra_training`; `valid.csv` and `test.csv` are `corpus`'s alone. Only the
    manifests are written: their paths point into the other folders. A
    held-out transcript that is also a training one is an error (it would leak).

    Example:
        >>> combine_corpora("data/combined", "data/english", ["data/english-more"])
    """
    folder, corpus = Path(folder), Path(corpus)
    splits = {split: read_manifest(corpus / f"{split}.csv") for split in ("valid", "test")}
    splits["train"] = [
        u
        for source in (corpus, *map(Path, extra_training))
        for u in read_manifest(source / "train.csv")
    ]
    held_out = {u.transcript: u for split in ("valid", "test") for u in splits[split]}
    leaks = [u for u in splits["train"] if u.transcript in held_out]
    if leaks:
        raise CorpusError(
            f"{len(leaks)} training utterance(s) say what a held-out one of {corpus} says, e.g. "
            f"{leaks[0].path} and {held_out[leaks[0].transcript].path}: {leaks[0].transcript!r}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for split, utterances in splits.items():
        rows = [(os.path.relpath(u.path, folder), None, u.transcript) for u in utterances]
        atomic_write(folder / f"{split}.csv", lambda path, rows=rows: write_manifest(path, rows))
    return folder
