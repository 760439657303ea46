"""Offline speech synthesis with eSpeak NG, from the pip package `espeakng-loader`.

The package ships libespeak-ng and its voice data; we call the C API through
ctypes in synchronous mode (about 2-3 ms per short sentence on one core).
One library instance serves the whole process.

Example:
    >>> samples, rate = synthesize("the red dog runs", voice="en-us+f2", words_per_minute=160, pitch=60)
    >>> voices, variants = english_voices(), voice_variants()   # en, en-US, ..., and f1, m3, klatt, ...
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

AUDIO_OUTPUT_SYNCHRONOUS = 2
RATE, VOLUME, PITCH, PITCH_RANGE = 1, 2, 3, 4
_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class SpeechSynthesisError(ValueError):
    """eSpeak NG is missing or refused a voice or a text."""


class _Espeak:
    def __init__(self):
        espeakng_loader = _loader()
        self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self.sample_rate = self.lib.espeak_Initialize(
            AUDIO_OUTPUT_SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(), 0
        )
        if self.sample_rate <= 0:
            raise SpeechSynthesisError(f"eSpeak NG failed to initialize (code {self.sample_rate})")
        self.chunks: list[np.ndarray] = []
        self.callback = _CALLBACK(self._collect)  # kept alive as long as the library may call it
        self.lib.espeak_SetSynthCallback(self.callback)
        self.lock = threading.Lock()

    def _collect(self, wav, count, events):
        if count > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    def synthesize(
        self, text: str, voice: str, words_per_minute: int, pitch: int, pitch_range: int | None
    ) -> np.ndarray:
        with self.lock:
            if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise SpeechSynthesisError(f"eSpeak NG has no voice {voice!r}")
            self.lib.espeak_SetParameter(RATE, int(words_per_minute), 0)
            self.lib.espeak_SetParameter(PITCH, int(pitch), 0)
            if pitch_range is not None:  # else the voice's own
                self.lib.espeak_SetParameter(PITCH_RANGE, int(pitch_range), 0)
            self.chunks = []
            data = text.encode("utf-8")
            self.lib.espeak_Synth(data, len(data) + 1, 0, 0, 0, 0, None, None)
            self.lib.espeak_Synchronize()
            audio = np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int16)
        if not audio.size:
            raise SpeechSynthesisError(f"eSpeak NG produced no audio for {text!r}")
        return audio


_engine: _Espeak | None = None


def wav_of_command(command: list[str], wav, error: type, voice: str, text: str, stdin=None):
    """(float32 samples, rate) of the WAV file `command` writes at `wav` (bytes on `stdin` if given);
    `error` naming the `voice` and the `text` when the command fails or writes no audio."""
    import subprocess

    import soundfile

    result = subprocess.run(command, input=stdin, capture_output=True, check=False)
    if result.returncode != 0 or not wav.is_file() or wav.stat().st_size <= 44:
        stderr = result.stderr.decode(errors="replace").strip()[:200]
        raise error(f"{voice} produced no audio for {text!r} ({stderr})")
    return soundfile.read(str(wav), dtype="float32")


def synthesize(
    text: str,
    voice: str = "en-us",
    words_per_minute: int = 170,
    pitch: int = 50,
    pitch_range: int | None = None,
):
    """Float32 samples in [-1, 1] and their sample rate (22,050 Hz) for `text`.

    Args:
        voice: str. An eSpeak NG voice, optionally with a variant: `en-us`, `en`, `en-us+f2`, `en+m3`.
        words_per_minute: int. Speaking rate (80-450).
        pitch: int. Base pitch, 0-100.
        pitch_range: int | None. Intonation range, 0 (monotone) to 100; None keeps the voice's.
    """
    global _engine
    if _engine is None:
        _engine = _Espeak()
    samples = _engine.synthesize(text, voice, words_per_minute, pitch, pitch_range)
    return samples.astype(np.float32) / 32768.0, _engine.sample_rate


def _loader():
    """The `espeakng_loader` module (libespeak-ng and its data), or how to install it."""
    try:
        import espeakng_loader
    except ImportError:
        raise SpeechSynthesisError(
            'speech synthesis needs eSpeak NG: pip install "keras-s2s[audio]" '
            "(it brings espeakng-loader)"
        ) from None
    return espeakng_loader


def _data_path():
    from pathlib import Path

    return Path(_loader().get_data_path())


def english_voices() -> list[str]:
    """Every English voice of the installed eSpeak NG (`en`, `en-029`, `en-GB-scotland`, `en-US`, ...)."""
    return sorted(
        p.name for p in (_data_path() / "lang" / "gmw").iterdir() if p.name.startswith("en")
    )


def voice_variants() -> list[str]:
    """Every voice variant of the installed eSpeak NG (`f1`, `m3`, `klatt`, `whisper`, ...): the part
    after `+` in a voice name such as `en-US+f2`."""
    return sorted(p.name for p in (_data_path() / "voices" / "!v").iterdir() if p.is_file())


MBROLA_DATABASES = "/usr/share/mbrola"  # where Debian's mbrola-* packages put their diphones


def mbrola_voices() -> list[str]:
    """The English MBROLA voices eSpeak NG offers here (`mb-us1`, `mb-en1`, `mb-de1-en`, ...): those
    whose diphone database is installed. They need Debian's `espeak-ng` and `mbrola` packages, and a
    `mbrola-*` package per voice (contrib and non-free: the diphones are recordings of real people);
    none installed gives an empty list."""
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("espeak-ng") is None or shutil.which("mbrola") is None:
        return []
    listing = subprocess.run(
        ["espeak-ng", "--voices=mb"], capture_output=True, text=True, check=False
    ).stdout
    voices = []
    for line in listing.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 5 and fields[1].startswith("en") and fields[4].startswith("mb/"):
            name = fields[4][len("mb/") :]
            database = name[len("mb-") :].split("-")[0]  # mb-de1-en -> de1
            if Path(MBROLA_DATABASES, database).is_dir():
                voices.append(name)
    return sorted(voices)


def synthesize_mbrola(text: str, voice: str, words_per_minute: int = 170, pitch: int = 50):
    """Float32 samples and their rate for `text` spoken by an MBROLA voice of Debian's `espeak-ng`
    (its command, one process per call: the pip library carries no MBROLA voice definitions).

    Example:
        >>> samples, rate = synthesize_mbrola("the red dog runs", "mb-us2", 160, 40)
    """
    import io
    import subprocess

    import soundfile

    command = ["espeak-ng", "-v", voice, "-s", str(int(words_per_minute)), "-p"]
    command += [str(min(int(pitch), 99)), "--stdout", text]
    result = subprocess.run(command, capture_output=True, check=False)
    if result.returncode != 0 or len(result.stdout) <= 44:
        raise SpeechSynthesisError(
            f"eSpeak NG voice {voice!r} produced no audio for {text!r} "
            f"({result.stderr.decode(errors='replace').strip()[:200]})"
        )
    samples, rate = soundfile.read(io.BytesIO(result.stdout), dtype="float32")
    return samples, rate
