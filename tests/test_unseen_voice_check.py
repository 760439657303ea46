"""examples/unseen_voice_check.py: held-out sentences of another text, and OUT's record of them."""

import importlib.util
import json
from pathlib import Path

import pytest

from keras_s2s.audio.manifest import write_manifest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "unseen_voice_check.py"
spec = importlib.util.spec_from_file_location("unseen_voice_check", SCRIPT)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

TEXT = (
    "The cat sat on the mat. A dog ran far away today.\n\n"
    "Birds sing in the early morning. Rain falls on the quiet town.\n"
)


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_manifest(folder / "train.csv", [("a.flac", 1.0, "the cat sat on the mat")])
    return folder


def test_sentences_of_another_text_skip_training_transcripts_and_are_drawn_the_same_way(
    tmp_path, corpus
):
    text = tmp_path / "book.txt"
    text.write_text(TEXT)
    drawn = check.sentences_of_text(str(text), 3, corpus)
    assert sorted(drawn) == [
        "a dog ran far away today",
        "birds sing in the early morning",
        "rain falls on the quiet town",
    ], "the training transcript is skipped"
    assert check.sentences_of_text(str(text), 3, corpus) == drawn, "a fixed seed"
    with pytest.raises(SystemExit, match="3 new speakable sentences, fewer than 4"):
        check.sentences_of_text(str(text), 4, corpus)
    with pytest.raises(SystemExit, match="text file not found"):
        check.sentences_of_text(str(tmp_path / "missing.txt"), 1, corpus)
    reserved = tmp_path / "fortunes"
    reserved.write_text(TEXT)
    with pytest.raises(SystemExit, match="kept for independent evaluation"):
        check.sentences_of_text(str(reserved), 1, corpus)


def test_out_keeps_the_longest_list_of_its_sentences_and_refuses_other_ones(tmp_path):
    record = tmp_path / "out" / "sentences.json"
    check.check_cached_sentences(record, ["one", "two"])
    check.check_cached_sentences(record, ["one"])  # a smaller --count reuses the clips
    assert json.loads(record.read_text()) == ["one", "two"]
    check.check_cached_sentences(record, ["one", "two", "three"])
    assert json.loads(record.read_text()) == ["one", "two", "three"]
    with pytest.raises(SystemExit, match="holds audio of other sentences"):
        check.check_cached_sentences(record, ["two"])
    assert json.loads(record.read_text()) == ["one", "two", "three"], "the record is kept"
