"""A large open-vocabulary English speech corpus, spoken by eSpeak NG: what `jasper_english` trains on.

Every distinct sentence (from `english_text.speakable_sentences`) is spoken
once, at a random rate (120-220 words per minute) and base pitch, by a voice
drawn from every English voice eSpeak NG offers:

- its formant voices (`en`, `en-US`, `en-GB-scotland`, `en-029`, ...), each
  with one of its voice variants (`f1`..`f5`, `m1`..`m8`, `klatt`,
  `whisper`, ...) and a random pitch range;
- with probability `mbrola_share`, one of its English MBROLA voices
  (`mb-us1`..`mb-us3`, `mb-en1`, and English read by the German, French,
  Swedish, ... diphone sets: `mb-de1-en`, ...), when Debian's `espeak-ng`,
  `mbrola` and `mbrola-*` packages are installed. Their diphones are cut
  from recordings of real people: the closest an offline corpus gets to
  human voices;
- with probability `flite_share`, a training sentence is spoken by one of
  `flite_voices` instead (Debian's `flite`: diphone and statistical voices,
  see `flite.py`), another synthesizer's idea of a voice; with probability
  `festival_share`, by one of `festival_voices` (Debian's `festival`: the
  diphone voices `kal_diphone` and `rab_diphone`, see `festival.py`; a
  shard's Festival sentences are spoken by one Festival process); with
  probability `rhvoice_share`, by one of `rhvoice_voices` (Debian's
  `rhvoice-english`: statistical voices of US, Scottish and Russian-accented
  men and women, see `rhvoice.py`). Held-out
  sentences stay eSpeak NG's, so their scores measure eSpeak speech.

Held-out sentences (`test`, `valid`) never occur in training.

The corpus is written in shards of `shard_size` utterances: each shard is
synthesized into a temporary folder and renamed when whole, so an interrupted
build resumes where it stopped (finished shards are kept, a half-written one
is redone) and nothing half-written is ever listed. The manifests
(`train.csv`, `valid.csv`, `test.csv`) are written last. `corpus.json` records
the settings and a digest of the sentences: resuming with other ones is an
error, not a silent mix.

Example:
    >>> sentences = list(speakable_sentences(["Translation-en", "bible.txt"]))
    >>> folder = EnglishSpeech(sentences, num_valid=500, num_test=500).build("data/english")
    >>> read_manifest(folder / "train.csv")[0]
"""

from __future__ import annotations

import csv
import dataclasses
import errno
import hashlib
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from keras_s2s.audio.io import require_audio_extra, resample
from keras_s2s.audio.manifest import write_manifest
from keras_s2s.corpora.espeak import (
    SpeechSynthesisError,
    english_voices,
    synthesize,
    synthesize_mbrola,
    voice_variants,
)
from keras_s2s.corpora.espeak import mbrola_voices as mbrola_voices_here
from keras_s2s.corpora.festival import FestivalError, synthesize_festival
from keras_s2s.corpora.festival import festival_voices as festival_voices_here
from keras_s2s.corpora.flite import flite_voices as flite_voices_here
from keras_s2s.corpora.flite import synthesize_flite
from keras_s2s.corpora.rhvoice import rhvoice_voices as rhvoice_voices_here
from keras_s2s.corpora.rhvoice import synthesize_rhvoice
from keras_s2s.files import atomic_write, read_text
from keras_s2s.progress import Progress
from keras_s2s.text.corpus import CorpusError

log = logging.getLogger("keras_s2s")
SPLITS = ("test", "valid", "train")


@dataclasses.dataclass(frozen=True)
class Rendition:
    """How one sentence is spoken: its text, transcript, voice and prosody."""

    said: str
    transcript: str
    voice: str
    words_per_minute: int
    pitch: int
    pitch_range: int | None  # None: the voice's own (MBROLA, flite and Festival voices)


@dataclasses.dataclass(frozen=True)
class ShardJob:
    """One shard to synthesize: `shards/NAME/` with its renditions, at `sample_rate`."""

    shards: Path
    name: str
    renditions: list
    sample_rate: int

    @property
    def folder(self) -> Path:
        return self.shards / self.name

    @property
    def tmp(self) -> Path:
        """Where the shard is written until it is whole."""
        return self.shards / f".tmp-{self.name}"


class EnglishSpeech:
    """The corpus: which sentence goes to which split and how each is spoken (all seeded).

    Args:
        sentences: list of (what to say, transcript) pairs, distinct transcripts.
        num_valid, num_test: int. Held-out sentences per split (the rest train).
        seed: int. Splits, voices and prosody follow from it.
        sample_rate: int. Rate of the stored audio.
        shard_size: int. Utterances per shard (the unit of resuming).
        words_per_minute, pitch, pitch_range: [low, high] drawn per utterance
            (eSpeak NG's rate in words per minute; pitch and range 0-100).
        voices, variants: eSpeak NG voices and variants to draw from (default: every English voice,
            and the plain voice plus every variant).
        mbrola_voices: MBROLA voices to draw from (default: every English one installed).
        mbrola_share: float. How often an MBROLA voice speaks (when there is one).
        flite_voices: flite voices (`kal16`, `awb`, ...) that speak `flite_share` of the training
            sentences (default: none).
        festival_voices: Festival voices (`kal_diphone`, `rab_diphone`, ...) that speak
            `festival_share` of the training sentences (default: none).
        rhvoice_voices: RHVoice voices (`clb`, `bdl`, ...) that speak `rhvoice_share` of the
            training sentences (default: none).
    """

    def __init__(
        self,
        sentences: list[tuple[str, str]],
        num_valid: int = 500,
        num_test: int = 500,
        seed: int = 0,
        sample_rate: int = 16000,
        shard_size: int = 1000,
        words_per_minute: tuple[int, int] = (120, 220),
        pitch: tuple[int, int] = (20, 80),
        pitch_range: tuple[int, int] = (20, 100),
        voices: list[str] | None = None,
        variants: list[str] | None = None,
        mbrola_voices: list[str] | None = None,
        mbrola_share: float = 0.4,
        flite_voices: list[str] | None = None,
        flite_share: float = 0.0,
        festival_voices: list[str] | None = None,
        festival_share: float = 0.0,
        rhvoice_voices: list[str] | None = None,
        rhvoice_share: float = 0.0,
    ):
        transcripts = [t for _, t in sentences]
        if len(set(transcripts)) != len(transcripts):
            raise ValueError("sentences must have distinct transcripts (one rendition each)")
        for name, count in (("num_valid", num_valid), ("num_test", num_test)):
            if not isinstance(count, int) or count < 0:
                raise ValueError(f"{name} must be a count >= 0, got {count!r}")
        if num_valid + num_test >= len(sentences):
            raise ValueError(
                f"{len(sentences)} sentences leave none for training after {num_valid} valid and "
                f"{num_test} test ones"
            )
        shares = {"flite": flite_share, "festival": festival_share, "rhvoice": rhvoice_share}
        for name, share in (("mbrola", mbrola_share), *shares.items()):
            if not 0 <= share <= 1:
                raise ValueError(f"{name}_share must be a share in [0, 1], got {share!r}")
        if sum(shares.values()) > 1:
            used = " + ".join(f"{name}_share" for name, share in shares.items() if share)
            raise ValueError(f"{used} must be at most 1, got {sum(shares.values())}")
        self.flite_voices = _voices_to_draw("flite", flite_voices, flite_share, flite_voices_here)
        self.festival_voices = _voices_to_draw(
            "festival", festival_voices, festival_share, festival_voices_here
        )
        self.rhvoice_voices = _voices_to_draw(
            "rhvoice", rhvoice_voices, rhvoice_share, rhvoice_voices_here
        )
        self.flite_share, self.festival_share = flite_share, festival_share
        self.rhvoice_share = rhvoice_share
        if not isinstance(shard_size, int) or shard_size < 1:
            raise ValueError(f"shard_size must be a count >= 1, got {shard_size!r}")
        for name, (low, high), limits in (
            ("words_per_minute", words_per_minute, (80, 450)),
            ("pitch", pitch, (0, 100)),
            ("pitch_range", pitch_range, (0, 100)),
        ):
            if not limits[0] <= low <= high <= limits[1]:
                raise ValueError(
                    f"{name} must be [low, high] within {list(limits)}, got {[low, high]}"
                )
        self.sentences = list(sentences)
        self.num_valid, self.num_test, self.seed = num_valid, num_test, seed
        self.sample_rate, self.shard_size = sample_rate, shard_size
        self.words_per_minute, self.pitch, self.pitch_range = (
            tuple(words_per_minute),
            tuple(pitch),
            tuple(pitch_range),
        )
        self.voices = list(voices) if voices else english_voices()
        self.variants = list(variants) if variants is not None else ["", *voice_variants()]
        self.mbrola_voices = (
            list(mbrola_voices) if mbrola_voices is not None else mbrola_voices_here()
        )
        self.mbrola_share = mbrola_share if self.mbrola_voices else 0.0
        if mbrola_share and not self.mbrola_voices:
            log.warning(
                "no MBROLA voices installed: the corpus is spoken by eSpeak NG's formant voices "
                "only (apt-get install espeak-ng mbrola mbrola-us1 ..., from contrib and non-free)"
            )

    def settings(self) -> dict:
        """What the corpus is a function of (stored in `corpus.json`, checked on resume)."""
        digest = hashlib.sha256("\n".join(t for _, t in self.sentences).encode()).hexdigest()
        settings = {
            "sentences": len(self.sentences),
            "sentences_sha256": digest,
            "num_valid": self.num_valid,
            "num_test": self.num_test,
            "seed": self.seed,
            "sample_rate": self.sample_rate,
            "shard_size": self.shard_size,
            "words_per_minute": list(self.words_per_minute),
            "pitch": list(self.pitch),
            "pitch_range": list(self.pitch_range),
            "voices": self.voices,
            "variants": self.variants,
            "mbrola_voices": self.mbrola_voices,
            "mbrola_share": self.mbrola_share,
            "version": 2,
        }
        for engine in COMMAND_ENGINES:  # only when used: older corpora stay resumable
            if getattr(self, f"{engine}_share"):
                settings[f"{engine}_voices"] = getattr(self, f"{engine}_voices")
                settings[f"{engine}_share"] = getattr(self, f"{engine}_share")
        return settings

    def plan(self) -> dict[str, list[Rendition]]:
        """The renditions of each split, in order (the same for the same settings)."""
        rng = random.Random(self.seed)
        order = list(self.sentences)
        rng.shuffle(order)
        cut = {"test": order[: self.num_test]}
        cut["valid"] = order[self.num_test : self.num_test + self.num_valid]
        cut["train"] = order[self.num_test + self.num_valid :]
        return {
            split: [
                self._rendition(said, transcript, rng, split == "train")
                for said, transcript in cut[split]
            ]
            for split in SPLITS
        }

    def _rendition(
        self, said: str, transcript: str, rng: random.Random, training: bool
    ) -> Rendition:
        words_per_minute, pitch = rng.randint(*self.words_per_minute), rng.randint(*self.pitch)
        if training and any(getattr(self, f"{engine}_share") for engine in COMMAND_ENGINES):
            draw = rng.random()  # one draw picks flite, Festival, RHVoice or none of them
            for engine in COMMAND_ENGINES:
                share = getattr(self, f"{engine}_share")
                if draw < share:
                    voice = f"{engine}-{rng.choice(getattr(self, f'{engine}_voices'))}"
                    return Rendition(said, transcript, voice, words_per_minute, pitch, None)
                draw -= share
        if self.mbrola_share and rng.random() < self.mbrola_share:
            return Rendition(
                said, transcript, rng.choice(self.mbrola_voices), words_per_minute, pitch, None
            )
        variant = rng.choice(self.variants)
        voice = rng.choice(self.voices) + (f"+{variant}" if variant else "")
        return Rendition(
            said, transcript, voice, words_per_minute, pitch, rng.randint(*self.pitch_range)
        )

    def build(self, folder: str | Path, workers: int = 1, progress: bool | None = None) -> Path:
        """Synthesize what is missing of the corpus in `folder` and write its manifests; return `folder`.

        Args:
            workers: int. Processes that synthesize shards side by side.
            progress: bool | None. A progress line on stderr (default: when stderr is a terminal).
        """
        folder = Path(folder)
        self._claim(folder)
        shards = [
            (f"{split}-{number:05d}", split, renditions[start : start + self.shard_size])
            for split, renditions in self.plan().items()
            for number, start in enumerate(range(0, len(renditions), self.shard_size))
        ]
        for stale in (folder / "shards").glob(".tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)  # a shard an interrupted build left half-done
        for stale in (folder / "shards").glob(".job-*"):
            stale.unlink()
        todo = [s for s in shards if not (folder / "shards" / s[0] / "shard.csv").is_file()]
        total = sum(len(s[2]) for s in shards)
        done = total - sum(len(s[2]) for s in todo)
        if done:
            log.info("resuming %s: %d of %d utterances already synthesized", folder, done, total)
        bar = Progress(total, "utterances", verb="synthesizing", show=progress, done=done)
        jobs = [ShardJob(folder / "shards", name, rs, self.sample_rate) for name, _, rs in todo]
        try:
            _run_in_processes(jobs, workers, bar)
        finally:
            bar.close()  # its line ends before an error is printed
            log.info("synthesized %d utterances in %.0f s", bar.done - bar.first, bar.seconds)
        for split in SPLITS:
            rows = [
                row
                for name, shard_split, _ in shards
                if shard_split == split
                for row in _read_shard(folder / "shards" / name)
            ]
            atomic_write(
                folder / f"{split}.csv", lambda path, rows=rows: write_manifest(path, rows)
            )
        return folder

    def _claim(self, folder: Path) -> None:
        """Record the settings in a new folder; refuse a folder that holds another corpus."""
        settings = self.settings()
        record = folder / "corpus.json"
        if record.is_file():
            kept = _read_record(record)
            changed = sorted(key for key in settings if kept.get(key) != settings[key])
            if changed:
                raise CorpusError(
                    f"{folder}: holds a corpus built with other settings ({', '.join(changed)}); "
                    "build into another folder, or delete this one to start over"
                )
            return
        if folder.exists() and any(folder.iterdir()):
            raise CorpusError(f"{folder}: not empty and not a speech corpus; choose another folder")
        (folder / "shards").mkdir(parents=True, exist_ok=True)
        atomic_write(record, lambda path: path.write_text(json.dumps(settings, indent=1)))


def _read_record(record: Path) -> dict:
    try:
        kept = json.loads(read_text(record))
        problem = "" if isinstance(kept, dict) else "not a JSON object"
    except ValueError as error:  # not UTF-8, or not JSON
        problem = str(error).removeprefix(f"{record}, ")[:120]
    if problem:
        raise CorpusError(
            f"{record}: damaged ({problem}); it holds the settings the corpus in {record.parent} was "
            "built with: restore it, or delete the folder to start over"
        )
    return kept


COMMAND_ENGINES = ("flite", "festival", "rhvoice")  # other synthesizers, drawn for training only
BY_COMMAND = ("mb-", "flite-", "festival-", "rhvoice-")  # voice prefixes of those run as commands
INSTALL = {
    "flite": "flite",
    "festival": "festival festvox-kallpc16k festvox-rablpc16k",
    "rhvoice": "rhvoice rhvoice-english",
}


def _voices_to_draw(engine: str, voices, share: float, installed) -> list[str]:
    """The `engine`'s voices a corpus draws from, checked against `installed()` when it uses them."""
    voices = list(voices or [])
    if share and not voices:
        raise ValueError(f"{engine}_share needs {engine}_voices to draw from")
    unknown = sorted(set(voices) - set(installed())) if share else []
    if unknown:
        raise ValueError(
            f"{engine} voices {unknown} are not installed (have: {installed() or 'none'}; "
            f"apt-get install {INSTALL[engine]})"
        )
    return voices


# signals of a crash inside libespeak-ng (segmentation fault, bus error, abort, ...), not of a kill
CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE)
DISK_FULL_EXIT = errno.ENOSPC  # a shard process's exit code when the disk filled up
FULL_DISK_BYTES = 1 << 20  # less free than this after a failed write: the disk is full


def plain_rendition(rendition: Rendition) -> Rendition:
    """The same sentence with the plain voice (no variant) at middle pitch and range: what is spoken
    instead of a rendition that crashes eSpeak NG (1.52 segfaults on a few variant and prosody
    combinations, e.g. `en-US+rob` at pitch 20, range 90) or that an MBROLA voice cannot say
    (then by `en` for `mb-en1`, `en-US` for the others)."""
    voice = rendition.voice.split("+")[0]
    if voice.startswith(BY_COMMAND):
        voice = "en" if voice == "mb-en1" else "en-US"
    return dataclasses.replace(rendition, voice=voice, pitch=50, pitch_range=50)


def speak(rendition: Rendition):
    """(float32 samples, rate, the rendition spoken) of a rendition: MBROLA voices through Debian's
    `espeak-ng` command, flite voices (`flite-awb`) through `flite`, Festival voices
    (`festival-rab_diphone`) through `festival`, RHVoice voices (`rhvoice-clb`) through
    `RHVoice-test`, the others through the pip library; a failure of any of those commands falls
    back to `plain_rendition`."""
    if rendition.voice.startswith(BY_COMMAND):
        try:
            return (*_speak_by_command(rendition), rendition)
        except SpeechSynthesisError as error:  # FliteError, FestivalError, RHVoiceError are ones
            log.warning("%s; speaking it with the plain voice instead", error)
            rendition = plain_rendition(rendition)
    samples, rate = synthesize(
        rendition.said,
        rendition.voice,
        rendition.words_per_minute,
        rendition.pitch,
        rendition.pitch_range,
    )
    return samples, rate, rendition


def _speak_by_command(rendition: Rendition):
    """(samples, rate) of an MBROLA, flite, Festival or RHVoice voice, through Debian's `espeak-ng`,
    `flite`, `festival` or `RHVoice-test`."""
    said, words_per_minute, pitch = rendition.said, rendition.words_per_minute, rendition.pitch
    if rendition.voice.startswith("flite-"):
        return synthesize_flite(said, rendition.voice[len("flite-") :], words_per_minute, pitch)
    if rendition.voice.startswith("festival-"):
        return synthesize_festival([_festival_request(rendition)])[0]
    if rendition.voice.startswith("rhvoice-"):
        return synthesize_rhvoice(said, rendition.voice[len("rhvoice-") :], words_per_minute, pitch)
    return synthesize_mbrola(said, rendition.voice, words_per_minute, pitch)


def _festival_request(rendition: Rendition) -> tuple[str, str, int, int]:
    voice = rendition.voice[len("festival-") :]
    return rendition.said, voice, rendition.words_per_minute, rendition.pitch


def _spoken_by_festival(renditions: list[Rendition], plain: frozenset) -> dict[int, tuple]:
    """Index -> (samples, rate) of a shard's Festival renditions, all spoken by one Festival process
    (starting Festival takes longer than a sentence); empty when that fails, so that `speak` says
    each alone (and falls back to the plain voice where Festival cannot)."""
    chosen = {
        index: _festival_request(rendition)
        for index, rendition in enumerate(renditions)
        if rendition.voice.startswith("festival-") and index not in plain
    }
    if not chosen:
        return {}
    try:
        return dict(zip(chosen, synthesize_festival(list(chosen.values())), strict=True))
    except FestivalError as error:
        log.warning("%s; speaking the shard's Festival sentences one at a time", error)
        return {}


def _run_in_processes(jobs: list, workers: int, bar) -> None:
    """Synthesize each shard in a child process (`python -m keras_s2s.corpora.english_speech JOB`, so
    it imports nothing of the caller's), `workers` at a time. A child that crashes inside eSpeak NG
    is started again with the utterance it crashed on spoken by the plain voice."""
    queue = [(job, frozenset()) for job in jobs]
    running = []  # (process, job, indices spoken plainly, job file)
    try:
        while queue or running:
            while queue and len(running) < max(1, workers):
                job, plain = queue.pop(0)
                job_file = job.shards / f".job-{job.name}.json"
                payload = {
                    "shards": str(job.shards),
                    "name": job.name,
                    "sample_rate": job.sample_rate,
                    "plain": sorted(plain),
                    "renditions": [dataclasses.asdict(r) for r in job.renditions],
                }
                job_file.write_text(json.dumps(payload), encoding="utf-8")
                command = [sys.executable, "-m", "keras_s2s.corpora.english_speech", str(job_file)]
                running.append((subprocess.Popen(command), job, plain, job_file))
            time.sleep(0.05)
            for entry in [r for r in running if r[0].poll() is not None]:
                running.remove(entry)
                process, job, plain, job_file = entry
                job_file.unlink(missing_ok=True)
                if process.returncode == 0:
                    bar(len(job.renditions))
                elif process.returncode == DISK_FULL_EXIT:  # the finished shards stay: resumable
                    raise OSError(errno.ENOSPC, "No space left on device", str(job.folder))
                elif -process.returncode in CRASH_SIGNALS:
                    queue.insert(0, (job, plain | {_crashed_at(job, plain)}))
                else:
                    raise CorpusError(
                        f"{job.folder}: synthesis stopped (exit code {process.returncode}); "
                        "see the error above. Run the same command again to resume"
                    )
    finally:
        for process, _, _, job_file in running:
            process.kill()
            process.wait()
            job_file.unlink(missing_ok=True)


def _crashed_at(job: ShardJob, plain: frozenset) -> int:
    """The index of the utterance a crashed shard process was speaking: the first not written."""
    renditions = job.renditions
    index = len(list(job.tmp.glob("*.flac")))
    if index in plain or index >= len(renditions):
        raise CorpusError(
            f"{job.folder}: eSpeak NG crashed on utterance {index} even with the plain voice: "
            f"{renditions[min(index, len(renditions) - 1)]}"
        )
    log.warning(
        "eSpeak NG crashed on %s; speaking it with the plain voice instead", renditions[index]
    )
    return index


def _synthesize_shard(job: ShardJob, plain: frozenset = frozenset()) -> int:
    """Speak one shard's renditions into `shards/.tmp-NAME`, then rename it to `shards/NAME`;
    the renditions at the indices in `plain` are spoken by `plain_rendition`."""
    soundfile = require_audio_extra("soundfile")
    tmp = job.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        rows = []
        festival = _spoken_by_festival(job.renditions, plain)
        for index, rendition in enumerate(job.renditions):
            if index in plain:
                rendition = plain_rendition(rendition)
            if index in festival:
                samples, rate = festival.pop(index)
            else:
                samples, rate, rendition = speak(rendition)
            samples = resample(samples, rate, job.sample_rate)
            audio = f"{index:05d}.flac"
            soundfile.write(
                str(tmp / audio), samples.clip(-1, 1), job.sample_rate, subtype="PCM_16"
            )
            rows.append(
                (
                    f"shards/{job.name}/{audio}",
                    len(samples) / job.sample_rate,
                    rendition.transcript,
                    rendition.voice,
                    rendition.words_per_minute,
                    rendition.pitch,
                    rendition.pitch_range,
                )
            )
        _write_shard(tmp / "shard.csv", rows)  # last: a shard without it is not finished
        os.replace(tmp, job.folder)
    except BaseException as error:
        full = _disk_is_full(tmp, error)  # before the partial shard is removed, freeing its space
        shutil.rmtree(tmp, ignore_errors=True)
        if full:
            raise OSError(errno.ENOSPC, "No space left on device", str(job.folder)) from None
        raise
    return len(job.renditions)


def _disk_is_full(folder: Path, error: BaseException) -> bool:
    """Whether `error` came of a full disk: libsndfile says only "System error." when it is."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    try:
        return isinstance(error, Exception) and shutil.disk_usage(folder).free < FULL_DISK_BYTES
    except OSError:
        return False


SHARD_COLUMNS = ("wav_filename", "duration", "transcript", "voice", "wpm", "pitch", "pitch_range")


def _write_shard(path: Path, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(SHARD_COLUMNS)
        writer.writerows(rows)


def _read_shard(shard: Path) -> list[tuple[str, float, str]]:
    """(audio path relative to the corpus folder, seconds, transcript) of a finished shard."""
    with open(shard / "shard.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [(row["wav_filename"], float(row["duration"]), row["transcript"]) for row in rows]


def voices_of(folder: str | Path, split: str = "test") -> dict[str, str]:
    """Audio path -> eSpeak NG voice of a built corpus's split (for per-voice scores)."""
    voices = {}
    for shard in sorted(Path(folder, "shards").glob(f"{split}-*/shard.csv")):
        with open(shard, newline="", encoding="utf-8") as handle:
            voices.update((row["wav_filename"], row["voice"]) for row in csv.DictReader(handle))
    return voices


def _main(job_file: str) -> None:
    """Synthesize the shard a job file describes (what `_run_in_processes` starts)."""
    job = json.loads(Path(job_file).read_text(encoding="utf-8"))
    renditions = [Rendition(**r) for r in job["renditions"]]
    shard = ShardJob(Path(job["shards"]), job["name"], renditions, job["sample_rate"])
    try:
        _synthesize_shard(shard, frozenset(job["plain"]))
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        sys.exit(DISK_FULL_EXIT)  # the parent says so, once, for every shard process


if __name__ == "__main__":
    _main(sys.argv[1])
