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


def _entry(beams: dict, key: tuple, lm: float) -> list[float]:
    """The scores of prefix `key` in `beams`, added (probabilities 0, LM score `lm`) if new."""
    if key not in beams:
        beams[key] = [-math.inf, -math.inf, lm]
    return beams[key]


def _logsumexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    high = max(a, b)
    return high + math.log1p(math.exp(-abs(a - b)))


def arpa_words(path: str | Path) -> set[str]:
    """The words of an ARPA file's unigram section (without `<s>`, `</s>`, `<unk>`)."""
    words, in_unigrams = set(), False
    with open_text(check_arpa(path)) as f:
        for line in f:
            line = line.strip()
            if line == "\\1-grams:":
                in_unigrams = True
            elif in_unigrams and line.startswith("\\"):
                break
            elif in_unigrams and line:
                words.add(line.split()[1])
    return words - {"<s>", "</s>", "<unk>"}


class Lexicon:
    """The words a search spells, as the set of every word and every beginning of one (a trie's
    nodes, as strings: a partial word is in the lexicon while it begins some word).

    Example:
        >>> lexicon = Lexicon(["boat", "bolt"])
        >>> lexicon.begins("bo"), lexicon.begins("bot"), "boat" in lexicon
        (True, False, True)
    """

    def __init__(self, words):
        self.words = frozenset(w for w in words if w)
        self.beginnings = frozenset(w[:i] for w in self.words for i in range(1, len(w) + 1))

    def begins(self, partial: str) -> bool:
        return partial in self.beginnings

    def __contains__(self, word: str) -> bool:
        return word in self.words

    def __len__(self) -> int:
        return len(self.words)


class LMDecoder:
    """Prefix beam search with an n-gram LM over a CTC model's log-probabilities (characters or
    subword pieces), optionally held to a lexicon.

    Args:
        vocabulary: CharVocabulary | SubwordVocabulary. What each class spells
            (`fragments()`); a space (a character, or a piece's word mark) separates words.
        lm_path: str | Path. An ARPA file.
        alpha: float. Language model weight.
        beta: float. Word insertion bonus.
        beam_width: int. Prefixes kept per frame.
        prune: float. Classes less likely than this (ln) in a frame are not extended
            (the most likely one always is).
        lexicon: bool | Lexicon | iterable of words. The words the search spells freely (True:
            the LM's own words); a word outside it costs `oov_penalty` (ln), once, as soon as its
            spelling leaves every lexicon word (or at its end, if it only begins one), and is
            scored by the LM as `<unk>`. None/False: every spelling is free (no lexicon).
        oov_penalty: float. <= 0; -inf forbids words outside the lexicon.
    """

    def __init__(self, vocabulary, lm_path, alpha: float = 0.5, beta: float = 1.0,
                 beam_width: int = 32, prune: float = -8.0, engine: str = "auto",
                 lexicon=None, oov_penalty: float = -5.0):  # fmt: skip
        self.fragments = vocabulary.fragments()
        if not any(f.startswith(" ") for f in self.fragments):
            raise ValueError("an LM needs word boundaries: the vocabulary has no space character")
        if beam_width < 1:
            raise ValueError(f"beam_width must be >= 1, got {beam_width}")
        if oov_penalty > 0:
            raise ValueError(f"oov_penalty is a penalty: <= 0, got {oov_penalty}")
        self.alpha, self.beta, self.beam_width, self.prune = alpha, beta, beam_width, prune
        self.scorer = WordScorer(lm_path, engine)
        if lexicon is True:
            lexicon = Lexicon(arpa_words(self.scorer.path))
        elif lexicon and not isinstance(lexicon, Lexicon):
            lexicon = Lexicon(lexicon)
        self.lexicon, self.oov_penalty = lexicon or None, oov_penalty

    def decode(self, log_probabilities: np.ndarray, lengths) -> list[str]:
        """Text of each row of log-probabilities [B, T, classes], its first `lengths[b]` frames."""
        return [self.decode_one(row[:n]) for row, n in zip(log_probabilities, lengths, strict=True)]

    def _word_score(self, text: str) -> float:
        """alpha * ln p_lm + beta for the last word of `text` (complete now), with the lexicon's
        penalty if the word is not in it but its spelling never left it (the penalty was not paid)."""
        words = text.split()
        score = self.alpha * self.scorer(words[-1], ("<s>", *words[:-1])) + self.beta
        if self.lexicon is not None and words[-1] not in self.lexicon:
            if self.lexicon.begins(words[-1]):
                score += self.oov_penalty
        return score

    def _extend(self, text: str, fragment: str) -> tuple[str | None, float]:
        """`text` with `fragment` added, and what that adds to the LM score; None when the fragment
        adds nothing (a space at the start or after a space)."""
        if fragment.startswith(" "):
            rest = fragment[1:]
            if not text or text.endswith(" "):  # no word to end: a leading or double space
                return (text + rest if rest else None), self._spelled("", rest)
            return text + " " + rest, self._word_score(text) + self._spelled("", rest)
        partial = text[text.rfind(" ") + 1 :]
        return text + fragment, self._spelled(partial, fragment)

    def _spelled(self, partial: str, fragment: str) -> float:
        """The lexicon's penalty when `partial` + `fragment` leaves every lexicon word (0 while
        it begins one, or once it left)."""
        if self.lexicon is None or not fragment:
            return 0.0
        inside = not partial or self.lexicon.begins(partial)
        return self.oov_penalty if inside and not self.lexicon.begins(partial + fragment) else 0.0

    def decode_one(self, frames: np.ndarray) -> str:
        """Text of one utterance's log-probabilities [frames, classes]."""
        frames = np.asarray(frames, np.float64)
        # (text, last class) -> [ln p(ends in blank), ln p(ends in the last class), LM score]
        beams: dict[tuple[str, int], list[float]] = {("", 0): [0.0, -math.inf, 0.0]}
        extended_cache: dict[tuple[str, int], tuple[str | None, float]] = {}
        for frame in frames:
            chosen = np.flatnonzero(frame >= min(self.prune, frame.max()))
            # plain Python numbers: the loop below runs per prefix and class
            candidates = list(zip(chosen.tolist(), frame[chosen].tolist(), strict=True))
            new: dict[tuple[str, int], list[float]] = {}
            entry = functools.partial(_entry, new)

            for (text, last), (blank, nonblank, lm) in beams.items():
                total = _logsumexp(blank, nonblank)
                for c, p in candidates:
                    if c == 0:  # blank: the prefix stays
                        e = entry((text, last), lm)
                        e[0] = _logsumexp(e[0], total + p)
                        continue
                    source = total
                    if c == last:  # a repeat without a blank between merges into the same prefix
                        e = entry((text, last), lm)
                        e[1] = _logsumexp(e[1], nonblank + p)
                        source = blank  # a new token of the same class needs a blank between
                    if (text, c) not in extended_cache:
                        extended_cache[(text, c)] = self._extend(text, self.fragments[c])
                    extended, added = extended_cache[(text, c)]
                    if extended is None:  # a space that adds nothing: the text stays
                        extended, added = text, 0.0
                    e = entry((extended, c), lm + added)
                    e[1] = _logsumexp(e[1], source + p)
            ranked = sorted(
                new.items(), key=lambda kv: _logsumexp(kv[1][0], kv[1][1]) + kv[1][2], reverse=True
            )
            beams = dict(ranked[: self.beam_width])
        return self._best(beams)

    def _best(self, beams: dict) -> str:
        """The text that scores best once its last word and the sentence end are scored."""

        def final(item):
            (text, _), (blank, nonblank, lm) = item
            score = _logsumexp(blank, nonblank) + lm
            if text and not text.endswith(" "):
                score += self._word_score(text)
            return score + self.alpha * self.scorer(EOS, ("<s>", *text.split()))

        return " ".join(max(beams.items(), key=final)[0][0].split())


def lm_decoder(vocabulary, lm_path, alpha: float = 0.5, beta: float = 1.0, beam_width: int = 1,
               lexicon: bool = False, oov_penalty: float = -5.0):  # fmt: skip
    """The `LMDecoder` a command's --lm/--alpha/--beta/--beam-width/--lexicon ask for (a beam width
    of 1, the greedy default, becomes 32), or None without `lm_path`."""
    if not lm_path:
        return None
    width = beam_width if beam_width > 1 else 32
    return LMDecoder(vocabulary, lm_path, alpha=alpha, beta=beta, beam_width=width,
                     lexicon=lexicon, oov_penalty=oov_penalty)  # fmt: skip
