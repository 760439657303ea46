"""From a speech-synthesis corpus to (text ids, mel-spectrogram) batches for Tacotron 2.

Sources are those of speech recognition (`speech.py`): `demo-tts`, the
LJSpeech layout (`metadata.csv` + `wavs/`), a manifest, or a directory of
split manifests. Texts are normalized (`normalize_text`: numbers,
abbreviations, symbols) and encoded as characters (0 = padding). Targets are
log-mel spectrograms computed with `FeatureExtractor` (80 bands, 50 ms
window, 12.5 ms hop, 125-7600 Hz, natural log of the power floored at 1e-5,
no normalization), once per utterance: they are cached in memory (or in a
file, `cache: PATH`) after the first epoch. Batches are bucketed by length;
padded frames hold the log floor (silence), every utterance is followed by
at least `tail_steps` decoder steps of them (where the stop token is
trained), and the frame count is a multiple of the reduction factor. On
TensorFlow this runs in `tf.data`; elsewhere (JAX) `MelBatches` does the same
in NumPy threads (mel targets kept in memory), every batch of a length bucket
padded to the bucket's bound, so the step compiles once per bucket.

Example:
    >>> data = load_tts_data("demo-tts", batch_size=16, reduction_factor=2)
    >>> inputs, mel = next(iter(data.train))   # {"text", "mel", "mel_lengths"}, [B, T, 80]
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from keras_s2s.audio.features import FeatureExtractor
from keras_s2s.audio.io import read_audio
from keras_s2s.audio.manifest import Utterance
from keras_s2s.backend import tf
from keras_s2s.data.batches import (
    Batching,
    BucketedBatches,
    longest_per_bucket,
    padded_rows,
    with_default_workers,
)
from keras_s2s.data.speech import SpeechData, read_speech_splits, usable_utterances
from keras_s2s.padding import round_up
from keras_s2s.text.characters import CharVocabulary
from keras_s2s.text.corpus import CorpusError
from keras_s2s.text.normalization import TTS_CHARACTERS, normalize_text

MEL_FEATURES = {
    "kind": "logmel",
    "sample_rate": 22050,
    "num_features": 80,
    "window_ms": 50.0,
    "stride_ms": 12.5,
    "fmin": 125.0,
    "fmax": 7600.0,
    "preemphasis": 0.0,
    "dither": 0.0,
    "normalize": False,
    "log_floor": 1e-5,
}


def mel_extractor(**settings) -> FeatureExtractor:
    """The Tacotron 2 target extractor: `MEL_FEATURES` with `settings` changed."""
    return FeatureExtractor(**{**MEL_FEATURES, **settings})


def tts_vocabulary(characters: str | None = None) -> CharVocabulary:
    """Input characters of the synthesizer (id 0 = padding)."""
    return CharVocabulary(characters or TTS_CHARACTERS)


def normalized_utterances(utterances: list[Utterance]) -> list[Utterance]:
    """The utterances with their text in spoken form; text without a letter becomes empty (and is skipped)."""

    def spoken(text):
        text = normalize_text(text)
        return text if any(c.isalpha() for c in text) else ""

    return [dataclasses.replace(u, transcript=spoken(u.transcript)) for u in utterances]


# a synthesis pipeline's plan when none is given: 32 utterances, frames not padded beyond the
# reduction factor
TTS_BATCHING = Batching(pad_to_multiple=1)


class MelBatches(BucketedBatches):
    """({"text": [B, L], "mel": [B, T, M], "mel_lengths": [B]}, mel [B, T, M]) batches in NumPy: what
    `make_tts_dataset` gives on TensorFlow, as a `keras.utils.PyDataset` for the other backends.

    Utterances go to buckets of `bucket_seconds`; every batch of a bucket has
    the bucket's text length and frame count (its bound plus `tail_steps`
    decoder steps of silence, a multiple of `reduction_factor` and
    `pad_to_multiple`). Mel targets are computed once, in `workers` threads,
    and kept in memory unless `cache` is empty.

    Example:
        >>> batches = MelBatches(utterances, mel_extractor(), tts_vocabulary(), reduction_factor=2)
        >>> inputs, mel = batches[0]
    """

    def __init__(
        self,
        utterances: list[tuple[Utterance, float]],
        extractor: FeatureExtractor,
        vocabulary: CharVocabulary,
        reduction_factor: int = 1,
        batching: Batching | None = None,
        cache: str = "memory",
        bucket_seconds: float = 1.0,
        tail_steps: int = 0,
    ):
        plan = batching or TTS_BATCHING
        self.extractor, self.cache = extractor, {} if cache else None
        self.paths = [str(u.path) for u, _ in utterances]
        self.texts = [vocabulary.encode(u.transcript) for u, _ in utterances]
        self.silence = math.log(extractor.log_floor)
        self.tail_frames = tail_steps * reduction_factor
        self.multiple = math.lcm(reduction_factor, max(1, plan.pad_to_multiple))
        rate = extractor.sample_rate
        self.frames_per_bucket = max(1, extractor.num_frames(int(bucket_seconds * rate)))
        most = [extractor.num_frames(int(np.ceil(s * rate)) + 1) + 1 for _, s in utterances]
        buckets = [(frames - 1) // self.frames_per_bucket for frames in most]
        self.text_width = longest_per_bucket(buckets, self.texts)
        super().__init__(buckets, None, with_default_workers(plan))
        self.log_shapes("synthesis batches")

    def batch_shape(self, bucket: int, size: int) -> tuple[int, int, int]:
        frames = round_up((bucket + 1) * self.frames_per_bucket + self.tail_frames, self.multiple)
        return size, round_up(self.text_width[bucket], 8), frames

    def mel(self, index: int) -> np.ndarray:
        """The log-mel target [T, M] of utterance `index` (computed once when cached)."""
        if self.cache is not None and index in self.cache:
            return self.cache[index]
        mel = self.extractor.numpy_features(
            read_audio(self.paths[index], self.extractor.sample_rate, repair=True)
        )
        if self.cache is not None:
            self.cache[index] = mel
        return mel

    def make_batch(self, bucket: int, items: list[int], rng):
        _, text_width, frames = self.batch_shape(bucket, len(items))
        mels = [self.mel(index) for index in items]
        mel = padded_rows(mels, frames, self.silence, np.float32)
        inputs = {
            "text": padded_rows([self.texts[i] for i in items], text_width),
            "mel": mel,
            "mel_lengths": np.array([min(len(m), frames) for m in mels], np.int32),
        }
        return inputs, mel


def make_tts_dataset(
    utterances: list[tuple[Utterance, float]],
    extractor: FeatureExtractor,
    vocabulary: CharVocabulary,
    reduction_factor: int = 1,
    batching: Batching | None = None,
    cache: str = "memory",
    bucket_seconds: float = 1.0,
    tail_steps: int = 0,
):
    """Batched ({"text": [B, L], "mel": [B, T, M], "mel_lengths": [B]}, mel [B, T, M]) dataset.

    T is a multiple of `reduction_factor` (and of the plan's `pad_to_multiple`), with at
    least `tail_steps` decoder steps of silence after every utterance;
    `cache` is `memory`, a file path prefix, or empty for no caching. On TensorFlow a `tf.data`
    pipeline; elsewhere `MelBatches` (which caches in memory only). `batching`: the plan
    (default: 32 utterances, unpadded, shuffled, one pass).

    Example:
        >>> make_tts_dataset(utterances, mel_extractor(), tts_vocabulary(), 2, Batching(16))
    """
    plan = batching or TTS_BATCHING
    if not plan.tf_data:
        return MelBatches(
            utterances,
            extractor,
            vocabulary,
            reduction_factor,
            plan,
            cache,
            bucket_seconds,
            tail_steps,
        )
    texts = [vocabulary.encode(u.transcript) for u, _ in utterances]
    flat = np.fromiter((i for row in texts for i in row), dtype=np.int32)
    ragged = tf.RaggedTensor.from_row_lengths(flat, np.array([len(r) for r in texts], np.int64))
    paths = [str(u.path) for u, _ in utterances]
    rate, silence = extractor.sample_rate, math.log(extractor.log_floor)

    def featurize(path, text):
        audio = tf.numpy_function(
            lambda p: read_audio(p.decode(), rate, repair=True), [path], tf.float32
        )
        audio.set_shape([None])
        mel = extractor(audio)
        return text, mel, tf.shape(mel)[0]

    ds = tf.data.Dataset.from_tensor_slices((paths, ragged)).map(
        featurize, num_parallel_calls=tf.data.AUTOTUNE
    )
    if cache:
        ds = ds.cache("" if cache == "memory" else cache)
    if plan.shuffle:
        ds = ds.shuffle(len(paths), seed=plan.seed, reshuffle_each_iteration=True)
    if plan.repeat:
        ds = ds.repeat()
    longest = extractor.num_frames(int(max(seconds for _, seconds in utterances) * rate))
    per_bucket = max(1, extractor.num_frames(int(bucket_seconds * rate)))
    boundaries = list(range(per_bucket, longest + 2, per_bucket)) or [per_bucket]
    ds = ds.bucket_by_sequence_length(
        lambda t, m, n: n,
        boundaries,
        [plan.batch_size] * (len(boundaries) + 1),
        padding_values=(0, silence, 0),
        drop_remainder=plan.drop_remainder,
    )
    multiple = math.lcm(reduction_factor, max(1, plan.pad_to_multiple))

    def to_inputs(text, mel, lengths):
        frames = tf.shape(mel)[1] + tail_steps * reduction_factor
        mel = tf.pad(
            mel,
            [[0, 0], [0, frames - tf.shape(mel)[1] + (-frames) % multiple], [0, 0]],
            constant_values=silence,
        )
        return {"text": text, "mel": mel, "mel_lengths": lengths}, mel

    return ds.map(to_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def load_tts_data(
    source: str = "demo-tts",
    features: dict | None = None,
    characters: str | None = None,
    num_train: int = 0,
    num_valid: int = 100,
    num_test: int = 100,
    min_duration: float = 0.1,
    max_duration: float = 12.0,
    cache: str = "memory",
    reduction_factor: int = 1,
    tail_steps: int = 0,
    batching: Batching | None = None,
) -> SpeechData:
    """Load a synthesis corpus and build its pipelines.

    Args:
        source: str. `demo-tts`, an LJSpeech-layout folder, a manifest or a directory of split manifests.
        features: dict | None. Changes to `MEL_FEATURES` (window_ms, stride_ms, fmin, fmax, num_features, ...).
        characters: str | None. Input characters (default `TTS_CHARACTERS`).
        num_train: int. Cap on training utterances (0 = all; demo-tts: how many to synthesize, default 3000).
        min_duration, max_duration: float. Seconds; others are skipped and counted.
        cache: str. Where mel targets are kept after the first epoch: `memory`, a file prefix, or "".
        reduction_factor: int. Mel frames per decoder step (frame counts are padded to a multiple).
        tail_steps: int. Decoder steps of silence after every utterance (the model's `stop_tail`).
        batching: Batching | None. The training pipeline's plan (its `seed` also cuts the
            held-out splits); validation batches the same in order, one pass (default: 32
            utterances, unpadded).

    Example:
        >>> data = load_tts_data("demo-tts", reduction_factor=2, batching=Batching(batch_size=16))
    """
    plan = batching or TTS_BATCHING
    extractor = mel_extractor(**(features or {}))
    vocabulary = tts_vocabulary(characters)
    train, valid, test = (
        normalized_utterances(split)
        for split in read_speech_splits(source, num_train, num_valid, num_test, plan.seed)
    )
    train_ok = usable_utterances(train, vocabulary, min_duration, max_duration, "train")
    valid_ok = (
        usable_utterances(valid, vocabulary, min_duration, max_duration, "valid") if valid else []
    )
    test = (
        [u for u, _ in usable_utterances(test, vocabulary, min_duration, max_duration, "test")]
        if test
        else []
    )
    if not test:
        raise CorpusError(f"{source}: no usable held-out test utterances")
    common = dict(
        extractor=extractor,
        vocabulary=vocabulary,
        reduction_factor=reduction_factor,
        tail_steps=tail_steps,
    )
    train_ds = make_tts_dataset(train_ok, batching=plan, cache=cache, **common)
    valid_ds = (
        make_tts_dataset(valid_ok, batching=plan.held_out(), cache=cache and "memory", **common)
        if valid_ok
        else None
    )
    return SpeechData.from_splits(
        "synthesis", extractor, vocabulary, train_ds, valid_ds, train_ok, valid_ok, test
    )
