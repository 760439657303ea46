"""`keras-s2s translate --po`: a gettext catalog's untranslated messages filled and marked fuzzy,
with placeholders, markup, accelerators, plural forms and line breaks kept, and every other entry
byte for byte."""

from collections import Counter

import polib
import pytest

from keras_s2s.text.catalogs import PLACEHOLDER, TAG, CatalogError, fill_catalog, read_catalog

CATALOG = r"""# German translation of an application.
# Copyright (C) 2026 Somebody
msgid ""
msgstr ""
"Project-Id-Version: demo 1.0\n"
"Language: pl\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 "
"|| n%100>=20) ? 1 : 2);\n"

#: src/menu.c:10
msgid "Open _File"
msgstr ""

#: src/menu.c:11
msgctxt "menu"
msgid "_Quit the program"
msgstr ""

#. TRANSLATORS: the file's name
#: src/main.c:20
#, c-format
msgid "Cannot open %s: %s"
msgstr ""

#, python-format
msgid "Removed %(count)d old files from {0}"
msgstr ""

#, c-format
msgid "One file was copied"
msgid_plural "%d files were copied"
msgstr[0] ""
msgstr[1] ""
msgstr[2] ""

msgid "<b>Warning:</b> the disk &amp; the cache are full.\nFree some space now.\n"
msgstr ""

#, fuzzy
msgid "Save the document"
msgstr "Dokument speichern"

msgid "Already   translated,    oddly spaced"
msgstr "Schon übersetzt,"
"  seltsam umbrochen"

#, c-format
msgid "%1$s of %2$s"
msgstr ""

msgid "%d%%"
msgstr ""

#~ msgid "An obsolete message"
#~ msgstr "Eine veraltete Meldung"
"""


def reversing(texts):
    """A stand-in translator that changes every word and their order, keeping other tokens."""
    return [
        " ".join(word[::-1] if word.isalpha() else word for word in t.split()[::-1]) for t in texts
    ]


def losing_named_placeholders(texts):
    """A translator that drops `%(name)d`-like placeholders, as a model may."""
    return [" ".join(w for w in t.split() if not w.startswith("%(")) for t in reversing(texts)]


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "pl.po"
    path.write_text(CATALOG)
    return path


def entry_lines(text: str) -> list[str]:
    """The blocks of a catalog's text, separated by blank lines."""
    return [block for block in text.split("\n\n") if block.strip()]


@pytest.mark.parametrize("translator", [reversing, losing_named_placeholders])
def test_untranslated_messages_are_filled_and_everything_else_kept_byte_for_byte(
    catalog, tmp_path, translator
):
    out = tmp_path / "out.po"
    report = fill_catalog(catalog, translator, out)
    assert report.filled == 7 and not report.failed and report.untranslatable == 1
    assert report.in_pieces == (1 if translator is losing_named_placeholders else 0)
    assert catalog.read_text() == CATALOG, "the input is not touched when --output is given"
    written = out.read_text()
    before, after = entry_lines(CATALOG), entry_lines(written)
    kept = [block for block in before if block in after]
    assert len(kept) == 5, "the header, the fuzzy, translated, %d%% and obsolete entries"
    filled = {e.msgid: e for e in polib.pofile(str(out)) if "fuzzy" in e.flags and not e.obsolete}
    assert filled["Save the document"].msgstr == "Dokument speichern"
    for msgid, entry in filled.items():
        if msgid == "Save the document":
            continue
        for source, target in [(msgid, entry.msgstr)] + [
            (entry.msgid_plural if i else msgid, text) for i, text in entry.msgstr_plural.items()
        ]:
            if not target and entry.msgid_plural:
                continue
            assert target and target != source, msgid
            assert Counter(PLACEHOLDER.findall(target)) == Counter(PLACEHOLDER.findall(source))
            assert TAG.findall(target) == TAG.findall(source)
            assert target.count("\n") == source.count("\n") and target.endswith("\n") == (
                source.endswith("\n")
            )
    assert sorted(filled["One file was copied"].msgstr_plural) == [0, 1, 2], "nplurals=3"
    plural = filled["One file was copied"].msgstr_plural
    assert plural[1] == plural[2] != plural[0]
    assert filled["Open _File"].msgstr.count("_") == 1
    accelerated = filled["Open _File"].msgstr.index("_")
    assert filled["Open _File"].msgstr[accelerated + 1].lower() == "f", "the same letter, moved"
    assert filled["_Quit the program"].msgctxt == "menu"
    warning = filled[
        "<b>Warning:</b> the disk &amp; the cache are full.\nFree some space now.\n"
    ].msgstr
    assert "&amp;" in warning and " & " not in warning, "text inside markup is escaped again"
    assert "%d%%" not in filled, "a message without words stays as it was"


def test_a_message_whose_placeholders_cannot_be_kept_is_reported_and_left_untranslated(
    catalog, tmp_path
):
    def adding_placeholders(texts):
        return [text + " %s" for text in texts]

    report = fill_catalog(catalog, adding_placeholders, tmp_path / "out.po")
    assert report.filled == 0 and len(report.failed) == 7
    line = CATALOG.splitlines().index("#, python-format") + 1  # polib's line: the entry's first
    assert f"{catalog}:{line}: placeholders differ ('Removed %(count)d old files from {{0}}')" in (
        report.failed
    )
    assert "7 left untranslated: their placeholders differ" in report.summary(catalog)
    entries = [e for e in polib.pofile(str(tmp_path / "out.po")) if not e.obsolete]
    assert sum("fuzzy" in e.flags for e in entries) == 1, "only the entry that was fuzzy before"


def test_a_catalog_is_rewritten_in_place_atomically_and_a_broken_one_is_named(catalog, tmp_path):
    assert fill_catalog(catalog, reversing).filled == 7
    entries = polib.pofile(str(catalog))
    assert len([e for e in entries.fuzzy_entries() if e.msgstr or e.msgstr_plural[0]]) == 8
    assert not list(tmp_path.glob(".tmp-*"))
    broken = tmp_path / "broken.po"
    broken.write_text('msgid "one"\nmsgstr "eins"\n\nmsgid "two\nmsgstr ""\n')
    with pytest.raises(CatalogError, match=f"{broken}, line 4: not a gettext line"):
        read_catalog(broken)  # polib alone reads it, as msgid "tw"
    broken.write_text('msgid "one"\nmsgstr "eins"\n\nsomething else\n')
    with pytest.raises(CatalogError, match=f"{broken}: not a readable gettext catalog"):
        read_catalog(broken)
    with pytest.raises(FileNotFoundError, match="missing.po: catalog not found"):
        read_catalog(tmp_path / "missing.po")
    bad_plurals = tmp_path / "plurals.po"
    bad_plurals.write_text(CATALOG.replace("nplurals=3", "nplurals=x"))
    with pytest.raises(CatalogError, match="Plural-Forms header has no nplurals"):
        fill_catalog(bad_plurals, reversing)
    assert bad_plurals.read_text() == CATALOG.replace("nplurals=3", "nplurals=x")
