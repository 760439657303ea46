"""Speech from flite, CMU's small synthesizer (Debian's `flite` command), with its built-in voices.

Its voices are made differently from eSpeak NG's formant voices: `kal` and
`kal16` join diphones cut from recordings of a US man, `awb` (a Scottish
man), `rms` (a US man) and `slt` (a US woman) are statistical (clustergen)
voices trained on the CMU ARCTIC recordings. Rate and pitch follow eSpeak
NG's scales, so a corpus draws them the same way for every engine: words per
minute become flite's `duration_stretch`, eSpeak's pitch (0-100, 50 the
voice's own) moves the voice's mean F0 by up to an octave (`rms` keeps its
own: flite ignores the setting for it).

Example:
    >>> "awb" in flite_voices()
    True
    >>> samples, rate = synthesize_flite("the red dog runs", "awb", 160, 40)
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from keras_s2s.corpora.espeak import SpeechSynthesisError, wav_of_command

WORDS_PER_MINUTE = 180  # about flite's own rate (13-word sentences last 4.0-4.8 s)
MEAN_F0 = {"kal": 95, "kal16": 95, "awb": 130, "rms": 100, "slt": 170}  # Hz, measured
LIMITED_DOMAIN = {"awb_time"}  # speaks the time of day only


class FliteError(SpeechSynthesisError):
    """flite is missing, does not know a voice, or produced no audio."""


def flite_voices() -> list[str]:
    """The general-purpose voices of the installed `flite` (`kal`, `kal16`, `awb`, `rms`, `slt`);
    empty when there is no `flite` command (apt-get install flite)."""
    return list(_installed_voices())


@functools.lru_cache(maxsize=1)
def _installed_voices() -> tuple[str, ...]:
    if shutil.which("flite") is None:
        return ()
    listing = subprocess.run(["flite", "-lv"], capture_output=True, text=True, check=False).stdout
    names = listing.split(":", 1)[-1].split()
    return tuple(sorted(name for name in names if name not in LIMITED_DOMAIN))


def synthesize_flite(text: str, voice: str, words_per_minute: int = 180, pitch: int = 50):
    """Float32 samples and their rate of `text` spoken by a flite voice (one process per call;
    flite speaks a sentence in 0.01-0.1 s)."""

    if shutil.which("flite") is None:
        raise FliteError("flite not found: apt-get install flite")
    if voice not in _installed_voices():  # flite would speak with its default voice instead
        raise FliteError(f"flite has no voice {voice!r}; it has {', '.join(_installed_voices())}")
    stretch = WORDS_PER_MINUTE / max(int(words_per_minute), 1)
    f0 = MEAN_F0.get(voice, 120) * 2 ** ((int(pitch) - 50) / 50)
    with tempfile.TemporaryDirectory() as tmp:
        words, wav = Path(tmp, "text.txt"), Path(tmp, "speech.wav")
        words.write_text(text + "\n", encoding="utf-8")
        command = ["flite", "-voice", voice, "--setf", f"duration_stretch={stretch:.3f}"]
        command += ["--setf", f"int_f0_target_mean={f0:.0f}", "-f", str(words), "-o", str(wav)]
        return wav_of_command(command, wav, FliteError, f"flite voice {voice!r}", text)
