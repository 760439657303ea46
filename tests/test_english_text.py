"""Speakable English sentences from real text (plain files and Debian package descriptions)."""

import pytest

from keras_s2s.text.english import sentences_from_text, speakable, speakable_sentences

DEBIAN = """Package: demo
Description-md5: 0
Description-en: a short line
 This tool copies 3 files to a new folder. It is fast!
 .
 Install libfoo-dev for the headers. See https://example.org for more.

Package: demo-doc
Description-md5: 0
Description-en: another
 This tool copies 3 files to a new folder. It is fast!
"""


def test_sentences_split_at_their_ends_but_not_after_abbreviations():
    text = "It works. It is fast!\n\nA new paragraph starts here. Dr. Smith came. J. R. Tolkien wrote it."
    assert list(sentences_from_text(text)) == [
        "It works.", "It is fast!", "A new paragraph starts here.", "Dr. Smith came.",
        "J. R. Tolkien wrote it.",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "sentence",
    ["Run it.", "Use the GTK toolkit here now.", "It plays mp3 files well today.",
     "Edit /etc/hosts as root now.", "See org.gnome.Shell for the details.", "It uses OpenGL for speed.",
     # another language's letters: its transcript lost them (Straße -> strae, smørrebrød -> smrrebrd)
     "Der Hund läuft über die Straße.", "Die Größe ist zu groß hier.", "Søren ate smørrebrød today."],
)  # fmt: skip
def test_what_no_listener_could_spell_is_dropped(sentence):
    assert speakable(sentence) is None


def test_english_words_with_accents_are_kept_without_them():
    assert speakable("Zoë served a naïve crème brûlée at the café.")[1] == (
        "zoe served a naive creme brulee at the cafe"
    )


def test_numbers_are_spelled_and_the_transcript_is_letters_only():
    said, transcript = speakable("The 3 files are copied to the 2nd folder.")
    assert said == "the three files are copied to the second folder."
    assert transcript == "the three files are copied to the second folder"


def test_debian_descriptions_are_read_once_and_reserved_sources_refused(tmp_path):
    (tmp_path / "Translation-en").write_text(DEBIAN)
    pairs = list(speakable_sentences([tmp_path / "Translation-en"]))
    transcripts = [t for _, t in pairs]
    assert transcripts == ["this tool copies three files to a new folder", "it is fast",
                           "install libfoo dev for the headers"]  # fmt: skip
    # the second package's copy of the description is not read again; the address sentence is dropped
    for reserved in ("wordnet.txt", "gcide.txt"):  # GCIDE carries WordNet's glosses
        (tmp_path / reserved).write_text("A sentence of words here.\n")
        with pytest.raises(ValueError, match="kept for independent evaluation"):
            list(speakable_sentences([tmp_path / reserved]))
    with pytest.raises(FileNotFoundError, match="text file not found"):
        list(speakable_sentences([tmp_path / "missing.txt"]))


BIBLE = (
    'Genesis 1:1: <title type="x-gen">The Creation</title> <w savlm="strong:H7225">In</w> <w>the</w>'
    ' <w>beginning</w>, <w>God</w><w savlm="strong:H1254">created</w> <w>the</w> <w>earth</w>.\n'
    """Genesis 1:2: <w>The</w> <w>earth</w> <w>was</w> <w>empty</w>. <div eID="gen25" type="x-p"/>
Genesis 2:1: <w>The</w> <w>heavens</w> <w>were</w> <w>finished</w>.
(engWEB2015eb)
"""
)


def test_bible_verses_become_one_paragraph_per_chapter_without_titles_and_with_words_apart(
    tmp_path,
):
    from keras_s2s.text.english import paragraphs_of_sword_verses

    assert list(paragraphs_of_sword_verses(BIBLE)) == [
        "In the beginning , God created the earth . The earth was empty .",
        "The heavens were finished .",
    ]
    (tmp_path / "bible.txt").write_text(BIBLE)  # recognized by its verse lines, whatever its name
    assert [t for _, t in speakable_sentences([tmp_path / "bible.txt"])] == [
        "in the beginning god created the earth", "the earth was empty", "the heavens were finished",
    ]  # fmt: skip


@pytest.mark.timeout(60)  # a hang guard, not a timing check: the old filter took minutes here
def test_a_long_token_of_letters_is_filtered_in_linear_time():
    text = "Here is a sentence. The token " + "a" * 262_144 + " is long. Another fine one here."
    kept = [pair[1] for pair in map(speakable, sentences_from_text(text)) if pair]
    assert kept == ["here is a sentence", "another fine one here"]
