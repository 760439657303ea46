"""Speakable English sentences from real text: what an open-vocabulary recognizer trains on.

Text comes from files (plain text, Debian's package descriptions
`Translation-en`, or a Bible module of the SWORD project as `diatheke`
prints it, e.g. the public-domain World English Bible); it is unwrapped into paragraphs, split into sentences,
and each sentence is kept only if a listener could say what it spells:
3-25 words, letters and ordinary punctuation, numbers spelled out by
`normalize_text`; sentences with code, paths, addresses, acronyms
("GTK", "OpenGL") or letter-digit mixes ("mp3") are dropped.

WordNet and the fortune-cookie databases are kept for independent
evaluation: a path inside either is refused, and so is GCIDE (Debian's
dict-gcide), which carries WordNet's glosses.

Example:
    >>> speakable("The 3 files are copied to a new folder.")
    ('the three files are copied to a new folder.', 'the three files are copied to a new folder')
    >>> list(sentences_from_text("It works. It is fast!\\n\\nA new paragraph starts here."))
    ['It works.', 'It is fast!', 'A new paragraph starts here.']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

from keras_s2s.files import read_text
from keras_s2s.text.characters import normalize_transcript
from keras_s2s.text.normalization import normalize_text

MIN_WORDS, MAX_WORDS = 3, 25
# kept out of training and tests for independent evaluation; GCIDE holds WordNet's glosses
RESERVED_SOURCES = ("wordnet", "fortune", "gcide")
# a full stop after these does not end a sentence
ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr", "prof"}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z])")
# a token no listener could spell from its sound
_UNSPEAKABLE = re.compile(
    r"[/\\_@#=<>{}\[\]|~^*+`$%&]"  # code, paths, markup, addresses
    r"|\b\w+\.\w+\.\w"  # dotted names (org.gnome.x) and versions; \b: linear in a long token
    r"|\b[A-Z]{2,}\b|\b[a-z]+[A-Z]\w*|\b[A-Z]\w*[A-Z]\w*"  # acronyms, camelCase, OpenGL
    r"|\b[A-Za-z]+\d|\b\d+[A-Za-z]"  # mp3, x86, 64bit (not "3rd", spelled below)
)
_ORDINAL = re.compile(r"\b\d+(st|nd|rd|th)\b")
# letters of another language: umlauts on a, o, u (English writes a diaeresis on e and i only: naive,
# Zoe), and letters that are no accented a-z (German sharp s, Danish o-slash, ae, Cyrillic, Greek...)
_UMLAUTS = set("äöüÄÖÜ")


def _foreign(sentence: str) -> bool:
    """Whether a sentence has letters no English speller writes: it is not English, and its
    transcript would lose them (Straße -> strae)."""
    return any(
        char in _UMLAUTS or (not char.isascii() and char.isalpha() and not _is_accented_latin(char))
        for char in sentence
    )


def _is_accented_latin(char: str) -> bool:
    base = unicodedata.normalize("NFKD", char)[0]
    return base.isascii() and base.isalpha()


def check_source(path: str | Path) -> Path:
    """`path` as a Path; a ValueError for a missing file or one of the reserved evaluation sources."""
    path = Path(path)
    lowered = str(path).lower()
    for reserved in RESERVED_SOURCES:
        if reserved in lowered:
            raise ValueError(
                f"{path}: {reserved} text is kept for independent evaluation; "
                "do not train or tune on it"
            )
    if not path.is_file():
        raise FileNotFoundError(f"{path}: text file not found")
    return path


def paragraphs_of_debian_descriptions(text: str) -> Iterator[str]:
    """The long descriptions of a Debian `Translation-en` file, each once (many packages share one)."""
    seen: set[str] = set()
    for record in text.split("\n\n"):
        lines = record.split("\n")
        start = next(
            (i for i, line in enumerate(lines) if line.startswith("Description-en:")), None
        )
        if start is None:
            continue
        paragraph: list[str] = []
        for line in lines[start + 1 :]:
            if not line.startswith(" "):
                break
            if line.strip() == ".":  # a blank line inside the description
                yield from _once(" ".join(paragraph), seen)
                paragraph = []
            else:
                paragraph.append(line.strip())
        yield from _once(" ".join(paragraph), seen)


def _once(paragraph: str, seen: set[str]) -> Iterator[str]:
    if paragraph and paragraph not in seen:
        seen.add(paragraph)
        yield paragraph


_VERSE = re.compile(r"^((?:[1-3] )?[A-Z][A-Za-z ]*?) (\d+):\d+: (.*)$")
_SECTION_TITLE = re.compile(r"<title\b[^>]*>.*?</title>|<note\b[^>]*>.*?</note>")


def paragraphs_of_sword_verses(text: str) -> Iterator[str]:
    """The chapters of a SWORD Bible module as `diatheke -b MODULE -k "Gen 1:1-Rev 22:21"` prints
    them (one `Book C:V: text` line per verse, OSIS markup inside), one paragraph per chapter.

    Section titles and notes are dropped; word elements that touch (`God</w><w ...>created`) are
    separate words."""
    chapter, verses = None, []
    for line in text.splitlines():
        match = _VERSE.match(line)
        if match is None:
            continue
        if (match[1], match[2]) != chapter and verses:
            yield " ".join(verses)
            verses = []
        chapter = (match[1], match[2])
        verse = _SECTION_TITLE.sub(" ", match[3]).replace("</w><w", "</w> <w")
        verse = " ".join(re.sub(r"<[^>]*>", " ", verse).split())
        if verse:
            verses.append(verse)
    if verses:
        yield " ".join(verses)


def _text_kind(path: Path, text: str) -> str:
    """`debian` (a `Translation-en` file), `sword` (diatheke's verse lines) or `plain`."""
    if "Translation-en" in path.name:
        return "debian"
    first = next((line for line in text.splitlines() if line.strip()), "")
    return "sword" if _VERSE.match(first) else "plain"


def paragraphs_of_plain_text(text: str) -> Iterator[str]:
    """Blank-line separated paragraphs, their lines joined."""
    for block in re.split(r"\n\s*\n", text):
        joined = " ".join(block.split())
        if joined:
            yield joined


PARAGRAPHS = {
    "plain": paragraphs_of_plain_text,
    "debian": paragraphs_of_debian_descriptions,
    "sword": paragraphs_of_sword_verses,
}


def sentences_from_text(text: str, kind: str = "plain") -> Iterator[str]:
    """The sentences of `text`; `kind` is `plain`, `debian` (`Translation-en`) or `sword` (verses)."""
    paragraphs = PARAGRAPHS[kind](text)
    for paragraph in paragraphs:
        pieces = _SENTENCE_END.split(paragraph)
        sentence = ""
        for piece in pieces:
            sentence = f"{sentence} {piece}".strip()
            last_word = sentence.rsplit(" ", 1)[-1].rstrip(".").lower()
            if last_word in ABBREVIATIONS or re.fullmatch(r"[a-z]", last_word):
                continue  # "Dr. Smith", "J. Smith": the sentence goes on
            yield sentence
            sentence = ""
        if sentence:
            yield sentence


def speakable(sentence: str) -> tuple[str, str] | None:
    """(what to say, its transcript) of a sentence a listener could transcribe, else None.

    What to say keeps the punctuation that shapes prosody; the transcript is
    lower-case letters, apostrophes and single spaces."""
    if _UNSPEAKABLE.search(_ORDINAL.sub("", sentence)) or not sentence[:1].isalpha():
        return None
    if _foreign(sentence):
        return None
    said = normalize_text(sentence.replace("-", " "))
    transcript = normalize_transcript(re.sub(r"[^a-z' ]", " ", said))
    words = transcript.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or any(len(w) > 20 for w in words):
        return None
    if any(w.strip("'") == "" for w in words):
        return None
    return said, transcript


def speakable_sentences(paths: Iterable[str | Path]) -> Iterator[tuple[str, str]]:
    """(what to say, transcript) for every distinct speakable sentence of the files, in file order.

    A file named `*Translation-en*` is read as Debian package descriptions, one whose first line is
    a verse (`Genesis 1:1: ...`) as a SWORD Bible module, anything else as plain text."""
    seen: set[str] = set()
    for path in map(check_source, paths):
        text = path.read_text(encoding="utf-8", errors="replace")
        for sentence in sentences_from_text(text, _text_kind(path, text)):
            pair = speakable(sentence)
            if pair is not None and pair[1] not in seen:
                seen.add(pair[1])
                yield pair


def general_word_frequencies(source: str, characters: str = " 'abcdefghijklmnopqrstuvwxyz") -> dict:
    """{word: its share of general English text} for a word LM's vocabulary (`KneserNeyLM.with_words`),
    only words spelled with `characters`: `wordfreq:N` (the N most frequent English words of the
    `wordfreq` package, `pip install wordfreq`), or a TSV file of `word<TAB>share` lines.

    Example:
        >>> general_word_frequencies("wordfreq:100000")["misanthrope"]
        1.58e-07
    """
    allowed = set(characters) - {" "}
    if source.startswith("wordfreq:"):
        count = source.split(":", 1)[1]
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{source}: wordfreq:N needs a count of words, e.g. wordfreq:100000")
        try:
            import wordfreq
        except ImportError:
            raise ImportError(
                f"{source}: the wordfreq package is not installed (pip install wordfreq)"
            ) from None
        words = wordfreq.top_n_list("en", int(count))
        table = {w: wordfreq.word_frequency(w, "en") for w in words}
    else:
        table = {}
        for number, line in enumerate(read_text(source).splitlines(), 1):
            fields = line.split("\t")
            try:
                table[fields[0]] = float(fields[1])
            except (IndexError, ValueError):
                raise ValueError(
                    f"{source}:{number}: not a 'word<TAB>share' line: {line[:60]!r}"
                ) from None
    return {w: f for w, f in table.items() if w and set(w) <= allowed}
