"""`keras-s2s encode`: a parallel corpus tokenized once into a folder of token ids that trains as the
text would, and that refuses damaged or mismatched input by name."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_s2s import cli
from keras_s2s.data.batches import Batching
from keras_s2s.data.encoded import MANIFEST, TRAIN_FILE, read_encoded_splits
from keras_s2s.data.parallel import load_parallel_data, read_splits
from keras_s2s.text.corpus import CorpusError
from keras_s2s.text.tokenizer import SubwordTokenizer


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A split directory of demo pairs: train.tsv, dev.tsv, test.tsv."""
    from keras_s2s.corpora.translation_demo import DemoCorpus

    folder = tmp_path_factory.mktemp("corpus")
    splits = DemoCorpus(seed=0).split(300, 12, 10, seed=1)
    for name, pairs in zip(("train", "dev", "test"), splits):
        (folder / f"{name}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    return folder


@pytest.fixture(scope="module")
def encoded(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("encoded") / "ids"
    assert (
        cli.main(["encode", "--data", str(corpus), "--out", str(out), "--vocab-size", "150"]) == 0
    )
    return out


def test_every_training_pair_is_stored_as_the_ids_its_tokenizer_gives(corpus, encoded):
    manifest = json.loads((encoded / MANIFEST).read_text())
    assert manifest["pairs"] == {"train": 300, "valid": 12, "test": 10}
    assert manifest["vocab_size"] == 150 and manifest["shared_vocabulary"] is True
    tokenizer = SubwordTokenizer.load(encoded / "tokenizer.model")
    text_train, text_valid, text_test, _ = read_splits(str(corpus), num_train=0)
    train, valid, test = read_encoded_splits(encoded)
    assert train == list(
        zip(
            tokenizer.tokenize([s for s, _ in text_train]),
            tokenizer.tokenize([t for _, t in text_train]),
        )
    )
    assert (valid, test) == (text_valid, text_test)
    assert manifest["tokens"]["source"] == sum(len(s) for s, _ in train)


def test_a_run_reads_the_same_batches_from_the_encoded_corpus_as_from_the_text(corpus, encoded):
    """Same tokenizer, settings and seed: the same training and validation batches, and the encoded
    corpus sets the tokenizer-bound data settings the card records."""
    tokenizer = SubwordTokenizer.load(encoded / "tokenizer.model")
    settings = dict(
        batching=Batching(batch_size=16), num_train=200, num_valid=8, fit_to_corpus=["max_length"]
    )
    from_text = load_parallel_data(str(corpus), tokenizer=tokenizer, **settings)
    from_ids = load_parallel_data(str(encoded), vocab_size=9999, **settings)
    assert from_ids.tokenizer.get_config() == tokenizer.get_config()
    assert from_ids.from_corpus == {
        "tokenization": "sentencepiece",
        "shared_vocabulary": True,
        "vocab_size": 150,
    }
    assert from_ids.fitted["max_length"] == from_text.fitted["max_length"]
    assert from_ids.test_pairs == from_text.test_pairs
    for datasets in (
        (from_text.train, from_ids.train),
        (from_text.valid, from_ids.valid),
    ):
        batches = [list(iter(dataset))[:6] for dataset in datasets]
        assert len(batches[0]) == len(batches[1]) > 0
        for (inputs_a, labels_a), (inputs_b, labels_b) in zip(*batches):
            np.testing.assert_array_equal(np.asarray(labels_a), np.asarray(labels_b))
            for key in ("source", "target_in"):
                np.testing.assert_array_equal(np.asarray(inputs_a[key]), np.asarray(inputs_b[key]))


def test_a_resumed_run_refuses_an_encoded_corpus_with_another_vocabulary(encoded):
    other = SubwordTokenizer.train(["a b c d e f g h"] * 50 + ["x y z"] * 50, vocab_size=20)
    with pytest.raises(ValueError, match="tokenizer is not the run's"):
        load_parallel_data(str(encoded), tokenizer=other, batching=Batching(batch_size=8))


def test_a_damaged_or_foreign_folder_is_refused_by_name(encoded, tmp_path):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(encoded, damaged)
    data = bytearray((damaged / TRAIN_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (damaged / TRAIN_FILE).write_bytes(bytes(data))
    with pytest.raises(CorpusError, match=f"{TRAIN_FILE}: its sha256 differs"):
        read_encoded_splits(damaged)
    (damaged / TRAIN_FILE).unlink()
    with pytest.raises(CorpusError, match="file not found"):
        read_encoded_splits(damaged)
    manifest = json.loads((encoded / MANIFEST).read_text())
    (damaged / MANIFEST).write_text(json.dumps({**manifest, "version": 99}))
    with pytest.raises(CorpusError, match="version 99; this keras-s2s reads version 1"):
        read_encoded_splits(damaged)
    (damaged / MANIFEST).write_text("{not json")
    with pytest.raises(CorpusError, match="not a readable manifest"):
        read_encoded_splits(damaged)


def test_every_file_of_the_folder_is_verified_and_the_manifest_schema_checked(
    corpus, encoded, tmp_path, capsys
):
    """Another folder's tokenizer, a test split cut in half, a manifest field removed or null, an
    unknown tokenization, a truncated tokenizer: each trained or scored silently, or was a
    KeyError, TypeError or SentencePiece traceback."""
    import shutil

    from keras_s2s.data.encoded import read_encoded_tokenizer
    from keras_s2s.data.encoded import read_manifest as manifest_of

    manifest = json.loads((encoded / MANIFEST).read_text())
    assert set(manifest["sha256"]) == {TRAIN_FILE, "valid.tsv", "test.tsv", "tokenizer.model"}

    def copy(name):
        folder = tmp_path / name
        shutil.copytree(encoded, folder)
        return folder

    foreign = copy("foreign")
    other = tmp_path / "other-ids"
    assert (
        cli.main(["encode", "--data", str(corpus), "--out", str(other), "--vocab-size", "120"]) == 0
    )
    shutil.copy(other / "tokenizer.model", foreign / "tokenizer.model")
    with pytest.raises(CorpusError, match="tokenizer.model: its sha256 differs"):
        read_encoded_tokenizer(foreign, manifest_of(foreign))
    half = copy("half")
    lines = (half / "test.tsv").read_text().splitlines(keepends=True)
    (half / "test.tsv").write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(CorpusError, match="test.tsv: its sha256 differs"):
        read_encoded_splits(half)
    old = {**manifest, "sha256": {TRAIN_FILE: manifest["sha256"][TRAIN_FILE]}}  # before 2026-12-06
    (half / MANIFEST).write_text(json.dumps(old))
    with pytest.raises(CorpusError, match=r"test.tsv: 5 pairs, encoded.json says 10"):
        read_encoded_splits(half)
    truncated = copy("truncated")
    (truncated / MANIFEST).write_text(json.dumps(old))
    model = (truncated / "tokenizer.model").read_bytes()
    (truncated / "tokenizer.model").write_bytes(model[: len(model) // 3])
    with pytest.raises(CorpusError, match="tokenizer.model: not a readable sentencepiece"):
        read_encoded_tokenizer(truncated, manifest_of(truncated))
    for change, field in (
        ({"tokenization": None}, "tokenization"),
        ({"tokenization": "bpe"}, "tokenization"),
        ({"pairs": {"train": 300}}, "pairs"),
        ({"shared_vocabulary": "yes"}, "shared_vocabulary"),
        ({"sha256": None}, "sha256"),
    ):
        (truncated / MANIFEST).write_text(json.dumps({**manifest, **change}))
        with pytest.raises(CorpusError, match=f"encoded.json: its field '{field}' is"):
            read_encoded_splits(truncated)
    (truncated / MANIFEST).write_text(
        json.dumps({k: v for k, v in manifest.items() if k != "vocab_size"})
    )
    assert (
        cli.main(["train", "gnmt_demo", "--data", str(truncated), "--out", str(tmp_path / "r")])
        == 2
    )
    assert "its field 'vocab_size' is 'missing'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_encode_keeps_what_is_there_and_leaves_nothing_half_written(
    corpus, encoded, tmp_path, capsys, monkeypatch
):
    before = {path.name: path.read_bytes() for path in encoded.iterdir()}
    assert cli.main(["encode", "--data", str(corpus), "--out", str(encoded)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in encoded.iterdir()} == before
    assert cli.main(["encode", "--data", "demo", "--out", str(tmp_path / "x")]) == 2
    assert "the demo task is generated" in capsys.readouterr().err
    assert cli.main(["encode", "--data", str(encoded), "--out", str(tmp_path / "x")]) == 2
    assert "is an encoded corpus already" in capsys.readouterr().err

    from keras_s2s.data import encoded as module

    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module, "save_run_tokenizer", full_disk)
    out = tmp_path / "out"
    args = ["encode", "--data", str(corpus), "--out", str(out), "--vocab-size", "150"]
    assert cli.main(args) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [], "no folder, no staging left"


@pytest.mark.parametrize(
    "size, message",
    [(3, "above the 4 reserved ids .*, got 3"), (5, "vocab_size 5 is too small .* use at least")],
)
def test_a_vocabulary_too_small_for_the_corpus_is_named_and_nothing_is_written(
    corpus, tmp_path, capsys, size, message
):
    """SentencePiece's INTERNAL RuntimeError traceback before, on encode and train alike."""
    import re

    out = tmp_path / "out"
    assert (
        cli.main(["encode", "--data", str(corpus), "--out", str(out), "--vocab-size", str(size)])
        == 2
    )
    assert re.search(message, capsys.readouterr().err) and not out.exists()
    run = ["train", "gnmt_demo", "--data", str(corpus), "--set", f"data.vocab_size={size}"]
    assert cli.main([*run, "--out", str(tmp_path / "run")]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == [], "no run folder left behind"
