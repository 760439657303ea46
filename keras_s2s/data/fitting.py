"""Data settings fitted to a corpus: vocabulary size, `max_length`, training pairs used.

The zoo's translation cards are sized for the generated demo task (a
2,000-piece vocabulary, `max_length: 64`, 80,000 pairs). For any other
corpus the card's `data.fit_to_corpus` names the settings chosen from the
corpus itself instead; a setting given with `--set` (or left out of the list)
stays as written. Each choice is logged with its reason:

- `vocab_size`: one subword per 1,000 running words of training text (source
  and target together), rounded to the nearest of 2,000 / 4,000 / 8,000 /
  16,000 / 32,000 (on a log scale). Small corpora get small vocabularies,
  whose pieces are each seen often enough to be learned.
- `max_length`: the subword length that keeps 99.5% of a sample of the
  training pairs (both sides, with the end token), rounded up to a multiple
  of 8, so that at most about 1% of the pairs are dropped as too long. On
  fewer than 200 pairs that share is the longest pair itself, so there the
  outliers are left out first: pairs longer than the far fence of the
  lengths' quartiles (Q3 + 3 x IQR, and at least 2 x Q3), as one huge pair must not size every
  batch of a small corpus.
- `num_train`: every training pair (0), not the demo's 80,000.

Example:
    >>> fitted_vocab_size(pairs)
    (8000, '7,412,300 running words: one piece per 1,000 words')
"""

from __future__ import annotations

import math
import random

from keras_s2s.padding import round_up

VOCAB_SIZES = (2000, 4000, 8000, 16000, 32000)
WORDS_PER_PIECE = 1000
KEEP = 0.995  # of the sampled pairs: the rest of the 1% allowed is room for the sample's error
SAMPLE = 20000
FENCE = 3.0  # interquartile ranges above the third quartile: Tukey's far-out fence


def settings_to_fit(source, fit_to_corpus) -> set[str]:
    """The settings of `fit_to_corpus` that are chosen from the corpus: none for the generated demo task."""
    return set(fit_to_corpus or ()) if source != "demo" else set()


def fitted_vocab_size(pairs: list[tuple[str, str]]) -> tuple[int, str]:
    """The vocabulary size for these training pairs, and why."""
    words = sum(len(source.split()) + len(target.split()) for source, target in pairs)
    wanted = max(words / WORDS_PER_PIECE, 1.0)
    size = min(VOCAB_SIZES, key=lambda candidate: abs(math.log(candidate / wanted)))
    return (
        size,
        f"{words:,} running words: one piece per {WORDS_PER_PIECE:,} words, to the nearest of "
        f"{', '.join(f'{v:,}' for v in VOCAB_SIZES)}",
    )


def fitted_max_length(
    pairs: list[tuple[str, str]], tokenizer, limit: int | None = None, seed: int = 0
) -> tuple[int, str]:
    """The `max_length` that keeps 99.5% of (a sample of) these pairs, and why; at most `limit`.

    `tokenizer` None: the pairs are token ids already (an encoded corpus)."""
    sample = pairs if len(pairs) <= SAMPLE else random.Random(seed).sample(pairs, SAMPLE)
    sources, targets = [source for source, _ in sample], [target for _, target in sample]
    if tokenizer is not None:
        sources, targets = tokenizer.source.tokenize(sources), tokenizer.target.tokenize(targets)
    longest = sorted(max(len(s), len(t)) + 1 for s, t in zip(sources, targets))  # + the end token
    outliers = ""
    if len(longest) * (1 - KEEP) < 1:  # too few pairs for a 99.5% share to leave any out
        kept = _within_fence(longest)
        if len(kept) < len(longest):
            outliers = (
                f" after leaving out {len(longest) - len(kept)} outlier(s) of up to {longest[-1]}"
            )
        longest = kept
    length = longest[min(len(longest) - 1, math.ceil(KEEP * len(longest)) - 1)]
    fitted = round_up(length)
    reason = (
        f"keeps {100 * KEEP:g}% of {len(sample):,} sampled training pairs ({length} subwords"
        f"{outliers}, rounded up to 8)"
    )
    if limit is not None and fitted > limit:
        return limit, reason + f", capped at the model's {limit} positions"
    return fitted, reason


def _within_fence(lengths: list[int]) -> list[int]:
    """The sorted `lengths` up to the far fence Q3 + 3 x IQR, and at least 2 x Q3 (all of them when
    there are under 4)."""
    if len(lengths) < 4:
        return lengths
    quartile = lambda q: lengths[round(q * (len(lengths) - 1))]  # noqa: E731
    third = quartile(0.75)
    fence = max(third + FENCE * (third - quartile(0.25)), 2 * third)
    return [length for length in lengths if length <= fence]
