"""Reading audio files: one module for speech recognition and speech synthesis.

`read_audio` returns float32 mono samples in [-1, 1] at the requested rate,
resampling (librosa, soxr) when the file's rate differs. Every problem is an
`AudioError` that names the file: missing, unreadable or not audio, empty,
with samples that are not numbers (NaN or infinite: a damaged float WAV), or
silent throughout.

Example:
    >>> samples = read_audio("clip.wav", sample_rate=16000)
    >>> write_wav("copy.wav", samples, 16000)
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger("keras_s2s")


class AudioError(ValueError):
    """An audio file is missing, unreadable, empty or silent."""


def require_audio_extra(module: str):
    """Import `module` of the `audio` extra, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise AudioError(
            f'speech needs {module}, from the audio extra: pip install "keras-s2s[audio]"'
        ) from None


def _soundfile():
    return require_audio_extra("soundfile")


def resample(samples: np.ndarray, rate: int, target_rate: int) -> np.ndarray:
    """Resample float32 samples from `rate` to `target_rate` (librosa's soxr_hq)."""
    if rate == target_rate:
        return samples.astype(np.float32, copy=False)
    librosa = require_audio_extra("librosa")

    return librosa.resample(samples.astype(np.float32), orig_sr=rate, target_sr=target_rate).astype(
        np.float32
    )


def check_finite(
    samples: np.ndarray, path: Path, offset_seconds: float = 0.0, rate: int = 1
) -> None:
    """Refuse samples that are NaN or infinite (a float WAV can hold them; the features would be
    NaN and the transcript empty): an `AudioError` naming the file and where the first one is."""
    bad = ~np.isfinite(samples)
    if bad.any():
        first = offset_seconds + int(np.argmax(bad)) / rate
        raise AudioError(
            f"{path}: {int(bad.sum()):,} sample(s) are not numbers (NaN or infinite), the first at "
            f"{first:.2f} s: the file is damaged"
        )


def read_audio(path: str | Path, sample_rate: int = 16000, repair: bool = False) -> np.ndarray:
    """Float32 mono samples of an audio file, resampled to `sample_rate`. `repair` (training data,
    where one damaged file must not stop hours of training): NaN or infinite samples become 0, with
    a warning naming the file, instead of an `AudioError`."""
    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file not found")
    soundfile = _soundfile()
    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # libsndfile reports format problems in its own error type
        raise AudioError(f"{path}: not a readable audio file ({exc})") from None
    if samples.shape[0] == 0:
        raise AudioError(f"{path}: the file holds no audio samples")
    samples = samples.mean(axis=1)  # mono
    try:
        check_finite(samples, path, rate=rate)
    except AudioError as error:
        if not repair:
            raise
        log.warning("%s; its damaged samples are read as silence", error)
        samples = np.where(np.isfinite(samples), samples, np.float32(0.0))
    if not np.any(samples):
        raise AudioError(f"{path}: the audio is silent throughout")
    return resample(samples, rate, sample_rate)


def write_wav(path: str | Path, samples: np.ndarray, sample_rate: int) -> None:
    """Write float samples in [-1, 1] as a 16-bit PCM WAV file."""
    _soundfile().write(
        str(path), np.clip(samples, -1.0, 1.0), sample_rate, subtype="PCM_16", format="WAV"
    )
