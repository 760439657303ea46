"""Speech from the Festival Speech Synthesis System (Debian's `festival` and its `festvox-*` voices).

Festival's English diphone voices join diphones cut from recordings of one
speaker each: `kal_diphone` (a US man, package festvox-kallpc16k),
`rab_diphone` (a British man, festvox-rablpc16k), `ked_diphone` (a US man,
festvox-kdlpc16k); `cmu_us_slt_arctic_hts` (a US woman, festvox-us-slt-hts)
is a statistical voice. Its text analysis (lexicon, letter-to-sound rules,
phrasing) is its own, unlike eSpeak NG's or flite's.

Loading Festival and a voice takes longer than speaking a sentence, so many
sentences are spoken by one Festival process: `synthesize_festival` takes a
list of requests. Rate and pitch follow eSpeak NG's scales, like `flite.py`:
words per minute become Festival's `Duration_Stretch`, pitch (0-100, 50 the
voice's own) moves the diphone voices' mean F0 by up to an octave (the HTS
voice keeps its own).

Example:
    >>> "rab_diphone" in festival_voices()
    True
    >>> [(samples, rate)] = synthesize_festival([("the red dog runs", "rab_diphone", 160, 40)])
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from keras_s2s.corpora.espeak import SpeechSynthesisError

WORDS_PER_MINUTE = 180  # about Festival's own rate (13-word sentences last 4.3-4.4 s)
MEAN_F0 = 105  # Hz: the diphone voices' intonation target (festvox/*_diphone.scm)
F0_SPREAD = 14  # Hz: their target standard deviation, scaled with the mean


class FestivalError(SpeechSynthesisError):
    """Festival is missing, does not know a voice, or produced no audio."""


def festival_voices() -> list[str]:
    """The voices the installed Festival offers (`kal_diphone`, `rab_diphone`, ...); empty when
    there is no `festival` command (apt-get install festival festvox-kallpc16k ...)."""
    return list(_installed_voices())


@functools.lru_cache(maxsize=1)
def _installed_voices() -> tuple[str, ...]:
    if shutil.which("festival") is None:
        return ()
    listing = subprocess.run(
        ["festival", "-b", "(print (voice.list))"], capture_output=True, text=True, check=False
    ).stdout
    return tuple(sorted(listing.replace("(", " ").replace(")", " ").split()))


def synthesize_festival(requests: list[tuple[str, str, int, int]]) -> list:
    """(float32 samples, rate) of each (text, voice, words per minute, pitch) request, all spoken by
    one Festival process."""
    import soundfile

    if shutil.which("festival") is None:
        raise FestivalError("festival not found: apt-get install festival festvox-kallpc16k")
    unknown = sorted({voice for _, voice, _, _ in requests} - set(_installed_voices()))
    if unknown:
        raise FestivalError(
            f"Festival has no voice {unknown[0]!r}; it has {', '.join(_installed_voices())}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        wavs = [Path(tmp, f"{index}.wav") for index in range(len(requests))]
        script = Path(tmp, "speak.scm")
        script.write_text(
            "".join(_scheme(*request, wav) for request, wav in zip(requests, wavs, strict=True)),
            encoding="utf-8",
        )
        result = subprocess.run(["festival", "-b", str(script)], capture_output=True, check=False)
        error = result.stderr.decode(errors="replace").strip()[:200]
        spoken = []
        for (text, voice, _, _), wav in zip(requests, wavs, strict=True):
            if not wav.is_file() or wav.stat().st_size <= 44:  # the first one Festival failed on
                raise FestivalError(
                    f"Festival voice {voice!r} produced no audio for {text!r} ({error})"
                )
            spoken.append(soundfile.read(str(wav), dtype="float32"))
        if result.returncode != 0:
            raise FestivalError(f"Festival stopped with exit code {result.returncode} ({error})")
    return spoken


def _scheme(text: str, voice: str, words_per_minute: int, pitch: int, wav: Path) -> str:
    """The Festival commands that speak one request into `wav`."""
    stretch = WORDS_PER_MINUTE / max(int(words_per_minute), 1)
    scale = 2 ** ((int(pitch) - 50) / 50)
    quoted = " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"(voice_{voice})\n"
        f"(Parameter.set 'Duration_Stretch {stretch:.3f})\n"
        f"(set! int_lr_params '((target_f0_mean {MEAN_F0 * scale:.0f}) "
        f"(target_f0_std {F0_SPREAD * scale:.0f}) (model_f0_mean 170) (model_f0_std 34)))\n"
        f'(utt.save.wave (SynthText "{quoted}") "{wav}" \'riff)\n'
    )
