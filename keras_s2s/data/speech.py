"""From a speech source to feature/label datasets for CTC training.

Sources: `demo-speech` and `demo-tts` (synthesized, see `speech_demo.py`), a
manifest (CSV/TSV; valid/test cut off, seeded), a directory holding
`train.csv`, `valid.csv` (or `dev.csv`) and `test.csv` (or `.tsv`), or a
folder in the LibriSpeech layout (`*.trans.txt` + `.flac`) or the LJSpeech
layout (`metadata.csv` + `wavs/`; valid/test cut off).

Before training, every utterance is checked: audio that is missing,
unreadable or empty, transcripts with characters outside the vocabulary and
utterances outside [min_duration, max_duration] are skipped, counted and
logged with the first example of each reason; nothing reaches TensorFlow that
would crash it later. On TensorFlow, audio is read (and augmented, in NumPy)
and featurized inside `tf.data` (`FeatureExtractor`), batches are bucketed
by length and padded to a multiple of 8 under mixed precision. Elsewhere
(JAX) `SpeechBatches` does the same in NumPy threads, every batch of a
length bucket padded to the bucket's bound, so the step compiles once per
bucket.

Example:
    >>> data = load_speech_data("demo-speech", batch_size=16)
    >>> inputs, labels = next(iter(data.train))    # {"features", "feature_lengths"}, char ids
"""

from __future__ import annotations

import dataclasses
import logging
import random
from pathlib import Path

import numpy as np

from keras_s2s.audio.augment import (
    augment_audio,
    augment_features,
    check_augment,
    has_feature_masks,
)
from keras_s2s.audio.features import FeatureExtractor
from keras_s2s.audio.io import read_audio
from keras_s2s.audio.manifest import Utterance, read_librispeech, read_ljspeech, read_manifest
from keras_s2s.backend import tf
from keras_s2s.data.batches import (
    Batching,
    BucketedBatches,
    longest_per_bucket,
    padded_rows,
    with_default_workers,
)
from keras_s2s.padding import pad_time_to_multiple, round_up
from keras_s2s.text.characters import CharVocabulary, SubwordVocabulary, normalize_transcript
from keras_s2s.text.corpus import CorpusError

log = logging.getLogger("keras_s2s")


@dataclasses.dataclass
class SpeechData:
    """Feature extractor, vocabulary, datasets and held-out utterances of a speech task (recognition or
    synthesis: then `extractor` makes the mel targets and `vocabulary` holds the input characters)."""

    extractor: FeatureExtractor
    vocabulary: CharVocabulary
    train: tf.data.Dataset
    valid: tf.data.Dataset | None
    train_utterances: list
    valid_utterances: list
    test_utterances: list

    @classmethod
    def from_splits(cls, kind: str, extractor, vocabulary, train, valid, train_ok, valid_ok, test):
        """Log the split sizes and training hours (`kind`: "speech", "synthesis") and gather them;
        `train_ok` and `valid_ok` are (utterance, seconds) pairs."""
        hours = sum(seconds for _, seconds in train_ok) / 3600
        log.info(
            "%s data: %d train / %d valid / %d test utterances, %.2f h of training audio",
            kind,
            len(train_ok),
            len(valid_ok),
            len(test),
            hours,
        )
        return cls(
            extractor,
            vocabulary,
            train,
            valid,
            [u for u, _ in train_ok],
            [u for u, _ in valid_ok],
            test,
        )


def _manifest_in(directory: Path, names: tuple) -> Path | None:
    for name in names:
        for suffix in (".csv", ".tsv"):
            if (directory / f"{name}{suffix}").is_file():
                return directory / f"{name}{suffix}"
    return None


def read_speech_splits(
    source: str, num_train: int = 0, num_valid: int = 200, num_test: int = 300, seed: int = 0
) -> tuple[list, list, list]:
    """Train/valid/test utterance lists of a speech source."""
    if source in ("demo-speech", "demo-tts"):
        from keras_s2s.corpora.speech_demo import DemoSpeech, DemoTTS

        demo = DemoSpeech if source == "demo-speech" else DemoTTS
        size = {"num_train": num_train} if num_train else {}  # else the corpus's own default
        source = str(demo(**size, num_valid=num_valid, num_test=num_test, seed=seed).prepare())
    path = Path(source)
    if path.is_dir() and (path / "metadata.csv").is_file():
        return _cut_held_out(read_ljspeech(path), [], [], num_train, num_valid, num_test, seed)
    if path.is_dir():
        train_file = _manifest_in(path, ("train",))
        if train_file is None and next(path.rglob("*.trans.txt"), None) is not None:
            return _cut_held_out(
                read_librispeech(path), [], [], num_train, num_valid, num_test, seed
            )
        if train_file is None:
            raise CorpusError(
                f"{path}: no train.csv or train.tsv manifest, and no LibriSpeech *.trans.txt files"
            )
        splits = [read_manifest(train_file)]
        for names in (("valid", "dev"), ("test",)):
            found = _manifest_in(path, names)
            splits.append(read_manifest(found) if found else [])
        train, valid, test = splits
    else:
        train, valid, test = read_manifest(path), [], []
    return _cut_held_out(train, valid, test, num_train, num_valid, num_test, seed)


def read_test_split(source: str, **splits) -> list:
    """The test utterances of a speech source: a folder's own `test.csv` (or `.tsv`), which needs no
    training manifest beside it, else the split `read_speech_splits(source, **splits)` cuts.

    Example:
        >>> len(read_test_split("english/corpus"))
        500
    """
    path = Path(source)
    test_file = _manifest_in(path, ("test",)) if path.is_dir() else None
    if test_file is not None:
        return read_manifest(test_file)
    return read_speech_splits(source, **splits)[2]


def _cut_held_out(train, valid, test, num_train, num_valid, num_test, seed):
    """Cut missing valid/test splits (at most 10% each) from the shuffled training utterances; cap them."""
    if not valid or not test:  # cut what is missing from the shuffled training utterances
        train = list(train)
        random.Random(seed).shuffle(train)
        cut_test = 0 if test else min(num_test, len(train) // 10)
        cut_valid = 0 if valid else min(num_valid, len(train) // 10)
        test = test or train[:cut_test]
        valid = valid or train[cut_test : cut_test + cut_valid]
        train = train[cut_test + cut_valid :]
    return (train[:num_train] if num_train else train), valid[:num_valid], test


def _audio_seconds(path, soundfile) -> tuple[float, str | None]:
    """(seconds, None) for a readable audio file with samples, else (0.0, the reason it cannot be used)."""
    try:
        info = soundfile.info(str(path))
    except Exception as exc:  # libsndfile's own error types
        return 0.0, f"unreadable audio ({str(exc)[:80]})"
    if info.frames == 0:
        return 0.0, "no audio samples"
    return info.frames / info.samplerate, None


def usable_utterances(
    utterances: list[Utterance],
    vocabulary: CharVocabulary,
    min_duration: float = 0.1,
    max_duration: float = 20.0,
    name: str = "train",
) -> list[tuple[Utterance, float]]:
    """(utterance, seconds) of those that can be trained on; the rest are counted and logged by reason."""
    from keras_s2s.audio.io import require_audio_extra

    soundfile = require_audio_extra("soundfile")

    kept, skipped = [], {}
    for utterance in utterances:
        reason = None
        unknown = vocabulary.unknown(utterance.transcript)
        if not normalize_transcript(utterance.transcript):
            reason = "empty transcript"
        elif unknown:
            reason = f"characters outside the vocabulary ({''.join(sorted(unknown))!r})"
        else:
            seconds, reason = _audio_seconds(utterance.path, soundfile)
            if reason is None and not min_duration <= seconds <= max_duration:
                reason = f"duration outside [{min_duration}, {max_duration}] s"
        if reason is None:
            kept.append((utterance, seconds))
        else:
            skipped.setdefault(reason.split(" (")[0], []).append(
                f"{utterance.path} (line {utterance.line}): {reason}"
            )
    for reason, examples in skipped.items():
        log.warning(
            "%s: skipped %d utterance(s) for %s, e.g. %s", name, len(examples), reason, examples[0]
        )
    if not kept:
        raise CorpusError(
            f"{name}: none of {len(utterances)} utterances is usable; see the warnings above"
        )
    return kept


def check_readable(utterances: list[Utterance], name: str = "test") -> None:
    """A CorpusError naming the files of a split that cannot be read (the test split is scored whole,
    so it is checked before training, not skipped)."""
    from keras_s2s.audio.io import require_audio_extra

    soundfile = require_audio_extra("soundfile")
    bad = [
        f"{u.path} (line {u.line}): {reason}"
        for u in utterances
        for _, reason in [_audio_seconds(u.path, soundfile)]
        if reason
    ]
    if bad:
        raise CorpusError(
            f"{name}: {len(bad)} of {len(utterances)} utterances cannot be read, e.g. "
            f"{'; '.join(bad[:3])}. Fix or remove them from the {name} split"
        )


class SpeechBatches(BucketedBatches):
    """({"features": [B, T, F], "feature_lengths": [B]}, char ids [B, L]) batches in NumPy: what
    `make_speech_dataset` gives on TensorFlow, as a `keras.utils.PyDataset` for the other backends.

    Utterances go to buckets of `bucket_seconds` of audio (the longest they can
    become: speed perturbation lengthens them); every batch of a bucket has the
    bucket's frame count (rounded up to `pad_to_multiple`) and label length, so
    `jax.jit` compiles one step per bucket. Audio is read, augmented and
    featurized in `workers` threads. See `BucketedBatches` for the other arguments.

    Example:
        >>> batches = SpeechBatches(data.train_utterances_with_seconds, extractor, vocabulary)
        >>> inputs, labels = batches[0]
    """

    def __init__(
        self,
        utterances: list[tuple[Utterance, float]],
        extractor: FeatureExtractor,
        vocabulary: CharVocabulary,
        batching: Batching | None = None,
        augment: dict | None = None,
        bucket_seconds: float = 1.0,
        training: bool | None = None,
    ):
        plan = batching or Batching()
        self.extractor = extractor
        self.training = plan.shuffle if training is None else training
        self.augment = check_augment(dict(augment or {})) if self.training else {}
        self.paths = [str(u.path) for u, _ in utterances]
        self.labels = [vocabulary.encode(u.transcript) for u, _ in utterances]
        rate = extractor.sample_rate
        slowest = self.augment.get("speed", [1.0])[0]  # a slower speed makes more frames
        self.frames_per_bucket = max(1, extractor.num_frames(int(bucket_seconds * rate)))
        most = [
            extractor.num_frames(int(np.ceil(seconds * rate / slowest)) + 1) + 1
            for _, seconds in utterances
        ]
        buckets = [(frames - 1) // self.frames_per_bucket for frames in most]
        self.pad_to_multiple = max(1, plan.pad_to_multiple)
        self.label_width = longest_per_bucket(buckets, self.labels)
        super().__init__(buckets, None, with_default_workers(plan))
        self.log_shapes("speech batches")

    def batch_shape(self, bucket: int, size: int) -> tuple[int, int, int]:
        frames = round_up((bucket + 1) * self.frames_per_bucket, self.pad_to_multiple)
        return size, frames, round_up(self.label_width[bucket], 8)

    def make_batch(self, bucket: int, items: list[int], rng):
        _, frames, label_width = self.batch_shape(bucket, len(items))
        rate, features = self.extractor.sample_rate, []
        for index in items:
            audio = read_audio(self.paths[index], rate, repair=True)
            if self.augment:
                audio = augment_audio(audio, self.augment, rate, rng)
            utterance = self.extractor.numpy_features(audio, self.training, rng)
            if has_feature_masks(self.augment):
                utterance = augment_features(utterance, self.augment, rng)
            features.append(utterance)
        lengths = np.array([min(len(f), frames) for f in features], np.int32)
        inputs = {
            "features": padded_rows(features, frames, 0.0, np.float32),
            "feature_lengths": lengths,
        }
        return inputs, padded_rows([self.labels[i] for i in items], label_width)


def make_speech_dataset(
    utterances: list[tuple[Utterance, float]],
    extractor: FeatureExtractor,
    vocabulary: CharVocabulary,
    batching: Batching | None = None,
    augment: dict | None = None,
    bucket_seconds: float = 1.0,
    training: bool | None = None,
):
    """Batched ({"features": [B, T, F], "feature_lengths": [B]}, char ids [B, L]) dataset: `tf.data`
    on TensorFlow, `SpeechBatches` elsewhere, as the plan says (default: 32 utterances, padded to
    a multiple of 8, shuffled, one pass).

    `training` (default: the plan's `shuffle`) turns on dithering and `augment`.

    Example:
        >>> make_speech_dataset(utterances, extractor, vocabulary, Batching(batch_size=16))
    """
    plan = batching or Batching()
    if not plan.tf_data:
        return SpeechBatches(
            utterances, extractor, vocabulary, plan, augment, bucket_seconds, training
        )
    training = plan.shuffle if training is None else training
    augment = check_augment(dict(augment or {}))
    paths = [str(u.path) for u, _ in utterances]
    labels = [vocabulary.encode(u.transcript) for u, _ in utterances]
    flat = np.fromiter((i for row in labels for i in row), dtype=np.int32)
    ragged = tf.RaggedTensor.from_row_lengths(flat, np.array([len(r) for r in labels], np.int64))
    ds = tf.data.Dataset.from_tensor_slices((paths, ragged)).map(lambda p, y: (p, y))
    if plan.shuffle:
        ds = ds.shuffle(len(paths), seed=plan.seed, reshuffle_each_iteration=True)
    if plan.repeat:
        ds = ds.repeat()
    rate = extractor.sample_rate
    augment_waveform = training and any("mask" not in key for key in augment)
    mask_features = training and has_feature_masks(augment)

    def read(path):
        audio = read_audio(path.decode(), rate, repair=True)
        return augment_audio(audio, augment, rate) if augment_waveform else audio

    def featurize(path, label):
        audio = tf.numpy_function(read, [path], tf.float32)
        audio.set_shape([None])
        features = extractor(audio, training=training)
        if mask_features:
            features = tf.numpy_function(
                lambda f: augment_features(f, augment), [features], tf.float32
            )
            features.set_shape([None, extractor.feature_size])
        return features, tf.shape(features)[0], label

    ds = ds.map(featurize, num_parallel_calls=tf.data.AUTOTUNE)
    longest = max(seconds for _, seconds in utterances)
    frames_per_bucket = max(1, extractor.num_frames(int(bucket_seconds * rate)))
    boundaries = list(
        range(frames_per_bucket, extractor.num_frames(int(longest * rate)) + 2, frames_per_bucket)
    )
    ds = ds.bucket_by_sequence_length(
        lambda f, n, y: n,
        boundaries or [frames_per_bucket],
        [plan.batch_size] * (len(boundaries or [0]) + 1),
        drop_remainder=plan.drop_remainder,
    )

    def to_inputs(features, lengths, label):
        if plan.pad_to_multiple > 1:
            features = pad_time_to_multiple(features, plan.pad_to_multiple)
        return {"features": features, "feature_lengths": lengths}, label

    return ds.map(to_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def load_speech_data(
    source: str = "demo-speech",
    features: dict | None = None,
    characters: str | None = None,
    vocabulary: str = "characters",
    vocab_size: int = 256,
    num_train: int = 0,
    num_valid: int = 200,
    num_test: int = 300,
    min_duration: float = 0.1,
    max_duration: float = 20.0,
    augment: dict | None = None,
    batching: Batching | None = None,
) -> SpeechData:
    """Load a speech source and build its pipelines.

    Args:
        source: str. `demo-speech`, a manifest (CSV/TSV), or a directory of split manifests.
        features: dict | None. `FeatureExtractor` arguments (kind, num_features, window_ms, ...).
        characters: str | None. The alphabet (default: space, apostrophe, a-z).
        vocabulary: str. `characters` (default) or `subword`: SentencePiece
            pieces learned from the training transcripts (`vocab_size` of them).
        num_train: int. Cap on training utterances (0 = all; demo-speech: how many to synthesize, default 6000).
        min_duration, max_duration: float. Seconds; others are skipped and counted.
        augment: dict | None. Training augmentation (see `augment.py`).
        batching: Batching | None. The training pipeline's plan (its `seed` also cuts the
            held-out splits); validation batches the same in order, one pass (default: 32
            utterances, padded to a multiple of 8).

    Example:
        >>> data = load_speech_data("demo-speech", batching=Batching(batch_size=16, repeat=True))
    """
    plan = batching or Batching()
    if vocabulary not in ("characters", "subword"):
        raise ValueError(f"vocabulary must be 'characters' or 'subword', got {vocabulary!r}")
    extractor = FeatureExtractor(**(features or {}))
    train, valid, test = read_speech_splits(source, num_train, num_valid, num_test, plan.seed)
    if vocabulary == "subword":
        vocabulary = SubwordVocabulary.train([u.transcript for u in train], vocab_size)
    else:
        vocabulary = CharVocabulary(characters) if characters else CharVocabulary()
    train_ok = usable_utterances(train, vocabulary, min_duration, max_duration, "train")
    valid_ok = (
        usable_utterances(valid, vocabulary, min_duration, max_duration, "valid") if valid else []
    )
    check_readable(test, "test")
    train_ds = make_speech_dataset(train_ok, extractor, vocabulary, plan, augment)
    valid_ds = (
        make_speech_dataset(valid_ok, extractor, vocabulary, plan.held_out()) if valid_ok else None
    )
    return SpeechData.from_splits(
        "speech", extractor, vocabulary, train_ds, valid_ds, train_ok, valid_ok, test
    )
