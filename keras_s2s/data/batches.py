"""The batch plan of every input pipeline (`Batching`), and length-bucketed batches without
TensorFlow: the base of the NumPy input pipelines.

A `Batching` says how examples become batches (the global batch size,
shuffling, repetition, the last smaller batch, the time padding, the seed,
the replicas each batch is split over, the threads that build them) and
which pipeline runs it: `tf.data` on Keras's TensorFlow backend, a
`BucketedBatches` `PyDataset` elsewhere. A training run's task builds it from
the card and the runtime and hands the same plan to every loader.

`jax.jit` compiles one step function per input shape, so batches of varying
lengths must come in few shapes. `BucketedBatches` puts every item in a
length bucket, plans each pass's batches (shuffled within buckets and in
order, from the seed and the pass number, so a pass is the same however many
threads build it), and asks its subclass to build one batch, padded to the
bucket's shape. It is a `keras.utils.PyDataset`: `model.fit` takes it, and
`workers` threads build batches ahead of the step.

With several processes training together (JAX's distributed runtime, the
`multiworker` strategy), every process plans the same global batches and
builds only its own rows of each (`backend.process_shard`).

Subclasses (`pipeline.BucketedPairs`, `speech.SpeechBatches`,
`tts.MelBatches`) implement `make_batch` and `batch_shape`.

Example:
    >>> plan = Batching(batch_size=32, repeat=True, pad_to_multiple=8)
    >>> batches = SpeechBatches(utterances, extractor, vocabulary, plan)
    >>> inputs, labels = batches[0]
    >>> batches.shapes()                 # {(32, 104), (32, 200), ...}
    >>> plan.held_out()                  # the same batches in order, one pass, every item
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import threading

import keras
import numpy as np

from keras_s2s.backend import is_tensorflow, process_shard
from keras_s2s.padding import PAD_MULTIPLE

log = logging.getLogger("keras_s2s")


def default_workers() -> int:
    """Threads that build batches: the cores, at most 8 (NumPy's FFT and reductions free the GIL)."""
    return max(1, min(8, os.cpu_count() or 1))


@dataclasses.dataclass(frozen=True)
class Batching:
    """How a pipeline batches its examples, on either backend.

    Args:
        batch_size: int. Examples per global batch (split over the replicas).
        shuffle: bool. Shuffle the examples (and, for `PyDataset`s, the order of batches) each pass.
        repeat: bool. Endless; otherwise one pass.
        drop_remainder: bool. Drop each length bucket's last, smaller batch.
        pad_to_multiple: int. Pad each batch's time axis to a multiple of this (8: the sizes
            16-bit kernels run fastest at; a run pads only under 16-bit compute; 1: no padding).
        seed: int. Where the shuffles and the random draws of augmentation start.
        replicas: int. Devices each batch is split over (`keras.distribution`: every batch's size is
            made a multiple of it; tf.distribute splits batches itself).
        workers: int | None. Threads building `PyDataset` batches ahead of the step (None: the
            cores, at most 8).

    Example:
        >>> Batching(batch_size=64, repeat=True).held_out()
        Batching(batch_size=64, shuffle=False, repeat=False, drop_remainder=False, ...)
    """

    batch_size: int = 32
    shuffle: bool = True
    repeat: bool = False
    drop_remainder: bool = False
    pad_to_multiple: int = PAD_MULTIPLE
    seed: int = 0
    replicas: int = 1
    workers: int | None = None

    def held_out(self) -> Batching:
        """The same batches for validation and evaluation: in order, one pass, every example."""
        return dataclasses.replace(self, shuffle=False, repeat=False, drop_remainder=False)

    @property
    def tf_data(self) -> bool:
        """Whether the pipeline is `tf.data` (Keras on TensorFlow) or a `PyDataset` (elsewhere):
        the one place the input pipelines choose by backend."""
        return is_tensorflow()


def with_default_workers(batching: Batching) -> Batching:
    """The plan with its `workers` set: the cores, at most 8, where it names none (the audio
    pipelines read, augment and featurize in those threads)."""
    return dataclasses.replace(batching, workers=batching.workers or default_workers())


class BucketedBatches(keras.utils.PyDataset):
    """Items grouped by `bucket_of[i]`, served as batches of `batch_sizes[bucket]` items.

    Args:
        bucket_of: list[int]. Each item's bucket (any non-negative ints).
        batch_sizes: list[int] | None. Items per batch of each bucket (None: the plan's
            `batch_size` for all).
        batching: Batching. Shuffling (within buckets and the order of batches, anew each pass),
            repetition (endless: Keras then counts steps itself; otherwise one pass, and indexing
            past it raises IndexError), the seed, the threads (`workers`, default 1 here), and
            the replicas: every batch's size is made a multiple of them (and of the worker
            processes), dropping at most `replicas - 1` items of a bucket's last batch.
    """

    def __init__(self, bucket_of: list[int], batch_sizes, batching: Batching):
        super().__init__(workers=batching.workers or 1, use_multiprocessing=False)
        self.shuffle, self.repeat = batching.shuffle, batching.repeat
        self.drop_remainder, self.seed = batching.drop_remainder, batching.seed
        batch_sizes = batching.batch_size if batch_sizes is None else batch_sizes
        self.buckets: dict[int, list[int]] = {}
        for index, bucket in enumerate(bucket_of):
            self.buckets.setdefault(int(bucket), []).append(index)
        sizes = batch_sizes if isinstance(batch_sizes, (list, tuple)) else None
        self.batch_size_of = {
            bucket: int(sizes[bucket] if sizes else batch_sizes) for bucket in self.buckets
        }
        self.shard, self.shards = process_shard()
        self.split_over = math.lcm(max(1, int(batching.replicas)), self.shards)
        uneven = sorted({size for size in self.batch_size_of.values() if size % self.split_over})
        if uneven:
            raise ValueError(
                f"batch size(s) {uneven} cannot be split evenly over {self.split_over} devices: give a "
                f"batch_size that is a multiple of {self.split_over}"
            )
        self.epoch = 0  # passes finished by `on_epoch_end` (one-pass datasets)
        self.start = 0  # batches skipped (`skip`): batch 0 is the stream's batch `start`
        self._plans: dict[int, list] = {}
        self._lock = threading.Lock()
        self.batches = self.plan(0)
        if not self.batches:
            raise ValueError(
                "no whole batch: fewer items in every length bucket than the batch size "
                "(use a smaller batch_size or keep the last, smaller batch)"
            )

    def plan(self, passes: int) -> list[tuple[int, list[int]]]:
        """(bucket, item indices) of every batch of pass `passes`, in the order they are served."""
        with self._lock:
            if passes not in self._plans:
                rng = np.random.default_rng([self.seed, passes])
                batches = []
                for bucket, members in sorted(self.buckets.items()):
                    members = list(rng.permutation(members)) if self.shuffle else members
                    size = self.batch_size_of[bucket]
                    for start in range(0, len(members), size):
                        chunk = [int(i) for i in members[start : start + size]]
                        if len(chunk) < size and self.drop_remainder:
                            continue
                        chunk = chunk[: len(chunk) - len(chunk) % self.split_over]  # split evenly
                        if chunk:
                            batches.append((bucket, chunk))
                if self.shuffle:
                    batches = [batches[i] for i in rng.permutation(len(batches))]
                self._plans = {p: b for p, b in self._plans.items() if p >= passes - 1}
                self._plans[passes] = batches
            return self._plans[passes]

    def shapes(self) -> set[tuple]:
        """The shapes (`batch_shape`) the batches of a pass have: one compiled step each (the rows
        this process reads)."""
        return {
            self.batch_shape(bucket, len(chunk) // self.shards) for bucket, chunk in self.batches
        }

    def log_shapes(self, what: str) -> None:
        log.info(
            "%s: %d batches a pass in %d shapes (one compiled step each)",
            what,
            len(self.batches),
            len(self.shapes()),
        )

    def batch_shape(self, bucket: int, size: int) -> tuple:
        """The shape that identifies a batch of `size` items from `bucket` (its padded lengths)."""
        raise NotImplementedError

    def make_batch(self, bucket: int, items: list[int], rng: np.random.Generator):
        """The (inputs, labels) of `items`, padded to `bucket`'s shape; `rng` for random draws."""
        raise NotImplementedError

    @property
    def num_batches(self):
        return None if self.repeat else len(self.batches)

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index: int):
        if not self.repeat and not 0 <= index < len(self.batches):
            raise IndexError(f"batch {index} of a {len(self.batches)}-batch pass")
        passes, position = divmod(int(index) + self.start, len(self.batches))
        passes += self.epoch
        bucket, items = self.plan(passes)[position]
        items = items[self.shard :: self.shards]  # this process's rows (all of them on one process)
        return self.make_batch(
            bucket, items, np.random.default_rng([self.seed, passes, position, 1])
        )

    def skip(self, count: int) -> BucketedBatches:
        """From batch `count` of the stream on, as `tf.data.Dataset.skip`: a resumed run goes on
        with the batches the interrupted one would have seen next. Returns this dataset."""
        self.start += int(count)
        return self

    def on_epoch_end(self):
        if not self.repeat:
            self.epoch += 1


def longest_per_bucket(buckets: list[int], rows: list) -> dict[int, int]:
    """The longest of `rows` (at least 1) in each bucket: the padded width of that bucket's batches."""
    longest: dict[int, int] = {}
    for bucket, row in zip(buckets, rows):
        longest[bucket] = max(longest.get(bucket, 1), len(row))
    return longest


def flat_rows(rows: list[list[int]], dtype=np.int32) -> tuple[np.ndarray, np.ndarray]:
    """`rows` of ids as one flat array and each row's length (int32): a ragged batch, or its file form.

    Example:
        >>> flat_rows([[5, 6], [7]])   # (array([5, 6, 7]), array([2, 1]))
    """
    lengths = np.fromiter((len(row) for row in rows), dtype=np.int32, count=len(rows))
    flat = np.fromiter((i for row in rows for i in row), dtype=dtype, count=int(lengths.sum()))
    return flat, lengths


def padded_rows(rows: list, width: int, value=0, dtype=np.int32) -> np.ndarray:
    """`rows` (sequences of ids, or arrays [T, F]) stacked and padded (or cut) to `width` along time."""
    first = np.asarray(rows[0])
    batch = np.full((len(rows), width) + first.shape[1:], value, dtype)
    for index, row in enumerate(rows):
        row = np.asarray(row)[:width]
        batch[index, : len(row)] = row
    return batch
