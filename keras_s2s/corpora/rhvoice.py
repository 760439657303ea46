"""Speech from RHVoice (Debian's `rhvoice` and `rhvoice-english`, non-free), through `RHVoice-test`.

RHVoice's English voices are statistical parametric (HTS) voices trained on
recordings of real people, with a vocoder of their own: `alan` (a Scottish
man), `bdl` (a US man), `clb` (a US woman), `slt` (a US woman: CMU ARCTIC's
slt, the same speaker as flite's and Festival's `slt`), and `evgeniy-eng`
and `lyubov` (English spoken by a Russian man and woman). Rate and pitch
follow eSpeak NG's scales, so a corpus draws them the same way for every
engine: words per minute become RHVoice's rate in percent of its own pace
(about 170 words a minute), eSpeak's pitch (0-100, 50 the voice's own) moves
the voice's pitch by up to an octave (RHVoice clamps it to 50-200%).

Example:
    >>> "clb" in rhvoice_voices()
    True
    >>> samples, rate = synthesize_rhvoice("the red dog runs", "clb", 160, 40)
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from keras_s2s.corpora.espeak import SpeechSynthesisError, wav_of_command

COMMAND = "RHVoice-test"
VOICES = Path("/usr/share/RHVoice/voices")  # where Debian's packages put them
WORDS_PER_MINUTE = 170  # RHVoice's own pace at rate 100% (bdl: 10 words in 3.46 s)


class RHVoiceError(SpeechSynthesisError):
    """RHVoice is missing, does not know a voice, or produced no audio."""


def rhvoice_voices() -> list[str]:
    """The installed English RHVoice voices (`alan`, `bdl`, `clb`, ...); empty without
    `RHVoice-test` (apt-get install rhvoice rhvoice-english)."""
    return list(_installed_voices())


@functools.lru_cache(maxsize=1)
def _installed_voices() -> tuple[str, ...]:
    if shutil.which(COMMAND) is None or not VOICES.is_dir():
        return ()
    english = []
    for info in VOICES.glob("*/voice.info"):
        fields = dict(
            line.split("=", 1)
            for line in info.read_text(errors="replace").splitlines()
            if "=" in line
        )
        if fields.get("language", "").strip() == "English":
            english.append(info.parent.name)
    return tuple(sorted(english))


def synthesize_rhvoice(text: str, voice: str, words_per_minute: int = 170, pitch: int = 50):
    """Float32 samples and their rate (24 kHz) of `text` spoken by an RHVoice voice (one process a
    call: 0.09 s to start, about 0.02 s a second of speech)."""

    if shutil.which(COMMAND) is None:
        raise RHVoiceError(f"{COMMAND} not found: apt-get install rhvoice rhvoice-english")
    if voice not in _installed_voices():  # RHVoice would speak with its default voice instead
        have = ", ".join(_installed_voices()) or "none"
        raise RHVoiceError(f"RHVoice has no English voice {voice!r}; it has {have}")
    rate = round(100 * max(int(words_per_minute), 1) / WORDS_PER_MINUTE)
    pitch_percent = round(100 * 2 ** ((int(pitch) - 50) / 50))
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp, "speech.wav")
        command = [COMMAND, "-p", voice, "-r", str(rate), "-t", str(pitch_percent), "-o", str(wav)]
        stdin = text.encode() + b"\n"
        return wav_of_command(command, wav, RHVoiceError, f"RHVoice voice {voice!r}", text, stdin)
