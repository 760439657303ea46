"""Offline speech synthesis with eSpeak NG, from the pip package `espeakng-loader`.

The package ships libespeak-ng and its voice data; we call the C API through
ctypes in synchronous mode (about 2-3 ms per short sentence on one core).
One library instance serves the whole process.

Example:
    >>> samples, rate = synthesize("the red dog runs", voice="en-us+f2", words_per_minute=160, pitch=60)
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

AUDIO_OUTPUT_SYNCHRONOUS = 2
RATE, VOLUME, PITCH = 1, 2, 3
_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class SpeechSynthesisError(ValueError):
    """eSpeak NG is missing or refused a voice or a text."""


class _Espeak:
    def __init__(self):
        try:
            import espeakng_loader
        except ImportError:
            raise SpeechSynthesisError(
                'speech synthesis needs eSpeak NG: pip install "keras-s2s[audio]" '
                "(it brings espeakng-loader)"
            ) from None
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

    def synthesize(self, text: str, voice: str, words_per_minute: int, pitch: int) -> np.ndarray:
        with self.lock:
            if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise SpeechSynthesisError(f"eSpeak NG has no voice {voice!r}")
            self.lib.espeak_SetParameter(RATE, int(words_per_minute), 0)
            self.lib.espeak_SetParameter(PITCH, int(pitch), 0)
            self.chunks = []
            data = text.encode("utf-8")
            self.lib.espeak_Synth(data, len(data) + 1, 0, 0, 0, 0, None, None)
            self.lib.espeak_Synchronize()
            audio = np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int16)
        if not audio.size:
            raise SpeechSynthesisError(f"eSpeak NG produced no audio for {text!r}")
        return audio


_engine: _Espeak | None = None


def synthesize(text: str, voice: str = "en-us", words_per_minute: int = 170, pitch: int = 50):
    """Float32 samples in [-1, 1] and their sample rate (22,050 Hz) for `text`.

    Args:
        voice: str. An eSpeak NG voice, optionally with a variant: `en-us`, `en`, `en-us+f2`, `en+m3`.
        words_per_minute: int. Speaking rate (80-450).
        pitch: int. Base pitch, 0-100.
    """
    global _engine
    if _engine is None:
        _engine = _Espeak()
    samples = _engine.synthesize(text, voice, words_per_minute, pitch)
    return samples.astype(np.float32) / 32768.0, _engine.sample_rate
