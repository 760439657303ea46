"""Validation BLEU while training, the best checkpoint, early stop and averaging the best epochs."""

import json

import numpy as np
import pytest
from tiny import TINY_GNMT, flags

from keras_s2s.cli import main
from keras_s2s.training.runner import load_model
from keras_s2s.training.validation import BestCheckpoint

TINY = TINY_GNMT + flags(steps_per_epoch=3)


def test_every_epoch_is_scored_and_the_run_finishes_with_the_best_weights(
    tmp_path, capsys, monkeypatch
):
    from keras_s2s.training import validation

    made_up = iter([10.0, 30.0, 20.0])  # the dev BLEU of epochs 1-3: epoch 2 is the best

    def fixed_bleu(hypotheses, references):
        value = next(made_up)
        return {"bleu": value, "chrf": value + 1, "bleu_signature": "test"}

    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(validation, "score", fixed_bleu)
        assert (
            main(["train", "gnmt", "--data", "demo", "--epochs", "3", "--out", str(out), *TINY])
            == 0
        )
    state = json.loads((out / "checkpoints" / "best.json").read_text())
    assert state == {"metric": "bleu", "best_epoch": 2, "scores": {"1": 10.0, "2": 30.0, "3": 20.0}}
    history = json.loads((out / "history.json").read_text())
    assert history["val_bleu"] == [10.0, 30.0, 20.0] and history["val_chrf"] == [11.0, 31.0, 21.0]
    final, epoch2 = load_model(out), load_model(out)
    epoch2.load_weights(out / "checkpoints" / "epoch-002.weights.h5")
    for a, b in zip(final.weights, epoch2.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    metadata = json.loads((out / "preset" / "metadata.json").read_text())
    assert metadata["metrics"]["best_epoch"] == 2 and metadata["training_steps"] == 9

    capsys.readouterr()
    assert (
        main(["average", "--model", str(out), "--best", "2", "--out", str(tmp_path / "avg")]) == 0
    )
    assert (
        "averaged 2 checkpoints (epoch-002.weights.h5, epoch-003.weights.h5)"
        in capsys.readouterr().out
    )
    assert (
        main(["average", "--model", str(out), "--best", "4", "--out", str(tmp_path / "avg4")]) == 2
    )


def test_real_validation_bleu_is_logged_and_training_stops_after_patience(tmp_path, capsys):
    out = tmp_path / "run"
    frozen = [
        "--set",
        "training.learning_rate=0.0",
        "--set",
        "schedule=constant",  # no epoch can gain
        "--set",
        "training.validation.metric=loss",
        "--set",
        "training.validation.patience=2",
    ]
    assert (
        main(
            ["train", "gnmt", "--data", "demo", "--epochs", "6", "--out", str(out), *TINY, *frozen]
        )
        == 0
    )
    history = json.loads((out / "history.json").read_text())
    assert len(history["loss"]) == 3, "epoch 1 is the best; two epochs without gain stop the run"
    assert (
        main(
            [
                "train",
                "gnmt",
                "--data",
                "demo",
                "--epochs",
                "1",
                "--out",
                str(tmp_path / "bleu"),
                *TINY,
            ]
        )
        == 0
    )
    history = json.loads((tmp_path / "bleu" / "history.json").read_text())
    assert 0 <= history["val_bleu"][0] <= 100 and "val_chrf" in history


def test_bad_validation_settings_are_refused():
    with pytest.raises(ValueError, match="metric must be one of bleu, chrf, loss"):
        BestCheckpoint("x", metric="accuracy")
    with pytest.raises(ValueError, match="needs dev pairs"):
        BestCheckpoint("x", pairs=[], metric="bleu")
    with pytest.raises(ValueError, match="min_delta must be at least 0"):
        BestCheckpoint("x", metric="loss", min_delta=-1)


def test_the_last_weights_stay_when_an_earlier_epoch_is_better_only_by_noise(tmp_path, monkeypatch):
    import keras

    from keras_s2s.training import validation

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    model.translate = lambda sources: sources

    def finish(scores, **settings):
        """(epoch of the final weights, the epoch those weights hold, the best epoch)"""
        best = BestCheckpoint(tmp_path / str(scores), pairs=[("a", "a")], **settings)
        best.set_model(model)
        for epoch, value in enumerate(scores, start=1):
            # the weights say which epoch they are
            model.layers[0].kernel.assign([[float(epoch)], [0.0]])
            monkeypatch.setattr(validation, "score", lambda h, r, v=value: {"bleu": v, "chrf": v})
            best.on_epoch_end(epoch - 1)
        return best.restore_best(model), int(model.layers[0].kernel.numpy()[0, 0]), best.best_epoch

    assert finish([10.0, 20.3, 20.0]) == (3, 3, 2), (
        "0.3 BLEU under the best: noise, the last weights stay"
    )
    assert finish([10.0, 21.0, 20.0]) == (2, 2, 2), "1 BLEU under: the best epoch's weights"
    assert finish([10.0, 20.3, 20.0], min_delta=0.0) == (2, 2, 2)
    assert finish([10.0, 20.0, 30.0]) == (3, 3, 3)
