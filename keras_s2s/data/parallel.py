"""One call from a data spec to tokenizer + train/valid/test datasets.

Example:
    >>> data = load_parallel_data("demo", num_train=2000, vocab_size=1000)
    >>> data.tokenizer.vocab_size, data.test_sources[0]
"""

from __future__ import annotations

import dataclasses
import logging
import random
from pathlib import Path

import tensorflow as tf

from keras_s2s.data.corpus import read_parallel
from keras_s2s.data.demo import DemoCorpus
from keras_s2s.data.pipeline import make_dataset
from keras_s2s.data.tokenizer import SubwordTokenizer

log = logging.getLogger("keras_s2s")


@dataclasses.dataclass
class ParallelData:
    """Tokenizer, datasets and held-out raw text of a translation task."""

    tokenizer: SubwordTokenizer
    train: tf.data.Dataset
    valid: tf.data.Dataset
    train_pairs: list
    valid_pairs: list
    test_pairs: list
    demo: DemoCorpus | None = None

    @property
    def test_sources(self) -> list[str]:
        return [s for s, _ in self.test_pairs]

    @property
    def test_targets(self) -> list[str]:
        return [t for _, t in self.test_pairs]


def split_pairs(pairs: list, num_valid: int, num_test: int, seed: int):
    """Shuffle `pairs` with `seed` and cut off validation and test sets (at most 10% each)."""
    pairs = list(pairs)
    random.Random(seed).shuffle(pairs)
    num_valid = min(num_valid, len(pairs) // 10)
    num_test = min(num_test, len(pairs) // 10)
    test = pairs[:num_test]
    valid = pairs[num_test:num_test + num_valid]
    return pairs[num_test + num_valid:], valid, test


def read_splits(source: str | list[str], num_train: int = 50000, num_valid: int = 500, num_test: int = 500,
                seed: int = 0):
    """Raw (source, target) pairs of the train/valid/test splits and the demo corpus (or None).

    The same arguments always give the same splits, so a run can be evaluated later.
    """
    if source == "demo":
        demo = DemoCorpus(seed=seed)
        return (*demo.split(num_train, num_valid, num_test, seed=seed + 1), demo)
    paths = source.split(",") if isinstance(source, str) else list(source)
    pairs = list(zip(*read_parallel([Path(p) for p in paths])))
    train, valid, test = split_pairs(pairs, num_valid, num_test, seed)
    return (train[:num_train] if num_train else train), valid, test, None


def load_parallel_data(
    source: str | list[str] = "demo",
    vocab_size: int = 8000,
    batch_size: int = 64,
    max_length: int = 64,
    num_train: int = 50000,
    num_valid: int = 500,
    num_test: int = 500,
    seed: int = 0,
    bucket_width: int = 8,
    pad_to_multiple: int = 8,
    tokenizer: SubwordTokenizer | None = None,
    repeat: bool = False,
    drop_remainder: bool = False,
) -> ParallelData:
    """Load a parallel corpus and build its pipelines.

    Args:
        source: str | list[str]. `demo` (the generated task), a TSV path, or
            two aligned text files (a list, or one string "a.src,a.tgt").
        vocab_size: int. Subword vocabulary size (joint source+target).
        batch_size: int. Global batch size in sentences.
        num_train, num_valid, num_test: int. Split sizes (demo: generated;
            files: valid/test are cut from the shuffled corpus, at most 10% each).
        tokenizer: SubwordTokenizer | None. Reuse this one instead of training.
        repeat, drop_remainder: bool. For the training dataset.
    """
    train, valid, test, demo = read_splits(source, num_train, num_valid, num_test, seed)
    if tokenizer is None:
        texts = [s for s, _ in train] + [t for _, t in train]
        tokenizer = SubwordTokenizer.train(texts, vocab_size=vocab_size)
        log.info("trained a %d-piece SentencePiece vocabulary on %d sentence pairs", tokenizer.vocab_size, len(train))
    common = dict(tokenizer=tokenizer, batch_size=batch_size, max_length=max_length,
                  bucket_width=bucket_width, pad_to_multiple=pad_to_multiple)
    train_ds = make_dataset([s for s, _ in train], [t for _, t in train], shuffle=True, repeat=repeat,
                            drop_remainder=drop_remainder, seed=seed, **common)
    valid_ds = make_dataset([s for s, _ in valid], [t for _, t in valid], shuffle=False, **common) if valid else None
    return ParallelData(tokenizer, train_ds, valid_ds, train, valid, test, demo)
