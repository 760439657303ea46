"""CTC prefix beam search fused with a word n-gram language model (Hannun et al. 2014).

Each prefix scores `ln p_ctc + alpha * ln p_lm(words) + beta * words`; a word
is scored by the LM when the space after it (or the end) is decoded. The LM
is an ARPA file (`keras-s2s lm` writes one from transcripts, `ngram_lm.py`),
scored by KenLM when its pip package is installed (`pip install
"keras-s2s[lm]"`: fast, little memory) and else by the project's own ARPA
reader (same numbers, slower to load).

Why not pyctcdecode: its latest release (0.5.0) requires numpy < 2, and
installing it beside TensorFlow 2.21 downgrades numpy and breaks
`import tensorflow` (ml-dtypes needs numpy >= 2); the same shallow fusion is
a page of Python here.

Example:
    >>> decoder = LMDecoder(model.vocabulary, "runs/lm.arpa", alpha=0.5, beta=1.0, beam_width=32)
    >>> decoder.decode(log_probabilities, lengths)
    ['the red dog runs']
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from keras_s2s.config import MissingExtra
from keras_s2s.decoding.ngram_lm import EOS, KneserNeyLM, open_text

LN10 = math.log(10.0)


def check_arpa(path: str | Path) -> Path:
    """`path` if it is an ARPA file (plain or `.arpa.gz`); a clear error for a missing, empty or
    non-ARPA file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: language model not found (write one with keras-s2s lm)")
    try:
        with open_text(path) as f:
            head = f.read(4096)
    except (OSError, EOFError) as error:  # a damaged gzip stream
        raise ValueError(f"{path}: not a readable language model ({error})") from None
    if "\\data\\" not in head or "ngram 1=" not in head:
        raise ValueError(
            f"{path}: not an ARPA language model (no \\data\\ header with ngram counts)"
        )
    return path


class WordScorer:
    """ln p(word | previous words) from an ARPA file, by KenLM when installed, else `KneserNeyLM`."""

    def __init__(self, path: str | Path, engine: str = "auto"):
        self.path = path = check_arpa(path)
        self.kenlm = None
        if engine in ("auto", "kenlm"):
            try:
                import kenlm

                self.kenlm = kenlm.Model(str(path))
                self.order = self.kenlm.order
            except ImportError:
                if engine == "kenlm":
                    raise MissingExtra(
                        'KenLM is not installed: pip install "keras-s2s[lm]"'
                    ) from None
        if self.kenlm is None:
            self.model = KneserNeyLM.read_arpa(path)
            self.order = self.model.order
        self.cache: dict[tuple[str, ...], float] = {}

    def __call__(self, word: str, context: tuple[str, ...]) -> float:
        key = (*context[-(self.order - 1) :], word) if self.order > 1 else (word,)
        if key not in self.cache:
            if self.kenlm is not None:
                self.cache[key] = self._kenlm_score(key) * LN10
            else:
                self.cache[key] = self.model.log10_probability(word, key[:-1]) * LN10
        return self.cache[key]

    def _kenlm_score(self, key):
        import kenlm

        state, out = kenlm.State(), kenlm.State()
        if key[0] == "<s>":  # a sentence-initial context
            self.kenlm.BeginSentenceWrite(state)
            key = key[1:]
        else:
            self.kenlm.NullContextWrite(state)
        for word in key[:-1]:
            self.kenlm.BaseScore(state, word, out)
            state, out = out, state
        return self.kenlm.BaseScore(state, key[-1], out)


def _entry(beams: dict, prefix: str, lm: float) -> list[float]:
    """The scores of `prefix` in `beams`, added (probabilities 0, LM score `lm`) if new."""
    if prefix not in beams:
        beams[prefix] = [-math.inf, -math.inf, lm]
    return beams[prefix]


def _logsumexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    high = max(a, b)
    return high + math.log1p(math.exp(-abs(a - b)))


class LMDecoder:
    """Prefix beam search with an n-gram LM over a character CTC model's log-probabilities.

    Args:
        vocabulary: CharVocabulary. Its characters are the CTC classes 1..n (0 is the blank);
            the space separates words.
        lm_path: str | Path. An ARPA file.
        alpha: float. Language model weight.
        beta: float. Word insertion bonus.
        beam_width: int. Prefixes kept per frame.
        prune: float. Characters less likely than this (ln) in a frame are not extended
            (the most likely one always is).
    """

    def __init__(self, vocabulary, lm_path, alpha: float = 0.5, beta: float = 1.0,
                 beam_width: int = 32, prune: float = -8.0, engine: str = "auto"):  # fmt: skip
        if " " not in vocabulary.characters:
            raise ValueError("an LM needs word boundaries: the vocabulary has no space character")
        if beam_width < 1:
            raise ValueError(f"beam_width must be >= 1, got {beam_width}")
        self.characters = vocabulary.characters
        self.space = self.characters.index(" ") + 1
        self.alpha, self.beta, self.beam_width, self.prune = alpha, beta, beam_width, prune
        self.scorer = WordScorer(lm_path, engine)

    def decode(self, log_probabilities: np.ndarray, lengths) -> list[str]:
        """Text of each row of log-probabilities [B, T, classes], its first `lengths[b]` frames."""
        return [self.decode_one(row[:n]) for row, n in zip(log_probabilities, lengths, strict=True)]

    def _words(self, prefix: str) -> tuple[str, ...]:
        return tuple(prefix.split())

    def _word_bonus(self, prefix: str) -> float:
        """alpha * ln p_lm + beta for the word that `prefix` (ending with a space) just completed."""
        words = self._words(prefix)
        if not words:
            return 0.0
        return self.alpha * self.scorer(words[-1], ("<s>", *words[:-1])) + self.beta

    def decode_one(self, frames: np.ndarray) -> str:
        """Text of one utterance's log-probabilities [frames, classes]."""
        frames = np.asarray(frames, np.float64)
        # prefix -> [ln p(prefix, ends in blank), ln p(prefix, ends in its last character), LM score]
        beams: dict[str, list[float]] = {"": [0.0, -math.inf, 0.0]}
        for frame in frames:
            chosen = np.flatnonzero(frame >= min(self.prune, frame.max()))
            # plain Python numbers: the loop below runs per prefix and character
            candidates = list(zip(chosen.tolist(), frame[chosen].tolist(), strict=True))
            new: dict[str, list[float]] = {}
            entry = functools.partial(_entry, new)

            for prefix, (blank, nonblank, lm) in beams.items():
                total = _logsumexp(blank, nonblank)
                for c, p in candidates:
                    if c == 0:  # blank: the prefix stays
                        e = entry(prefix, lm)
                        e[0] = _logsumexp(e[0], total + p)
                        continue
                    char = self.characters[c - 1]
                    if prefix and prefix[-1] == char:
                        # a repeat without a blank between merges into the same prefix
                        e = entry(prefix, lm)
                        e[1] = _logsumexp(e[1], nonblank + p)
                        extended, source = prefix + char, blank
                    else:
                        extended, source = prefix + char, total
                    if c == self.space and (not prefix or prefix[-1] == " "):
                        e = entry(prefix, lm)  # no leading or double spaces: the prefix stays
                        e[1] = _logsumexp(e[1], source + p)
                        continue
                    bonus = self._word_bonus(extended) if c == self.space else 0.0
                    e = entry(extended, lm + bonus)
                    e[1] = _logsumexp(e[1], source + p)
            ranked = sorted(
                new.items(), key=lambda kv: _logsumexp(kv[1][0], kv[1][1]) + kv[1][2], reverse=True
            )
            beams = dict(ranked[: self.beam_width])
        return self._best(beams)

    def _best(self, beams: dict[str, list[float]]) -> str:
        """The prefix that scores best once its last word and the sentence end are scored."""

        def final(item):
            prefix, (blank, nonblank, lm) = item
            score = _logsumexp(blank, nonblank) + lm
            words = self._words(prefix)
            if prefix and prefix[-1] != " ":
                score += self._word_bonus(prefix + " ")
            return score + self.alpha * self.scorer(EOS, ("<s>", *words))

        return " ".join(max(beams.items(), key=final)[0].split())


def lm_decoder(vocabulary, lm_path, alpha: float = 0.5, beta: float = 1.0, beam_width: int = 1):
    """The `LMDecoder` a command's --lm/--alpha/--beta/--beam-width ask for (a beam width of 1,
    the greedy default, becomes 32), or None without `lm_path`."""
    if not lm_path:
        return None
    width = beam_width if beam_width > 1 else 32
    return LMDecoder(vocabulary, lm_path, alpha=alpha, beta=beta, beam_width=width)
