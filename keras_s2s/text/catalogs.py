"""Gettext catalogs filled by a translation model, for a person to review.

`fill_catalog` translates the untranslated messages of a `.po` file, marks them
fuzzy and leaves every other entry byte for byte. What a catalog needs stays
intact: placeholders (`%s`, `%1$d`, `%(name)s`, `{0}`, `${var}`) are checked
after translation (a message whose placeholders came out otherwise is translated
again in pieces between them, and left untranslated, reported, if that fails
too); markup (`<b>`, `&amp;`) and line breaks are kept in place and only the
text between them is translated; the keyboard accelerator (`_File`, `&File`) is
put back before the same letter where the translation has it; plural forms get
the singular's and the plural's translation. polib reads the catalog; the file
is rewritten only where a message was filled (polib would rewrap every entry).

Example:
    >>> report = fill_catalog("de.po", lambda texts: model.translate(texts, beam_width=4))
    >>> report.filled, report.failed
    (812, [])
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# printf (`%s`, `%1$d`, `%-5.2f`, `%(name)s`, `%%`; no space flag: "100% of" is prose), Qt's
# `%1`, braces (`{0}`, `{name}`), shell `${x}` and `$x`
PLACEHOLDER = re.compile(
    r"%(?:\d+\$|\([^)]*\))?[-+#0-9.*]*(?:l{0,2}|h{0,2}|[jzLqtI])[diouxXeEfFgGcsSpn%@]"
    r"|%\d+|\{[^{}\s]*\}|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*"
)
TAG = re.compile(r"</?[A-Za-z][^<>]*>")
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);")
WORD = re.compile(r"[^\W\d_]{2,}")  # a text worth translating has a word of two letters
ACCELERATOR_MARKERS = ("_", "&")


class CatalogError(ValueError):
    """A catalog that cannot be read or filled, named with its file (and line)."""


@dataclasses.dataclass
class FillReport:
    """What `fill_catalog` did: messages filled, how many in pieces, and those it left."""

    filled: int = 0
    in_pieces: int = 0  # translated between their placeholders after a first try lost one
    failed: list[str] = dataclasses.field(default_factory=list)  # "FILE:LINE: why"
    untranslatable: int = 0  # no words (placeholders, numbers, punctuation): left as they were

    def summary(self, path) -> str:
        """One line for a person, e.g. `de.po: 812 messages filled and marked fuzzy ...`."""
        text = f"{path}: {self.filled} message(s) filled and marked fuzzy for review"
        if self.in_pieces:
            text += f" ({self.in_pieces} translated between their placeholders)"
        if self.failed:
            text += f"; {len(self.failed)} left untranslated: their placeholders differ"
        if self.untranslatable:
            text += f"; {self.untranslatable} without words left untranslated"
        return text


def read_catalog(path):
    """The catalog at `path` as a `polib.POFile`; a CatalogError naming the file (and line)."""
    import polib

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: catalog not found")
    try:
        catalog = polib.pofile(str(path), wrapwidth=78)
        text = path.read_bytes().decode(catalog.encoding)
    except (OSError, ValueError, UnicodeDecodeError, LookupError) as error:
        raise CatalogError(f"{path}: not a readable gettext catalog ({error})") from None
    _check_lines(path, text)
    return catalog


# a keyword line or a continued string (obsolete `#~ ` ones too); comments and blank lines aside
GETTEXT_LINE = re.compile(
    r'(#~\s*)?((msgctxt|msgid|msgid_plural|msgstr(\[\d+\])?)\s+)?"([^"\\]|\\.)*"\s*'
)


def _check_lines(path, text: str) -> None:
    """polib reads an unterminated string as the string less its last letter: every line that is
    not a comment or blank must be a keyword and a whole quoted string."""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and (not stripped.startswith("#") or stripped.startswith("#~")):
            if not GETTEXT_LINE.fullmatch(stripped) and stripped not in ("#~", "#~ "):
                raise CatalogError(
                    f"{path}, line {number}: not a gettext line (a keyword and a quoted string, "
                    f"a comment or a blank line): {line[:80]!r}"
                )


def untranslated(catalog) -> list:
    """The entries to fill: not translated, not fuzzy, not obsolete, not the header."""
    return [
        entry
        for entry in catalog
        if entry.msgid and not entry.obsolete and not entry.fuzzy and not entry.translated()
    ]


def fill_catalog(
    path,
    translate: Callable[[list[str]], list[str]],
    out=None,
    markers: tuple[str, ...] | None = None,
) -> FillReport:
    """Translate `path`'s untranslated messages with `translate` (texts -> texts), mark them fuzzy,
    and write the catalog to `out` (default: `path`) atomically; nothing is written on an error.

    `markers`: the keyboard accelerator markers (default: the catalog's `X-Accelerator-Marker`
    header, else `_` and `&`).
    """
    from keras_s2s.files import atomic_write

    path = Path(path)
    catalog = read_catalog(path)
    markers = markers or _markers_of(catalog)
    entries = untranslated(catalog)
    plurals = _plural_count(catalog, path)
    messages = {}  # each distinct source text, translated once
    for entry in entries:
        for text in (entry.msgid, entry.msgid_plural):
            if text and text not in messages:
                messages[text] = Message(text, markers)
    report = FillReport()
    _translate_messages(list(messages.values()), translate)
    filled = []
    for entry in entries:
        sources = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
        results = [messages[text] for text in sources]
        if not all(message.has_words for message in results):
            report.untranslatable += 1
            continue
        if any(message.result is None for message in results):
            report.failed.append(f"{path}:{entry.linenum}: placeholders differ ({entry.msgid!r})")
            continue
        if entry.msgid_plural:
            singular, plural = (message.result for message in results)
            entry.msgstr_plural = {i: singular if i == 0 else plural for i in range(plurals)}
        else:
            entry.msgstr = results[0].result
        entry.flags.append("fuzzy")
        report.filled += 1
        report.in_pieces += any(message.in_pieces for message in results)
        filled.append(entry)
    text = _spliced(path, catalog, filled)
    atomic_write(out or path, lambda target: Path(target).write_bytes(text))
    return report


class Message:
    """One source text split into what is translated (text runs) and what is kept (line breaks,
    markup, entities, surrounding spaces), with its accelerator and placeholders."""

    def __init__(self, text: str, markers: tuple[str, ...]):
        self.source = text
        self.markup = bool(TAG.search(text) or ENTITY.search(text))
        self.marker, self.key, text = _without_accelerator(text, markers, self.markup)
        # alternating kept and translated parts: kept, run, kept, run, ..., kept
        self.parts = _split_kept(text, self.markup)
        self.runs = self.parts[1::2]
        self.has_words = any(WORD.search(PLACEHOLDER.sub(" ", run)) for run in self.runs)
        self.result: str | None = None
        self.in_pieces = False

    def assemble(self, translations: dict[str, str]) -> str:
        """The message with each run replaced by its translation and the accelerator put back."""
        parts = list(self.parts)
        for i in range(1, len(parts), 2):
            translated = translations.get(parts[i], parts[i])
            parts[i] = html.escape(translated, quote=False) if self.markup else translated
        text = "".join(parts)
        return _with_accelerator(text, self.marker, self.key) if self.marker else text


def _translate_messages(messages: list[Message], translate) -> None:
    """Fill each message's `result`: runs translated whole, then in pieces between placeholders
    where the whole translation lost or added one; None where both fail."""
    runs = sorted({run for m in messages if m.has_words for run in m.runs if _worth(run)})
    whole = dict(zip(runs, _translated(runs, translate)))
    broken = {run for run in runs if _placeholders(whole[run]) != _placeholders(run)}
    pieces = sorted({p.strip() for run in broken for p in PLACEHOLDER.split(run) if _worth(p)})
    piece_translation = dict(zip(pieces, _translated(pieces, translate)))
    for run in broken:
        parts = re.split(f"({PLACEHOLDER.pattern})", run)
        joined = "".join(
            _keep_spaces(part, piece_translation.get(part.strip(), part)) if i % 2 == 0 else part
            for i, part in enumerate(parts)
        )
        whole[run] = joined if _placeholders(joined) == _placeholders(run) else None
    for message in messages:
        if not message.has_words:
            continue
        done = {run: whole.get(run, run) for run in message.runs}
        if any(value is None for value in done.values()):
            continue
        message.in_pieces = any(run in broken for run in message.runs)
        message.result = message.assemble(done)


def _translated(texts: list[str], translate) -> list[str]:
    """`translate` over the texts, with their inner spacing collapsed to single spaces."""
    if not texts:
        return []
    results = translate([" ".join(text.split()) for text in texts])
    if len(results) != len(texts):
        raise RuntimeError(f"the translator returned {len(results)} texts for {len(texts)}")
    return [_keep_spaces(text, result) for text, result in zip(texts, results)]


def _worth(text: str) -> bool:
    return WORD.search(PLACEHOLDER.sub(" ", text)) is not None


def _keep_spaces(source: str, translated: str) -> str:
    """`translated` with the leading and trailing whitespace of `source`."""
    core = source.strip()
    if not core:
        return source
    start = source.index(core)
    return source[:start] + translated.strip() + source[start + len(core) :]


def _placeholders(text: str) -> Counter:
    return Counter(PLACEHOLDER.findall(text))


def _split_kept(text: str, markup: bool) -> list[str]:
    """[kept, run, kept, run, ..., kept]: line breaks (and tags, with markup) are kept; each run is
    unescaped text (entities decoded) with its surrounding spaces in the kept parts."""
    pattern = r"(\n|</?[A-Za-z][^<>]*>)" if markup else r"(\n)"
    parts = [""]
    for i, piece in enumerate(re.split(pattern, text)):
        if i % 2:  # a line break or a tag
            parts[-1] += piece
            continue
        core = piece.strip()
        if not core:
            parts[-1] += piece
            continue
        start = piece.index(core)
        parts[-1] += piece[:start]
        parts += [html.unescape(core) if markup else core, piece[start + len(core) :]]
    return parts


def _without_accelerator(text: str, markers, markup: bool) -> tuple[str | None, str, str]:
    """(marker, the letter it marks, the text without it), or (None, "", text) when the text has no
    accelerator: one marker before a letter, not an entity's `&` nor a `__` or `&&`."""
    in_tags = {i for m in TAG.finditer(text) for i in range(m.start(), m.end())} if markup else ()
    for marker in markers:
        hits = [
            m
            for m in re.finditer(re.escape(marker) + r"(?=[^\W_])", text)
            if not (marker == "&" and ENTITY.match(text, m.start()))
            and not (m.start() and text[m.start() - 1] == marker)
            and m.start() not in in_tags
        ]
        if len(hits) == 1:
            at = hits[0].start()
            if marker == "_" and re.search(r"\w_\w", text[max(at - 1, 0) : at + 2]):
                continue  # snake_case, not an accelerator
            return marker, text[at + 1], text[:at] + text[at + 1 :]
    return None, "", text


def _with_accelerator(text: str, marker: str, key: str) -> str:
    """`marker` before `key` where the text has it (at a word's start first), else before its
    first letter; never inside markup, an entity or a placeholder."""
    blocked = set()
    for pattern in (TAG, ENTITY, PLACEHOLDER):
        for match in pattern.finditer(text):
            blocked.update(range(match.start(), match.end()))
    letters = [i for i, c in enumerate(text) if c.isalpha() and i not in blocked]
    if not letters:
        return text
    same = [i for i in letters if text[i].lower() == key.lower()]
    starts = [i for i in same if i == 0 or not text[i - 1].isalnum()]
    at = (starts or same or letters)[0]
    return text[:at] + marker + text[at:]


def _markers_of(catalog) -> tuple[str, ...]:
    marker = catalog.metadata.get("X-Accelerator-Marker", "").strip()
    return (marker,) if len(marker) == 1 else ACCELERATOR_MARKERS


def _plural_count(catalog, path) -> int:
    forms = catalog.metadata.get("Plural-Forms", "")
    found = re.search(r"nplurals\s*=\s*(\d+)", forms)
    if forms and not found:
        raise CatalogError(f"{path}: its Plural-Forms header has no nplurals: {forms!r}")
    count = int(found.group(1)) if found else 2
    if not 1 <= count <= 6:
        raise CatalogError(f"{path}: its Plural-Forms header says nplurals={count}")
    return count


def _spliced(path: Path, catalog, filled: list) -> bytes:
    """The file's bytes with only the filled entries rewritten (each from its first line to the
    line before the next entry, blank lines kept), checked by reading the result back."""
    import polib

    raw = path.read_bytes()
    newline = "\r\n" if b"\r\n" in raw else "\n"
    lines = raw.decode(catalog.encoding).splitlines(keepends=True)
    starts = sorted(entry.linenum - 1 for entry in catalog)
    rewritten = {id(entry) for entry in filled}
    replaced = {}
    for entry in catalog:
        if id(entry) not in rewritten:
            continue
        first = entry.linenum - 1
        following = bisect.bisect_right(starts, first)  # the next entry's first line
        last = starts[following] if following < len(starts) else len(lines)
        while last > first and not lines[last - 1].strip():
            last -= 1
        text = entry.__unicode__(wrapwidth=catalog.wrapwidth)
        replaced[first] = (last, text.replace("\n", newline))
    out, i = [], 0
    while i < len(lines):
        if i in replaced:
            last, text = replaced[i]
            out.append(text)
            i = last
        else:
            out.append(lines[i])
            i += 1
    data = "".join(out)
    check = polib.pofile(data, wrapwidth=catalog.wrapwidth)
    if [str(e) for e in check] != [str(e) for e in catalog]:
        raise CatalogError(
            f"{path}: the filled catalog did not read back the same; nothing written"
        )
    return data.encode(catalog.encoding)
