"""Word n-gram language models for CTC decoding: a modified Kneser-Ney estimator writing ARPA files.

No package available here builds ARPA files (KenLM's `lmplz` is not part of
its pip package), so the project estimates its own: interpolated modified
Kneser-Ney (Chen & Goodman 1998) with three discounts per order from the
count-of-counts, continuation counts for the lower orders, `<s>`-initial
n-grams counted as they occur, and `<unk>` given the mass left over by the
unigram discounts. Optional count pruning keeps the file small; the backoff
weights are computed after pruning, so every context still sums to one.
The ARPA text is what KenLM (and so pyctcdecode) reads.

Example:
    >>> lm = KneserNeyLM.estimate(["the cat sat", "the dog sat"], order=3)
    >>> lm.write_arpa("lm.arpa")
    >>> round(lm.log10_probability("sat", ("the", "cat")), 3)
"""

from __future__ import annotations

import gzip
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from keras_s2s.files import atomic_write

BOS, EOS, UNK = "<s>", "</s>", "<unk>"


def open_text(path: str | Path):
    """A text file opened for reading, gunzipped on the fly when its name ends in `.gz`."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


NO_PROBABILITY = -99.0  # ARPA's log10 "never predicted" for <s>


def _discounts(adjusted: Counter) -> tuple[float, float, float]:
    """D1, D2, D3+ of one order from its count-of-counts (Chen & Goodman's estimates), clamped
    to [0, k] for tiny corpora where some count-of-counts are zero."""
    t = Counter(min(c, 4) for c in adjusted.values())
    n1, n2, n3, n4 = (t[k] for k in (1, 2, 3, 4))
    if n1 == 0 or n2 == 0:
        return 0.5, 1.0, 1.5
    y = n1 / (n1 + 2 * n2)
    d1 = 1 - 2 * y * n2 / n1
    d2 = 2 - 3 * y * n3 / n2
    d3 = 3 - 4 * y * n4 / n3 if n3 else 2.5
    return tuple(min(max(d, 0.05), k) for d, k in ((d1, 1.0), (d2, 2.0), (d3, 3.0)))


class KneserNeyLM:
    """An estimated model: `probabilities[n][ngram]` (log10) and `backoffs[n][context]` (log10).

    Args:
        order: int. Longest n-gram.
        probabilities, backoffs: one dict per order 1..order, keyed by word tuples.
    """

    def __init__(self, order: int, probabilities: list[dict], backoffs: list[dict]):
        self.order, self.probabilities, self.backoffs = order, probabilities, backoffs

    @classmethod
    def estimate(
        cls, sentences: Iterable[str], order: int = 3, prune: tuple[int, ...] = ()
    ) -> KneserNeyLM:
        """Estimate from sentences (one string each, words separated by spaces).

        Args:
            order: int. 1 or more.
            prune: tuple[int]. Per order from 2 on, drop n-grams seen fewer times than this
                (e.g. `(1, 2)` for a trigram: keep every bigram, trigrams seen twice or more).
        """
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        counts = [Counter() for _ in range(order + 1)]  # counts[n][ngram], raw
        for sentence in sentences:
            words = [BOS, *sentence.split(), EOS]
            for end in range(1, len(words)):
                for n in range(1, min(order, end + 1) + 1):
                    counts[n][tuple(words[end - n + 1 : end + 1])] += 1
        if not counts[1]:
            raise ValueError("no sentences to estimate a language model from")
        adjusted = cls._adjusted_counts(counts, order)
        kept = cls._prune(adjusted, order, prune)
        vocabulary = {g[0] for g in adjusted[1]} | {UNK}
        return cls(order, *cls._interpolate(adjusted, kept, order, len(vocabulary)))

    @staticmethod
    def _adjusted_counts(counts, order):
        """Highest order and <s>-initial n-grams: raw counts; the rest: distinct left extensions."""
        adjusted = [Counter() for _ in range(order + 1)]
        adjusted[order] = Counter(counts[order])
        for n in range(order - 1, 0, -1):
            for ngram, count in counts[n].items():
                if ngram[0] == BOS:
                    adjusted[n][ngram] = count
            for longer in counts[n + 1]:
                if longer[1] != BOS:
                    adjusted[n][longer[1:]] += 1
        return adjusted

    @staticmethod
    def _prune(adjusted, order, prune):
        """The n-grams written, top order first: those counted often enough, plus every context
        and suffix a kept longer n-gram needs (ARPA readers back off through both)."""
        kept = [set() for _ in range(order + 2)]
        for n in range(order, 0, -1):
            threshold = prune[n - 2] if n >= 2 and len(prune) >= n - 1 else 1
            kept[n] = {g for g, a in adjusted[n].items() if a >= threshold}
            kept[n] |= {g[:-1] for g in kept[n + 1]} | {g[1:] for g in kept[n + 1]}
        return kept[: order + 1]

    @staticmethod
    def _interpolate(adjusted, kept, order, vocabulary_size):
        probabilities = [dict() for _ in range(order + 1)]
        backoffs = [dict() for _ in range(order + 1)]
        for n in range(1, order + 1):
            d = _discounts(adjusted[n])
            totals, kept_mass = defaultdict(float), defaultdict(float)
            for ngram, a in adjusted[n].items():
                totals[ngram[:-1]] += a
                if ngram in kept[n]:
                    kept_mass[ngram[:-1]] += max(a - d[min(a, 3) - 1], 0.0)
            gamma = {h: 1.0 - kept_mass[h] / total for h, total in totals.items()}
            for ngram in kept[n]:
                a, context = adjusted[n].get(ngram, 0), ngram[:-1]
                if ngram == (BOS,):
                    continue
                own = max(a - d[min(a, 3) - 1], 0.0) / totals[context] if a else 0.0
                if n == 1:
                    lower = 1.0 / vocabulary_size
                else:
                    lower = 10 ** _lookup(probabilities, backoffs, ngram[1:])
                probabilities[n][ngram] = math.log10(max(own + gamma[context] * lower, 1e-99))
            for context, weight in gamma.items():
                if n == 1 or context in kept[n - 1]:
                    backoffs[n - 1][context] = math.log10(max(weight, 1e-99))
        probabilities[1][(BOS,)] = NO_PROBABILITY
        probabilities[1][(UNK,)] = math.log10(10 ** backoffs[0][()] / vocabulary_size)
        return probabilities[1:], [backoffs[n] for n in range(1, order + 1)]

    def log10_probability(self, word: str, context: tuple[str, ...] = ()) -> float:
        """log10 p(word | context), backing off as an ARPA reader does (unknown words: `<unk>`)."""
        context = tuple(context)[-(self.order - 1) :] if self.order > 1 else ()
        if (word,) not in self.probabilities[0]:
            word = UNK
        return _lookup([{}] + self.probabilities, [{}] + self.backoffs, (*context, word))

    def with_words(self, frequencies: dict[str, float]) -> KneserNeyLM:
        """A copy that also knows the words of `frequencies` (word -> its share of general text, e.g.
        `wordfreq.word_frequency`) it lacks: each such word gets its own share as a unigram
        probability, the model's words keep the rest in proportion, and every backoff weight is
        recomputed, so each context still sums to one. A word the model's text never had then
        scores by its frequency in general English (after the context's backoff), not as `<unk>`.

        Example:
            >>> general = lm.with_words({"misanthrope": 2e-7, "the": 0.05})   # "the" is kept as it was
        """
        known = self.probabilities[0]
        new = {(w,): f for w, f in frequencies.items() if (w,) not in known and f > 0 and w.strip()}
        mass = sum(new.values())
        if not new:
            return self
        if mass >= 1:
            raise ValueError(f"the new words' frequencies add up to {mass:.3f}: not shares of text")
        keep = math.log10(1.0 - mass)
        unigrams = {g: (p if p <= NO_PROBABILITY else p + keep) for g, p in known.items()}
        unigrams.update({g: math.log10(f) for g, f in new.items()})
        probabilities = [unigrams, *self.probabilities[1:]]
        backoffs = [dict(table) for table in self.backoffs]
        tables = ([{}] + probabilities, [{}] + backoffs)
        for n in range(2, self.order + 1):  # contexts of n - 1 words, the shorter ones first
            seen, lower = defaultdict(float), defaultdict(float)
            for ngram, log10_p in probabilities[n - 1].items():
                seen[ngram[:-1]] += 10**log10_p
                lower[ngram[:-1]] += 10 ** _lookup(*tables, ngram[1:])
            for context in backoffs[n - 2]:
                left, room = 1.0 - seen.get(context, 0.0), 1.0 - lower.get(context, 0.0)
                backoffs[n - 2][context] = math.log10(max(left, 1e-99) / max(room, 1e-99))
        return KneserNeyLM(self.order, probabilities, backoffs)

    @classmethod
    def read_arpa(cls, path: str | Path) -> KneserNeyLM:
        """A model from an ARPA file, plain or gzipped (`.arpa.gz`); any ARPA back-off model, not only
        ones written here."""
        probabilities: list[dict] = []
        backoffs: list[dict] = []
        n = 0
        with open_text(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("ngram ") or line == "\\data\\":
                    continue
                if line == "\\end\\":
                    break
                header = re.fullmatch(r"\\(\d+)-grams:", line)
                if header:
                    n = int(header.group(1))
                    probabilities.append({}), backoffs.append({})
                    continue
                fields = line.split()
                if n == 0 or len(fields) not in (n + 1, n + 2):
                    raise ValueError(f"{path}:{number}: not an ARPA {n}-gram line: {line[:80]!r}")
                ngram = tuple(fields[1 : n + 1])
                probabilities[n - 1][ngram] = float(fields[0])
                if len(fields) == n + 2:
                    backoffs[n - 1][ngram] = float(fields[-1])
        if not probabilities:
            raise ValueError(f"{path}: no n-grams (not an ARPA file?)")
        return cls(len(probabilities), probabilities, backoffs)

    def write_arpa(self, path: str | Path) -> Path:
        """Write the model as an ARPA file (all or nothing), gzipped when `path` ends in `.gz`."""
        zipped = str(path).endswith(".gz")

        def write(partial):
            opener = gzip.open(partial, "wt", encoding="utf-8") if zipped else None
            with opener or open(partial, "w", encoding="utf-8") as out:
                out.write("\n\\data\\\n")
                for n, table in enumerate(self.probabilities, 1):
                    out.write(f"ngram {n}={len(table)}\n")
                for n, table in enumerate(self.probabilities, 1):
                    out.write(f"\n\\{n}-grams:\n")
                    backoffs = self.backoffs[n - 1] if n < self.order else {}
                    for ngram in sorted(table):
                        line = f"{table[ngram]:.6f}\t{' '.join(ngram)}"
                        if ngram in backoffs:
                            line += f"\t{backoffs[ngram]:.6f}"
                        out.write(line + "\n")
                out.write("\n\\end\\\n")

        atomic_write(path, write)
        return Path(path)


def _lookup(probabilities, backoffs, ngram: tuple[str, ...]) -> float:
    """log10 p(ngram[-1] | ngram[:-1]) from per-order tables indexed 1..order (index 0 unused)."""
    n = len(ngram)
    if ngram in probabilities[n]:
        return probabilities[n][ngram]
    if n == 1:
        return probabilities[1].get((UNK,), NO_PROBABILITY)
    return backoffs[n - 1].get(ngram[:-1], 0.0) + _lookup(probabilities, backoffs, ngram[1:])
