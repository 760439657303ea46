"""Long recordings in bounded memory: read piece by piece, cut at pauses.

`stream_audio` reads a file block by block (soundfile), mixes it to mono and
resamples it with a streaming soxr resampler, so no more than one block is
in memory; `pieces_at_pauses` cuts such a stream into pieces of at most
`max_seconds`, each cut at the quietest stretch (lowest energy over 100 ms)
of its second half, where a speaker pauses between words or sentences. A
recognizer transcribes the pieces in turn and joins their text
(`SpeechToText.transcribe`), so an hour of audio takes the memory of a few
pieces.

Example:
    >>> for piece in pieces_at_pauses(stream_audio("talk.flac", 16000), 16000, max_seconds=20):
    ...     print(len(piece) / 16000)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from keras_s2s.audio.io import AudioError, _soundfile, check_finite, require_audio_extra

BLOCK_SECONDS = 30.0
QUIET_WINDOW_SECONDS = 0.1
SILENCE = 1e-4  # peak amplitude (-80 dBFS) below which a piece holds nothing to transcribe


def audible(samples: np.ndarray) -> bool:
    """Whether `samples` rise above digital silence (a recognizer hears noise in normalized zeros)."""
    return len(samples) > 0 and float(np.abs(samples).max()) > SILENCE


def audio_seconds(path: str | Path) -> float:
    """The length of an audio file in seconds, from its header; an AudioError naming the file when
    it cannot be read."""
    if not Path(path).is_file():
        raise AudioError(f"{path}: audio file not found")
    try:
        info = _soundfile().info(str(path))
    except Exception as exc:  # libsndfile reports format problems in its own error type
        raise AudioError(f"{path}: not a readable audio file ({exc})") from None
    return info.frames / info.samplerate


def stream_audio(path: str | Path, sample_rate: int = 16000) -> Iterator[np.ndarray]:
    """Float32 mono blocks of an audio file at `sample_rate`, read and resampled a block at a time."""
    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file not found")
    try:
        sound = _soundfile().SoundFile(str(path))
    except Exception as exc:
        raise AudioError(f"{path}: not a readable audio file ({exc})") from None
    with sound:
        resampler = None
        if sound.samplerate != sample_rate:
            soxr = require_audio_extra("soxr")
            resampler = soxr.ResampleStream(sound.samplerate, sample_rate, 1, dtype="float32")
        block = max(1, int(BLOCK_SECONDS * sound.samplerate))
        for index, samples in enumerate(
            sound.blocks(blocksize=block, dtype="float32", always_2d=True)
        ):
            mono = samples.mean(axis=1)
            check_finite(mono, path, index * block / sound.samplerate, sound.samplerate)
            yield resampler.resample_chunk(mono, last=False) if resampler else mono
        if resampler:
            yield resampler.resample_chunk(np.zeros(0, np.float32), last=True)


def _quietest(samples: np.ndarray, window: int) -> int:
    """The centre of the `window`-sample stretch of `samples` with the least energy."""
    if len(samples) <= window:
        return len(samples) // 2
    energy = np.convolve(samples.astype(np.float64) ** 2, np.ones(window), mode="valid")
    return int(np.argmin(energy)) + window // 2


def pieces_at_pauses(
    blocks: Iterable[np.ndarray], sample_rate: int, max_seconds: float = 20.0
) -> Iterator[np.ndarray]:
    """Pieces of at most `max_seconds` of a stream of sample blocks, each cut at the quietest
    stretch of its second half (the last piece: whatever is left)."""
    if not max_seconds > 2 * QUIET_WINDOW_SECONDS:
        raise ValueError(
            f"max_seconds must be more than {2 * QUIET_WINDOW_SECONDS}, got {max_seconds}"
        )
    longest, window = int(max_seconds * sample_rate), int(QUIET_WINDOW_SECONDS * sample_rate)
    buffer = np.zeros(0, np.float32)
    for block in blocks:
        buffer = np.concatenate([buffer, block])
        while len(buffer) > longest:
            half = longest // 2
            cut = half + _quietest(buffer[half:longest], window)
            yield buffer[:cut]
            buffer = buffer[cut:]
    if len(buffer):
        yield buffer
