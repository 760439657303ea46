"""Input pipelines for translation: `tf.data` on TensorFlow, a `keras.utils.PyDataset` elsewhere.

Sentences are tokenized once (SentencePiece is fast and exact in Python),
then `tf.data` filters by length, shuffles, buckets by length, pads each batch
to a multiple of 8 (under mixed precision) and prefetches. On other backends
(JAX: no TensorFlow on the GPU machine) `BucketedPairs` does the same in
NumPy, padding every batch of a bucket to the bucket's upper bound, so that
`jax.jit` compiles one training step per bucket, not one per batch.

Example:
    >>> ds = make_dataset(sources, targets, tokenizer, Batching(batch_size=64, pad_to_multiple=8))
    >>> inputs, labels = next(iter(ds))   # {"source", "target_in"}, target_out
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from keras_s2s.backend import tf
from keras_s2s.data.batches import Batching, BucketedBatches, flat_rows, padded_rows
from keras_s2s.padding import pad_time_to_multiple, round_up
from keras_s2s.token_ids import BOS_ID, EOS_ID

log = logging.getLogger("keras_s2s")
# a translation pipeline's plan when none is given: 64 sentences, padded to a multiple of 8
TRANSLATION_BATCHING = Batching(batch_size=64)


def _ragged(rows: list[list[int]]) -> tf.RaggedTensor:
    flat, lengths = flat_rows(rows)
    return tf.RaggedTensor.from_row_lengths(flat, lengths.astype(np.int64))


def encode_pairs(sources, targets, tokenizer, max_length: int):
    """(source ids + EOS, target ids) of the pairs that fit `max_length`; `tokenizer` None: the
    sources and targets are token ids already."""
    src_ids, tgt_ids = sources, targets
    if tokenizer is not None:
        src_ids, tgt_ids = tokenizer.source.tokenize(sources), tokenizer.target.tokenize(targets)
    kept = [
        (s + [EOS_ID], t)
        for s, t in zip(src_ids, tgt_ids)
        if len(s) < max_length and len(t) < max_length
    ]
    dropped = len(src_ids) - len(kept)
    # more than 1%: said loudly, with the length that would fit
    if dropped and dropped > 0.01 * len(src_ids):
        longest = sorted(max(len(s), len(t)) for s, t in zip(src_ids, tgt_ids))
        fits = round_up(longest[min(len(longest) - 1, int(0.99 * len(longest)))] + 1)
        log.warning(
            "dropped %d of %d sentence pairs longer than %d tokens (%.1f%%, more than 1%%): "
            "--set max_length=%d keeps 99%% of them",
            dropped,
            len(src_ids),
            max_length,
            100 * dropped / len(src_ids),
            fits,
        )
    elif dropped:
        log.info(
            "dropped %d of %d sentence pairs longer than %d tokens",
            dropped,
            len(src_ids),
            max_length,
        )
    if not kept:
        raise ValueError(f"no sentence pair is shorter than max_length={max_length} tokens")
    return kept


def bucket_boundaries(max_length: int, bucket_width: int) -> list[int]:
    """The length buckets' upper bounds (one more bucket, for the longest, follows the last)."""
    return list(range(bucket_width, max_length + 1, bucket_width))


def longest_batch(
    batching: Batching, max_length: int, bucket_width: int, batch_tokens=None
) -> tuple[int, int]:
    """(rows, length) of the longest bucket's batches: the largest batch a training step sees."""
    boundaries = bucket_boundaries(max_length, bucket_width)
    rows = bucket_batch_sizes(boundaries, batching.batch_size, batch_tokens, max_length)[-1]
    return rows, round_up(round_up(max_length, bucket_width), max(batching.pad_to_multiple, 1))


def bucket_batch_sizes(
    boundaries: list[int], batch_size: int, batch_tokens: int | None = None, max_length: int = 64
) -> list[int]:
    """Sentences per batch for each length bucket (one more bucket than boundaries)."""
    if not batch_tokens:
        return [batch_size] * (len(boundaries) + 1)
    sizes = []
    for longest in boundaries + [max_length + 1]:
        size = max(1, batch_tokens // longest)
        sizes.append(size // 8 * 8 if size >= 8 else size)
    return sizes


def make_dataset(
    sources: list[str],
    targets: list[str],
    tokenizer,
    batching: Batching | None = None,
    max_length: int = 64,
    bucket_width: int = 8,
    batch_tokens: int | None = None,
):
    """Batched, bucketed teacher-forcing dataset: `tf.data` on TensorFlow, `BucketedPairs`
    elsewhere.

    Args:
        sources, targets: list[str]. Aligned sentences (token ids when `tokenizer` is None).
        tokenizer: SubwordTokenizer | None. None: the pairs are token ids (an encoded corpus).
        batching: Batching | None. The batch plan (default: 64 sentences, padded to a multiple
            of 8, shuffled, one pass).
        max_length: int. Pairs with a side longer than this (in tokens) are dropped.
        bucket_width: int. Width of the length buckets.
        batch_tokens: int | None. Token-based batching: each length bucket
            gets `batch_tokens // bucket length` sentences (a multiple of 8
            when that is at least 8) instead of the plan's `batch_size`.

    Example:
        >>> make_dataset(sources, targets, tokenizer, Batching(batch_size=32, repeat=True))
    """
    plan = batching or TRANSLATION_BATCHING
    pairs = encode_pairs(sources, targets, tokenizer, max_length)
    boundaries = bucket_boundaries(max_length, bucket_width)
    batch_sizes = bucket_batch_sizes(boundaries, plan.batch_size, batch_tokens, max_length)
    if not plan.tf_data:
        drop = plan.drop_remainder or (plan.shuffle and plan.repeat)
        return BucketedPairs(
            pairs, batch_sizes, bucket_width, dataclasses.replace(plan, drop_remainder=drop)
        )
    source = _ragged([s for s, _ in pairs])
    target_in = _ragged([[BOS_ID] + t for _, t in pairs])
    target_out = _ragged([t + [EOS_ID] for _, t in pairs])
    ds = tf.data.Dataset.from_tensor_slices((source, target_in, target_out))
    # slices of a RaggedTensor are ragged specs; passing them through map makes them dense tensors,
    # which bucket_by_sequence_length (padded_batch) needs
    ds = ds.map(lambda s, ti, to: (s, ti, to))
    if plan.shuffle:
        ds = ds.shuffle(min(len(pairs), 100_000), seed=plan.seed, reshuffle_each_iteration=True)
    if plan.repeat:
        ds = ds.repeat()
    ds = ds.bucket_by_sequence_length(
        element_length_func=lambda s, ti, to: tf.maximum(tf.shape(s)[0], tf.shape(ti)[0]),
        bucket_boundaries=boundaries,
        bucket_batch_sizes=batch_sizes,
        drop_remainder=plan.drop_remainder,
    )
    pad_to_multiple = plan.pad_to_multiple

    def to_model_inputs(s, ti, to):
        if pad_to_multiple > 1:
            s = pad_time_to_multiple(s, pad_to_multiple)
            ti, to = (
                pad_time_to_multiple(ti, pad_to_multiple),
                pad_time_to_multiple(to, pad_to_multiple),
            )
        return {"source": s, "target_in": ti}, to

    return ds.map(to_model_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


class BucketedPairs(BucketedBatches):
    """Bucketed, padded teacher-forcing batches in NumPy: what `make_dataset` gives on TensorFlow,
    as a `keras.utils.PyDataset` for the other backends.

    A pair goes to the bucket of its longer side (source + EOS, BOS + target) in
    steps of `bucket_width`; every batch of a bucket is padded to the bucket's
    upper bound (rounded up to the plan's `pad_to_multiple`), so there are at most
    as many batch shapes as buckets (plus the last, smaller batch of each bucket
    unless `drop_remainder`). See `batches.BucketedBatches` for the plan.

    Example:
        >>> batches = BucketedPairs(pairs, [64] * 9, bucket_width=8)
        >>> inputs, labels = batches[0]     # {"source": [64, 16], "target_in": [64, 16]}, [64, 16]
    """

    def __init__(
        self, pairs, batch_sizes: list[int], bucket_width: int = 8, batching: Batching | None = None
    ):
        plan = batching or TRANSLATION_BATCHING
        self.pairs = list(pairs)
        self.bucket_width, self.pad_to_multiple = bucket_width, max(1, plan.pad_to_multiple)
        last = len(batch_sizes) - 1
        buckets = [
            min((max(len(source), len(target) + 1) - 1) // bucket_width, last)
            for source, target in self.pairs
        ]
        super().__init__(buckets, list(batch_sizes), plan)
        self.log_shapes("translation batches")

    def _width(self, bucket: int) -> int:
        return round_up((bucket + 1) * self.bucket_width, self.pad_to_multiple)

    def batch_shape(self, bucket: int, size: int) -> tuple[int, int]:
        return size, self._width(bucket)

    def make_batch(self, bucket: int, items: list[int], rng):
        width = self._width(bucket)
        pairs = [self.pairs[i] for i in items]
        inputs = {
            "source": padded_rows([s for s, _ in pairs], width),
            "target_in": padded_rows([[BOS_ID] + t for _, t in pairs], width),
        }
        return inputs, padded_rows([t + [EOS_ID] for _, t in pairs], width)
