"""The embedded demo translation task, generated from a seed (nothing to download).

The source language is English-like (subject-verb-object, prepositions,
adjectives before nouns, "will"/"did not" auxiliaries): 580 content words in
1,212 word forms, drawn with Zipf-like frequencies. Target stems are source
stems after regular sound changes (like cognates), so the lexicon is
learnable in minutes; the grammar is where the languages differ, and the
target needs what real translation needs:

- reordering: subject-object-verb order, postpositions, adjectives after nouns;
- agreement: articles and adjective endings follow the noun's gender and
  number; verb endings follow the subject's person and number;
- many-to-one: "the dog" -> one word (definite suffix), "will not see" -> one
  word (negation prefix + future suffix), subject pronouns are dropped;
- one-to-many: some verbs and adverbs become two words (light-verb phrases).

`dictionary_baseline` translates word by word with the best single-word
dictionary the generator knows; a trained model should beat it by far.

Example:
    >>> corpus = DemoCorpus(seed=0)
    >>> src, tgt = corpus.sample_pair(random.Random(1))
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

# Words are built from syllables (onset + vowel) and a final coda. A target
# stem is the source stem after regular sound changes (like cognates between
# related languages), so the lexicon is large but learnable.
ONSETS = {
    "b": "p",
    "d": "t",
    "f": "f",
    "g": "k",
    "k": "k",
    "l": "l",
    "m": "m",
    "n": "n",
    "p": "p",
    "r": "r",
    "s": "s",
    "t": "t",
    "v": "w",
    "z": "z",
    "br": "pr",
    "st": "st",
    "pl": "pl",
    "gr": "kr",
    "tr": "tr",
    "sh": "sh",
    "ch": "ch",
}
VOWELS = {"a": "a", "e": "e", "i": "i", "o": "o", "u": "u", "ee": "ii", "oo": "uu", "ai": "ai"}
CODAS = {"": "", "n": "n", "r": "r", "t": "d", "l": "l", "m": "m", "k": "k"}
SOURCE_FUNCTION_WORDS = {
    "the",
    "a",
    "some",
    "two",
    "three",
    "i",
    "you",
    "he",
    "she",
    "we",
    "they",
    "me",
    "him",
    "her",
    "us",
    "them",
    "will",
    "not",
    "does",
    "do",
    "did",
    "and",
    "but",
    "in",
    "on",
    "with",
    "near",
    "under",
    "from",
    "to",
    "for",
    "behind",
}
PERSONS = {"i": "1sg", "you": "2sg", "he": "3sg", "she": "3sg", "we": "1pl", "they": "3pl"}
OBJECT_PRONOUNS = {"me": "mu", "you": "tu", "him": "su", "her": "sa", "us": "nu", "them": "ru"}
SUBJECT_AS_OBJECT = {"i": "me", "you": "you", "he": "him", "she": "her", "we": "us", "they": "them"}
AGREEMENT = {"1sg": "m", "2sg": "s", "3sg": "", "1pl": "mi", "3pl": "n"}
TENSES = {"present": "", "past": "ta", "future": "mo"}
PLURAL = ("en", "ra")  # by gender
DEFINITE = ("ul", "ika")
INDEFINITE = ("ko", "ka")
ADJECTIVE_ENDINGS = {(0, False): "o", (0, True): "oi", (1, False): "a", (1, True): "ai"}
QUANTIFIERS = {"some": "tasi", "two": "ni", "three": "san"}
POSTPOSITIONS = {
    "in": "de",
    "on": "pa",
    "with": "gi",
    "near": "ho",
    "under": "lo",
    "from": "ze",
    "to": "vi",
    "for": "fa",
    "behind": "di",
}
CONJUNCTIONS = {"and": "ke", "but": "demo"}
LIGHT_VERB = "dai"
NEGATION = "na"


def _make_words(
    rng: random.Random, count: int, taken: set, taken_target: set
) -> list[tuple[str, str]]:
    """`count` new (source, target) word pairs related by the sound changes above."""
    pairs = []
    onsets, vowels, codas = sorted(ONSETS), sorted(VOWELS), sorted(CODAS)
    while len(pairs) < count:
        parts = [(rng.choice(onsets), rng.choice(vowels)) for _ in range(rng.randint(1, 3))]
        coda = rng.choice(codas)
        source = "".join(o + v for o, v in parts) + coda
        target = "".join(ONSETS[o] + VOWELS[v] for o, v in parts) + CODAS[coda]
        if (
            len(source) >= 3
            and not source.endswith("s")
            and source not in taken
            and target not in taken_target
        ):
            taken.add(source)
            taken_target.add(target)
            pairs.append((source, target))
    return pairs


class _Zipf:
    """Draws items with probability proportional to 1 / (rank + 3), like word frequencies."""

    def __init__(self, items: list):
        self.items = items
        self.cumulative = list(itertools.accumulate(1.0 / (rank + 3) for rank in range(len(items))))

    def draw(self, rng: random.Random):
        return rng.choices(self.items, cum_weights=self.cumulative)[0]


@dataclass
class Noun:
    source: str
    target: str
    gender: int


@dataclass
class Verb:
    source: str
    target: str  # stem; for light verbs the noun-like first word
    light: bool


@dataclass
class Adverb:
    source: str
    target: list[str]


class DemoCorpus:
    """Deterministic English-like -> synthetic-language parallel corpus.

    Args:
        seed: int. Seeds the lexicon (the languages themselves).
        num_nouns, num_verbs, num_adjectives, num_adverbs: int. Lexicon sizes.
    """

    def __init__(
        self, seed: int = 0, num_nouns=300, num_verbs=150, num_adjectives=100, num_adverbs=30
    ):
        rng = random.Random(seed)
        taken_src = set(SOURCE_FUNCTION_WORDS)
        taken_tgt = (
            set(OBJECT_PRONOUNS.values()) | set(POSTPOSITIONS.values()) | set(CONJUNCTIONS.values())
        )
        taken_tgt |= set(INDEFINITE) | set(QUANTIFIERS.values()) | {LIGHT_VERB, NEGATION, "ge"}

        def pair(count):
            return _make_words(rng, count, taken_src, taken_tgt)

        self.nouns = [Noun(s, t, rng.randint(0, 1)) for s, t in pair(num_nouns)]
        self.verbs = [Verb(s, t, rng.random() < 0.2) for s, t in pair(num_verbs)]
        self.adjectives = pair(num_adjectives)
        self.adverbs = [
            Adverb(s + "ly", ["ge", t] if rng.random() < 0.3 else [t]) for s, t in pair(num_adverbs)
        ]
        self._draw = {
            name: _Zipf(getattr(self, name)) for name in ("nouns", "verbs", "adjectives", "adverbs")
        }

    @property
    def source_vocabulary(self) -> set[str]:
        """Every source word form the generator can emit."""
        words = set(SOURCE_FUNCTION_WORDS)
        for noun in self.nouns:
            words |= {noun.source, noun.source + "s"}
        for verb in self.verbs:
            words |= {verb.source, verb.source + "s", verb.source + "ed"}
        words |= {s for s, _ in self.adjectives} | {a.source for a in self.adverbs}
        return words

    # --- phrases: each returns (source words, target words) -------------------------------

    def _noun_phrase(self, rng: random.Random) -> tuple[list[str], list[str], str]:
        noun = self._draw["nouns"].draw(rng)
        det = rng.choice(["the", "the", "a", "some", "two", "three", None])
        plural = det in ("some", "two", "three") or (det in ("the", None) and rng.random() < 0.4)
        if det is None:
            plural = True
        adjectives = [
            self._draw["adjectives"].draw(rng) for _ in range(rng.choice([0, 0, 1, 1, 2]))
        ]
        source = (
            ([det] if det else [])
            + [s for s, _ in adjectives]
            + [noun.source + ("s" if plural else "")]
        )
        head = (
            noun.target
            + (PLURAL[noun.gender] if plural else "")
            + (DEFINITE[noun.gender] if det == "the" else "")
        )
        target = ([INDEFINITE[noun.gender]] if det == "a" else []) + [head]
        target += [t + ADJECTIVE_ENDINGS[(noun.gender, plural)] for _, t in adjectives]
        if det in QUANTIFIERS:
            target.append(QUANTIFIERS[det])
        return source, target, "3pl" if plural else "3sg"

    def _verb_phrase(self, rng: random.Random, person: str) -> tuple[list[str], list[str]]:
        verb = self._draw["verbs"].draw(rng)
        tense = rng.choice(list(TENSES))
        negated = rng.random() < 0.25
        if tense == "future":
            source = ["will"] + (["not"] if negated else []) + [verb.source]
        elif negated:
            aux = "did" if tense == "past" else ("does" if person == "3sg" else "do")
            source = [aux, "not", verb.source]
        else:
            suffix = "ed" if tense == "past" else ("s" if person == "3sg" else "")
            source = [verb.source + suffix]
        inflected = (NEGATION if negated else "") + "{}" + TENSES[tense] + AGREEMENT[person]
        if verb.light:
            target = [verb.target, inflected.format(LIGHT_VERB)]
        else:
            target = [inflected.format(verb.target)]
        return source, target

    def _clause(self, rng: random.Random) -> tuple[list[str], list[str]]:
        if rng.random() < 0.35:
            pronoun = rng.choice(list(PERSONS))
            subj_src, subj_tgt, person = [pronoun], [], PERSONS[pronoun]  # pro-drop
        else:
            subj_src, subj_tgt, person = self._noun_phrase(rng)
        verb_src, verb_tgt = self._verb_phrase(rng, person)
        obj_src, obj_tgt = [], []
        if rng.random() < 0.8:
            if rng.random() < 0.2:
                pronoun = rng.choice(list(OBJECT_PRONOUNS))
                obj_src, obj_tgt = [pronoun], [OBJECT_PRONOUNS[pronoun]]
            else:
                obj_src, obj_tgt, _ = self._noun_phrase(rng)
        adv_src, adv_tgt = [], []
        if rng.random() < 0.3:
            adverb = self._draw["adverbs"].draw(rng)
            adv_src, adv_tgt = [adverb.source], list(adverb.target)
        pp_src, pp_tgt = [], []
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            prep = rng.choice(list(POSTPOSITIONS))
            np_src, np_tgt, _ = self._noun_phrase(rng)
            pp_src += [prep] + np_src
            pp_tgt += np_tgt + [POSTPOSITIONS[prep]]
        source = subj_src + verb_src + obj_src + adv_src + pp_src
        target = subj_tgt + obj_tgt + pp_tgt + adv_tgt + verb_tgt
        return source, target

    def sample_pair(
        self, rng: random.Random, min_words: int = 3, max_words: int = 30
    ) -> tuple[str, str]:
        """One sentence pair with `min_words`..`max_words` source words."""
        while True:
            source, target = self._clause(rng)
            if rng.random() < 0.25:
                conj = rng.choice(list(CONJUNCTIONS))
                more_src, more_tgt = self._clause(rng)
                source, target = (
                    source + [conj] + more_src,
                    target + [CONJUNCTIONS[conj]] + more_tgt,
                )
            if min_words <= len(source) <= max_words:
                return " ".join(source), " ".join(target)

    def split(self, num_train: int, num_valid: int, num_test: int, seed: int = 1):
        """Train/valid/test lists of (source, target); held-out sources never occur in train."""
        rng = random.Random(seed)
        seen: set[str] = set()
        splits = []
        for size in (num_train, num_valid, num_test):
            pairs = []
            while len(pairs) < size:
                src, tgt = self.sample_pair(rng)
                if src not in seen:
                    seen.add(src)
                    pairs.append((src, tgt))
            splits.append(pairs)
        return splits

    # --- the baseline ---------------------------------------------------------------------

    def word_dictionary(self) -> dict[str, str]:
        """The best single-word translation of each source word form ('' = drop)."""
        table = {
            "the": "",
            "a": INDEFINITE[0],
            "will": "",
            "not": NEGATION,
            "does": "",
            "do": "",
            "did": "",
        }
        table.update(QUANTIFIERS)
        table.update(POSTPOSITIONS)
        table.update(CONJUNCTIONS)
        table.update(OBJECT_PRONOUNS)
        table.update({p: OBJECT_PRONOUNS[SUBJECT_AS_OBJECT[p]] for p in PERSONS})
        for noun in self.nouns:
            table[noun.source] = noun.target + DEFINITE[noun.gender]
            table[noun.source + "s"] = noun.target + PLURAL[noun.gender]
        for verb in self.verbs:
            stem = LIGHT_VERB if verb.light else verb.target
            table[verb.source] = stem
            table[verb.source + "s"] = stem
            table[verb.source + "ed"] = stem + TENSES["past"] + AGREEMENT["3sg"]
        for src, tgt in self.adjectives:
            table[src] = tgt + ADJECTIVE_ENDINGS[(0, False)]
        for adverb in self.adverbs:
            table[adverb.source] = adverb.target[-1]
        return table

    def dictionary_baseline(self, sentences: list[str]) -> list[str]:
        """Word-by-word translation in source order with `word_dictionary`."""
        table = self.word_dictionary()
        out = []
        for sentence in sentences:
            words = [table.get(w, w) for w in sentence.split()]
            out.append(" ".join(w for w in words if w))
        return out
