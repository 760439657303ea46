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

from keras_s2s.backend import tf
from keras_s2s.config import FITTABLE
from keras_s2s.corpora.translation_demo import DemoCorpus
from keras_s2s.data.batches import Batching
from keras_s2s.data.encoded import (
    FOLDER_SETTINGS,
    check_out_folder,
    is_encoded_corpus,
    read_encoded_splits,
    read_encoded_tokenizer,
    read_manifest,
    write_encoded_corpus,
)
from keras_s2s.data.fitting import fitted_max_length, fitted_vocab_size, settings_to_fit
from keras_s2s.data.sources import is_split_dir, read_split_dir, read_tfds
from keras_s2s.data.translation import TRANSLATION_BATCHING, longest_batch, make_dataset
from keras_s2s.text.corpus import read_parallel
from keras_s2s.text.tokenizer import TRAINING_SENTENCES, SubwordTokenizer, train_tokenizer

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
    # setting -> (value, reason), see data/fitting.py
    fitted: dict = dataclasses.field(default_factory=dict)
    # setting -> value an encoded corpus sets (its tokenizer's): data/encoded.py
    from_corpus: dict = dataclasses.field(default_factory=dict)
    longest_batch: tuple[int, int] | None = None  # (rows, length) of the largest training batch

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
    valid = pairs[num_test : num_test + num_valid]
    return pairs[num_test + num_valid :], valid, test


def read_splits(
    source: str | list[str],
    num_train: int = 50000,
    num_valid: int = 500,
    num_test: int = 500,
    seed: int = 0,
    direction: str | None = None,
):
    """Raw (source, target) pairs of the train/valid/test splits and the demo corpus (or None).

    `source`: `demo`, a TSV, two aligned files ("a.src,a.tgt" or a list), a
    directory of splits, an encoded corpus (`keras-s2s encode`; its training
    pairs are token ids), or `tfds:NAME/CONFIG`. The same arguments always
    give the same splits, so a run can be evaluated later.
    """
    if source == "demo":
        demo = DemoCorpus(seed=seed)
        return (*demo.split(num_train, num_valid, num_test, seed=seed + 1), demo)
    if isinstance(source, str) and source.startswith("tfds:"):
        train, valid, test = read_tfds(source, direction)
    elif is_encoded_corpus(source):  # stored in the order this function gave when it was encoded
        train, valid, test = read_encoded_splits(source)
        return (train[:num_train] if num_train else train), valid[:num_valid], test, None
    elif isinstance(source, str) and is_split_dir(source):
        train, valid, test = read_split_dir(source, direction)
    else:
        paths = source.split(",") if isinstance(source, str) else list(source)
        train, valid, test = list(zip(*read_parallel([Path(p) for p in paths]))), [], []
    if not valid or not test:  # cut the missing held-out splits from the training data
        train, cut_valid, cut_test = split_pairs(
            train, num_valid if not valid else 0, num_test if not test else 0, seed
        )
        valid, test = valid or cut_valid, test or cut_test
    else:
        train = list(train)
        random.Random(seed).shuffle(train)
    return (train[:num_train] if num_train else train), list(valid)[:num_valid], list(test), None


def load_parallel_data(
    source: str | list[str] = "demo",
    vocab_size: int = 8000,
    max_length: int = 64,
    num_train: int = 50000,
    num_valid: int = 500,
    num_test: int = 500,
    bucket_width: int = 8,
    batch_tokens: int | None = None,
    direction: str | None = None,
    tokenization: str = "sentencepiece",
    shared_vocabulary: bool = True,
    source_vocab_size: int | None = None,
    tokenizer: SubwordTokenizer | None = None,
    fit_to_corpus: list[str] | tuple = (),
    length_limit: int | None = None,
    batching: Batching | None = None,
) -> ParallelData:
    """Load a parallel corpus and build its pipelines.

    Args:
        source: str | list[str]. `demo` (the generated task), a TSV path,
            two aligned text files (a list, or one string "a.src,a.tgt"), a
            directory of train/valid/test splits, or `tfds:NAME/CONFIG`.
        vocab_size: int. Subword vocabulary size (joint source+target).
        batch_tokens: int | None. If set, batches hold about this many
            tokens (padded source or target, whichever is longer) instead
            of the plan's `batch_size` sentences.
        direction: str | None. `src-tgt` language codes for split directories
            with two files per split and for TFDS sets.
        tokenization: str. `sentencepiece` (learn subwords from raw text) or
            `pretokenized` (the text is already split into tokens by spaces).
        shared_vocabulary: bool. One joint vocabulary (default), or separate
            source and target vocabularies (a `TokenizerPair`).
        source_vocab_size: int | None. Source vocabulary size when separate
            (default `vocab_size`).
        num_train, num_valid, num_test: int. Split sizes (demo: generated;
            files: valid/test are cut from the shuffled corpus, at most 10% each).
        tokenizer: SubwordTokenizer | None. Reuse this one instead of training.
        fit_to_corpus: list[str]. Settings chosen from the corpus instead
            (any of `vocab_size`, `max_length`, `num_train`; not for the demo;
            see `keras_s2s.data.fitting`); the choices are in `.fitted`.
        length_limit: int | None. The most positions the model has: a fitted
            `max_length` stays within it.
        batching: Batching | None. The training pipeline's plan (its `seed` also cuts the
            held-out splits); validation batches the same in order, one pass (default: 64
            sentences, padded to a multiple of 8).

    Example:
        >>> data = load_parallel_data("demo", batching=Batching(batch_size=32, repeat=True))
    """
    plan = batching or TRANSLATION_BATCHING
    seed = plan.seed
    unknown = sorted(set(fit_to_corpus) - set(FITTABLE))
    if unknown:
        raise ValueError(
            f"data.fit_to_corpus: cannot fit {', '.join(unknown)}; it may name "
            f"{', '.join(FITTABLE)}"
        )
    encoded = is_encoded_corpus(source)
    fit = settings_to_fit(source, fit_to_corpus) - ({"vocab_size"} if encoded else set())
    if "num_train" in fit:
        num_train = 0
    train, valid, test, demo = read_splits(source, num_train, num_valid, num_test, seed, direction)
    fitted = {"num_train": (0, f"all {len(train):,} training pairs")} if "num_train" in fit else {}
    from_corpus = {}
    if encoded:
        tokenizer, from_corpus = _encoded_tokenizer(source, tokenizer)
    # a resumed run: its tokenizer was fitted before
    elif "vocab_size" in fit and tokenizer is not None:
        fitted["vocab_size"] = (tokenizer.vocab_size, "the run's tokenizer")
    elif "vocab_size" in fit and tokenization == "sentencepiece":
        vocab_size, reason = fitted_vocab_size(train)
        fitted["vocab_size"] = (vocab_size, reason)
    if tokenizer is None:
        tokenizer = _learn_tokenizer(
            train, tokenization, vocab_size, shared_vocabulary, source_vocab_size
        )
    pairs_tokenizer = None if encoded else tokenizer  # encoded: the training pairs are ids already
    if "max_length" in fit:
        max_length, reason = fitted_max_length(
            train, pairs_tokenizer, limit=length_limit, seed=seed
        )
        fitted["max_length"] = (max_length, reason)
    shapes = dict(max_length=max_length, bucket_width=bucket_width, batch_tokens=batch_tokens)
    train_ds = make_dataset(
        [s for s, _ in train], [t for _, t in train], pairs_tokenizer, plan, **shapes
    )
    valid_ds = (
        make_dataset(
            [s for s, _ in valid], [t for _, t in valid], tokenizer, plan.held_out(), **shapes
        )
        if valid
        else None
    )
    longest = longest_batch(plan, max_length, bucket_width, batch_tokens)
    return ParallelData(
        tokenizer,
        train_ds,
        valid_ds,
        train,
        valid,
        test,
        demo,
        fitted=fitted,
        from_corpus=from_corpus,
        longest_batch=longest,
    )


def _learn_tokenizer(train, tokenization, vocab_size, shared_vocabulary, source_vocab_size):
    """A tokenizer learned on the training pairs' text, logged with its size."""
    tokenizer = train_tokenizer(
        tokenization,
        [s for s, _ in train],
        [t for _, t in train],
        vocab_size,
        shared=shared_vocabulary,
        source_vocab_size=source_vocab_size,
    )
    sizes = (
        f"{tokenizer.vocab_size}-entry joint"
        if shared_vocabulary
        else f"{tokenizer.source_vocab_size}-entry source and {tokenizer.vocab_size}-entry target"
    )
    sample = (
        f" (learned from a sample of {TRAINING_SENTENCES:,} sentences)"
        if tokenization == "sentencepiece"
        and len(train) * (1 + shared_vocabulary) > TRAINING_SENTENCES
        else ""
    )
    log.info(
        "built a %s %s vocabulary on %d sentence pairs%s", sizes, tokenization, len(train), sample
    )
    return tokenizer


def _encoded_tokenizer(folder, run_tokenizer):
    """An encoded corpus's tokenizer and the data settings it fixes; a resumed run's tokenizer (or that
    of the weights a new run starts from) must be the corpus's."""
    manifest = read_manifest(folder)
    tokenizer = read_encoded_tokenizer(folder, manifest)
    if run_tokenizer is not None and run_tokenizer.get_config() != tokenizer.get_config():
        raise ValueError(
            f"{folder}: this encoded corpus's tokenizer is not the run's; a run continues on the "
            "corpus (and vocabulary) it started with, and one from trained weights "
            "(training.init_from) reads text with theirs: give the corpus as text"
        )
    settings = {key: manifest[key] for key in FOLDER_SETTINGS if key in manifest}
    if manifest["shared_vocabulary"]:
        settings.pop("source_vocab_size", None)
    log.info(
        "encoded corpus %s: %s training pairs as token ids, %s vocabulary of %d pieces",
        folder,
        f"{manifest['pairs']['train']:,}",
        "a joint" if manifest["shared_vocabulary"] else "a separate",
        manifest["vocab_size"],
    )
    return tokenizer, settings


def encode_corpus(
    source,
    out,
    vocab_size: int | None = None,
    tokenization: str = "sentencepiece",
    shared_vocabulary: bool = True,
    source_vocab_size: int | None = None,
    num_valid: int = 500,
    num_test: int = 500,
    seed: int = 0,
    direction: str | None = None,
) -> dict:
    """Learn the vocabulary on a corpus and write it as an encoded corpus (`data/encoded.py`): every
    training pair as token ids, the held-out splits as text. Returns the folder's manifest.

    `vocab_size` None: fitted to the corpus (`data.fitting`, as `fit_to_corpus` would). The other
    arguments are `load_parallel_data`'s.

    Example:
        >>> encode_corpus("corpus/", "corpus_ids/")["pairs"]
        {'train': 559696, 'valid': 300, 'test': 2000}
    """
    if source == "demo":
        raise ValueError(
            "the demo task is generated when a run starts; encode a corpus on disk (a TSV, a "
            "split directory, aligned files)"
        )
    if is_encoded_corpus(source):
        raise ValueError(f"{source} is an encoded corpus already")
    check_out_folder(Path(out))
    train, valid, test, _ = read_splits(source, 0, num_valid, num_test, seed, direction)
    if vocab_size is None:
        vocab_size, reason = fitted_vocab_size(train)
        log.info("vocab_size fitted to the corpus: %d - %s", vocab_size, reason)
    tokenizer = _learn_tokenizer(
        train, tokenization, vocab_size, shared_vocabulary, source_vocab_size
    )
    sources = tokenizer.source.tokenize([s for s, _ in train])
    targets = tokenizer.target.tokenize([t for _, t in train])
    return write_encoded_corpus(
        Path(out), list(zip(sources, targets)), valid, test, tokenizer, tokenization, source
    )
