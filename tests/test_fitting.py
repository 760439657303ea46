"""Data settings fitted to a real corpus: vocabulary size, max_length, all training pairs."""

import json
import logging
import random

import pytest
import yaml

from keras_s2s.cli import main
from keras_s2s.data import load_parallel_data
from keras_s2s.data.fitting import fitted_max_length, fitted_vocab_size

WORDS = "file open save close print edit view window help tool image layer color brush text font".split()
GERMAN = (
    "datei öffnen speichern schließen drucken bearbeiten ansicht fenster hilfe werkzeug bild ebene farbe "
    "pinsel text schrift".split()
)


def corpus_pairs(count=600, seed=0):
    """Pairs of 2-12 words, 1% of them far longer (the tail a fitted max_length cuts into)."""
    rng = random.Random(seed)
    pairs = []
    for index in range(count):
        length = rng.randint(2, 12) if index % 100 else rng.randint(25, 45)
        picks = [rng.randrange(len(WORDS)) for _ in range(length)]
        pairs.append(
            (
                " ".join(WORDS[p] for p in picks) + f" {index}",
                " ".join(GERMAN[p] for p in picks) + f" {index}",
            )
        )
    return pairs


def write_corpus(root, pairs):
    root.mkdir(exist_ok=True)
    (root / "train.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    return root


def test_the_vocabulary_grows_with_the_corpus_on_a_fixed_ladder():
    assert fitted_vocab_size([("a b", "c d")] * 100)[0] == 2000  # 400 words: the smallest size
    # 5M words: 5,000, nearest on a log scale
    assert fitted_vocab_size([("a b", "c d e")] * 1_000_000)[0] == 4000
    assert fitted_vocab_size([("a b c", "d e f")] * 1_000_000)[0] == 8000  # 6M words: 6,000
    size, reason = fitted_vocab_size([("a " * 10, "b " * 10)] * 1_000_000)
    assert size == 16000 and "20,000,000 running words" in reason
    assert fitted_vocab_size([("a " * 50, "b " * 50)] * 1_000_000)[0] == 32000  # capped


def test_fitted_settings_keep_99_percent_of_the_pairs_and_say_why(tmp_path, caplog):
    root = write_corpus(tmp_path / "corpus", corpus_pairs())
    data = load_parallel_data(
        str(root),
        vocab_size=120,
        max_length=8,
        num_train=100,
        num_valid=20,
        num_test=20,
        fit_to_corpus=["max_length", "num_train"],
    )
    max_length, reason = data.fitted["max_length"]
    assert max_length % 8 == 0 and "99.5%" in reason
    # all, not the 100 asked for
    assert data.fitted["num_train"][0] == 0 and len(data.train_pairs) == 560
    lengths = [
        max(len(s), len(t)) + 1
        for s, t in zip(
            data.tokenizer.source.tokenize([s for s, _ in data.train_pairs]),
            data.tokenizer.target.tokenize([t for _, t in data.train_pairs]),
        )
    ]
    kept = sum(length <= max_length for length in lengths) / len(lengths)
    assert 0.99 <= kept < 1.0, "only the longest of the long pairs are cut"
    capped = load_parallel_data(
        str(root),
        vocab_size=120,
        num_valid=20,
        num_test=20,
        fit_to_corpus=["max_length"],
        length_limit=16,
    )
    assert (
        capped.fitted["max_length"][0] == 16
        and "capped at the model's 16 positions" in capped.fitted["max_length"][1]
    )


def test_the_demo_and_unfitted_settings_stay_as_written(tmp_path):
    demo = load_parallel_data(
        "demo",
        vocab_size=200,
        num_train=300,
        num_valid=10,
        num_test=10,
        fit_to_corpus=["vocab_size", "max_length", "num_train"],
    )
    assert demo.fitted == {} and len(demo.train_pairs) == 300
    with pytest.raises(
        ValueError, match="cannot fit batch_size; it may name vocab_size, max_length, num_train"
    ):
        load_parallel_data("demo", fit_to_corpus=["batch_size"])


TINY = [
    "--set",
    "units=16",
    "--set",
    "num_layers=2",
    "--set",
    "num_valid=16",
    "--set",
    "num_test=8",
    "--set",
    "batch_size=16",
    "--set",
    "decode_max_length=20",
    "--precision",
    "float32",
    "--set",
    "steps_per_epoch=2",
    "--set",
    "training.validation.metric=loss",
]


def test_train_records_the_fitted_settings_and_resumes_with_them(tmp_path, caplog):
    root = write_corpus(tmp_path / "corpus", corpus_pairs(400))
    out = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="keras_s2s"):
        assert (
            main(
                [
                    "train",
                    "gnmt",
                    "--data",
                    str(root),
                    "--epochs",
                    "1",
                    "--out",
                    str(out),
                    *TINY,
                    "--set",
                    "vocab_size=150",
                ]
            )
            == 0
        )
    messages = caplog.text
    assert (
        "data.max_length fitted to the corpus" in messages
        and "fix it with --set max_length=N" in messages
    )
    assert (
        "data.num_train fitted to the corpus: 0 (card: 200000) - all 376 training pairs" in messages
    )
    assert "data.vocab_size fitted" not in messages  # given on the command line: as written
    card = yaml.safe_load((out / "card.yaml").read_text())
    assert card["data"]["vocab_size"] == 150 and card["data"]["num_train"] == 0
    assert card["data"]["fit_to_corpus"] == ["max_length", "num_train"]
    assert card["data"]["max_length"] % 8 == 0 and card["data"]["max_length"] != 64
    # the same command again, longer: the run resumes (the fitted card is no change of settings)
    (out / "preset").rename(out / "preset-first")
    (out / "model.keras").unlink()
    assert (
        main(
            [
                "train",
                "gnmt",
                "--data",
                str(root),
                "--epochs",
                "2",
                "--out",
                str(out),
                *TINY,
                "--set",
                "vocab_size=150",
            ]
        )
        == 0
    )
    assert len(json.loads((out / "history.json").read_text())["loss"]) == 2


class _Words:
    """A tokenizer that splits on spaces (source and target alike)."""

    source = target = property(lambda self: self)

    def tokenize(self, texts):
        return [text.split() for text in texts]


def test_a_few_huge_pairs_do_not_size_a_small_corpus():
    rng = random.Random(0)
    pairs = [("w " * rng.randint(3, 20), "w " * rng.randint(3, 20)) for _ in range(150)]
    pairs += [("w " * 1000, "w " * 1000), ("w " * 1500, "w")]
    length, reason = fitted_max_length(pairs, _Words())
    assert length == 24 and "after leaving out 2 outlier(s) of up to 1501" in reason
    # on a corpus of 200 pairs or more, the 0.5% left out are the longest: no fence
    length, reason = fitted_max_length(pairs + pairs[:125] * 2, _Words())
    assert length == 24 and "outlier" not in reason
    # a corpus of near-equal lengths keeps all of them (the fence is at least twice the third quartile)
    assert fitted_max_length([("w " * 10, "w")] * 90 + [("w " * 19, "w")] * 3, _Words())[0] == 24


def test_a_step_that_would_not_fit_in_memory_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, capsys
):
    from keras_s2s.training import memory

    root = write_corpus(tmp_path / "corpus", corpus_pairs(200))
    out = tmp_path / "run"
    command = ["train", "transformer_demo", "--data", str(root), "--out", str(out), "--epochs", "1",
               "--set", "max_length=512", "--set", "vocab_size=150", "--precision", "float32"]  # fmt: skip
    monkeypatch.setattr(memory, "available_memory", lambda: (2 * memory.GIB, "here"))
    assert main(command) == 2
    error = capsys.readouterr().err
    assert "one training step on the longest batches (96 x 512 tokens) needs about" in error
    assert "2.0 GiB are available here" in error and "--set max_length=" in error
    assert "--set batch_size=" in error and "Traceback" not in error
    assert not out.exists() or not any(out.iterdir()), "nothing written"
    # the largest max_length it names fits
    fits = int(error.split("--set max_length=")[1].split()[0])
    from keras_s2s import zoo

    model = zoo.load("transformer_demo", vocab_size=150, max_positions=1024)
    assert (
        model.training_step_bytes(96, fits)
        <= 2 * memory.GIB
        < model.training_step_bytes(96, fits + 8)
    )
