"""The built-in speech task (`--data demo-speech`): English sentences spoken by eSpeak NG.

Sentences come from a small grammar over about 150 everyday words ("the red
dog sees two small birds near the house"); each is spoken with one of
several voices (American and British English, male and female variants), a
random speaking rate and pitch, resampled to 16 kHz. Generated once per
setting and cached under `KERAS_S2S_HOME/demo-speech/` as WAV files and
three manifests (train.csv, valid.csv, test.csv), so runs are offline and
reproducible from pip alone (the same sentences, voices, rates and pitches
for a seed; eSpeak NG keeps a little state between sentences, so an
utterance's length can differ by a few milliseconds between generations).

Example:
    >>> folder = DemoSpeech(num_train=2000).prepare()
    >>> read_manifest(folder / "train.csv")[0]
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import shutil
import sys
import time
from pathlib import Path

from keras_s2s.audio.io import resample, write_wav
from keras_s2s.audio.manifest import write_manifest
from keras_s2s.corpora.espeak import synthesize
from keras_s2s.files import staging_folder
from keras_s2s.home import home

log = logging.getLogger("keras_s2s")

NUMBERS = "two three four five six seven eight nine ten".split()
ADJECTIVES = (
    "red green blue black white big small old young happy quiet fast slow warm cold".split()
)
NOUNS = (
    "dog cat bird fish horse cow sheep child teacher doctor farmer friend mother father "
    "house car tree boat road river garden table window door book letter apple bread"
).split()
VERBS = {
    "sees": "see",
    "likes": "like",
    "finds": "find",
    "takes": "take",
    "wants": "want",
    "helps": "help",
    "follows": "follow",
    "calls": "call",
    "washes": "wash",
    "paints": "paint",
    "opens": "open",
    "carries": "carry",
}
PREPOSITIONS = "near behind under inside beside".split()
PLACES = "house garden river school market station forest".split()
ADVERBS = "today again slowly quickly tomorrow".split()
VOICES = ("en-us", "en-us+f2", "en-us+m3", "en", "en+f3", "en+m1", "en-us+f4", "en+m5")


def _plural(noun: str) -> str:
    irregular = {"child": "children", "sheep": "sheep", "fish": "fish", "mother": "mothers"}
    if noun in irregular:
        return irregular[noun]
    return noun + ("es" if noun.endswith(("sh", "ch")) else "s")


class DemoSpeech:
    """The generated speech corpus.

    Args:
        num_train, num_valid, num_test: int. Utterances per split.
        seed: int. Sentences, voices, rates and pitches follow from it.
        sample_rate: int. Rate of the stored WAV files.
        voices: tuple[str]. eSpeak NG voices to draw from.
    """

    folder_name = "demo-speech"  # under KERAS_S2S_HOME

    def __init__(
        self,
        num_train: int = 6000,
        num_valid: int = 200,
        num_test: int = 300,
        seed: int = 0,
        sample_rate: int = 16000,
        voices: tuple = VOICES,
    ):
        self.num_train, self.num_valid, self.num_test = num_train, num_valid, num_test
        self.seed, self.sample_rate, self.voices = seed, sample_rate, tuple(voices)

    def sentence(self, rng: random.Random) -> str:
        """One sentence of the grammar."""

        def noun_phrase():
            if rng.random() < 0.3:
                return " ".join(
                    [rng.choice(NUMBERS)]
                    + ([rng.choice(ADJECTIVES)] if rng.random() < 0.5 else [])
                    + [_plural(rng.choice(NOUNS))]
                ), True
            words = (
                [rng.choice(["the", "a", "my", "your"])]
                + ([rng.choice(ADJECTIVES)] if rng.random() < 0.5 else [])
                + [rng.choice(NOUNS)]
            )
            if words[0] == "a" and words[1][0] in "aeiou":
                words[0] = "an"
            return " ".join(words), False

        subject, plural = noun_phrase()
        verb = rng.choice(list(VERBS))
        words = [subject, VERBS[verb] if plural else verb, noun_phrase()[0]]
        if rng.random() < 0.4:
            words += [rng.choice(PREPOSITIONS), "the " + rng.choice(PLACES)]
        if rng.random() < 0.25:
            words.append(rng.choice(ADVERBS))
        return " ".join(words)

    def utterance_settings(self, rng: random.Random) -> dict:
        return {
            "voice": rng.choice(self.voices),
            "words_per_minute": rng.randint(140, 210),
            "pitch": rng.randint(30, 70),
        }

    def key(self) -> str:
        settings = (
            self.num_train,
            self.num_valid,
            self.num_test,
            self.seed,
            self.sample_rate,
            self.voices,
            "v1",
        )
        return hashlib.sha256(repr(settings).encode()).hexdigest()[:12]

    def prepare(self, root: Path | None = None, progress: bool | None = None) -> Path:
        """Generate the corpus (once) and return its folder with train.csv, valid.csv, test.csv."""
        folder = (root or home() / self.folder_name) / self.key()
        if (folder / "test.csv").is_file():
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging_folder(folder)
        (tmp / "wavs").mkdir(parents=True)
        rng = random.Random(self.seed)
        total = self.num_train + self.num_valid + self.num_test
        progress = sys.stderr.isatty() if progress is None else progress
        start, seen, index = time.time(), set(), 0
        try:
            for split, count in (
                ("test", self.num_test),
                ("valid", self.num_valid),
                ("train", self.num_train),
            ):
                rows = []
                for _ in range(count):
                    text = self.sentence(rng)
                    while split != "train" and text in seen:  # held-out sentences are new sentences
                        text = self.sentence(rng)
                    seen.add(text)
                    samples, rate = synthesize(text, **self.utterance_settings(rng))
                    samples = resample(samples, rate, self.sample_rate)
                    name = f"wavs/{split}-{index:06d}.wav"
                    write_wav(tmp / name, samples, self.sample_rate)
                    rows.append((name, len(samples) / self.sample_rate, text))
                    index += 1
                    if progress and index % 100 == 0:
                        print(
                            f"\rsynthesizing {self.folder_name}: {index}/{total}",
                            end="",
                            file=sys.stderr,
                            flush=True,
                        )
                write_manifest(tmp / f"{split}.csv", rows)
            if progress:
                print(file=sys.stderr)
            os.replace(tmp, folder)  # all or nothing
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info(
            "synthesized %d demo utterances in %.1fs into %s", total, time.time() - start, folder
        )
        return folder


class DemoTTS(DemoSpeech):
    """The built-in speech-synthesis task (`--data demo-tts`): one voice, one rate, one pitch.

    Sentences are written as people write them (a capital letter, a full stop,
    numbers often as digits: "The 2 red dogs see a cat."), so the text
    normalizer has work to do; eSpeak NG speaks them with the `en-us` voice at
    160 words per minute and keeps its native 22,050 Hz. Cached under
    `KERAS_S2S_HOME/demo-tts/`.
    """

    folder_name = "demo-tts"

    def __init__(
        self,
        num_train: int = 3000,
        num_valid: int = 100,
        num_test: int = 100,
        seed: int = 0,
        sample_rate: int = 22050,
        voice: str = "en-us",
        words_per_minute: int = 160,
        pitch: int = 50,
    ):
        super().__init__(num_train, num_valid, num_test, seed, sample_rate, voices=(voice,))
        self.words_per_minute, self.pitch = words_per_minute, pitch

    def sentence(self, rng: random.Random) -> str:
        words = super().sentence(rng).split()
        words = [
            str(NUMBERS.index(w) + 2) if w in NUMBERS and rng.random() < 0.5 else w for w in words
        ]
        return " ".join(words).capitalize() + rng.choice(".....!?")

    def utterance_settings(self, rng: random.Random) -> dict:
        return {
            "voice": self.voices[0],
            "words_per_minute": self.words_per_minute,
            "pitch": self.pitch,
        }

    def key(self) -> str:
        return super().key() + f"-{self.words_per_minute}-{self.pitch}"
