"""Validation BLEU or WER while training, the best checkpoint, early stop and averaging the best epochs."""

import json

import numpy as np
import pytest
from tiny import TINY_GNMT, flags

from keras_s2s.cli import main
from keras_s2s.training.runner import load_model
from keras_s2s.training.validation import BestCheckpoint, read_scores

TINY = TINY_GNMT + flags(steps_per_epoch=3)


def test_every_epoch_is_scored_and_the_run_finishes_with_the_best_weights(
    tmp_path, capsys, monkeypatch
):
    from keras_s2s.tasks import translation

    made_up = iter([10.0, 30.0, 20.0])  # the dev BLEU of epochs 1-3: epoch 2 is the best

    def fixed_bleu(hypotheses, references):
        value = next(made_up, 0.0)  # then the test split's
        return {"bleu": value, "chrf": value + 1, "bleu_signature": "test"}

    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(translation, "score", fixed_bleu)
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
    with pytest.raises(ValueError, match="metric must be one of bleu, chrf, wer, loss"):
        BestCheckpoint("x", metric="accuracy")
    with pytest.raises(ValueError, match="needs a validation split to decode"):
        BestCheckpoint("x", pairs=[], metric="bleu", scores=lambda model, pairs: {})
    with pytest.raises(ValueError, match="needs a validation split to decode"):
        BestCheckpoint("x", pairs=[("a.wav", "a")], metric="wer")  # nothing to score them
    with pytest.raises(ValueError, match="min_delta must be at least 0"):
        BestCheckpoint("x", metric="loss", min_delta=-1)


def test_the_last_weights_stay_when_an_earlier_epoch_is_better_only_by_noise(tmp_path):
    import keras

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])

    def finish(scores, metric="bleu", **settings):
        """(epoch of the final weights, the epoch those weights hold, the best epoch)"""
        values = iter(scores)
        best = BestCheckpoint(
            tmp_path / f"{metric}{scores}", pairs=[("a", "a")], metric=metric,
            scores=lambda model, pairs: dict.fromkeys(("bleu", "chrf", "wer"), next(values)),
            **settings,
        )  # fmt: skip
        best.set_model(model)
        for epoch in range(1, len(scores) + 1):
            # the weights say which epoch they are
            model.layers[0].kernel.assign([[float(epoch)], [0.0]])
            best.on_epoch_end(epoch - 1)
        return best.restore_best(model), int(model.layers[0].kernel.numpy()[0, 0]), best.best_epoch

    assert finish([10.0, 20.3, 20.0]) == (3, 3, 2), (
        "0.3 BLEU under the best: noise, the last weights stay"
    )
    assert finish([10.0, 21.0, 20.0]) == (2, 2, 2), "1 BLEU under: the best epoch's weights"
    assert finish([10.0, 20.3, 20.0], min_delta=0.0) == (2, 2, 2)
    assert finish([10.0, 20.0, 30.0]) == (3, 3, 3)
    # WER: lower is better, the same noise margin (0.5 points)
    assert finish([60.0, 41.0, 50.0], metric="wer") == (2, 2, 2), "9 points above the best"
    assert finish([60.0, 41.0, 41.3], metric="wer") == (3, 3, 2), "0.3 points: noise"
    assert finish([60.0, 50.0, 40.0], metric="wer") == (3, 3, 3)
    assert read_scores(tmp_path / "wer[60.0, 50.0, 40.0]") == {1: -60.0, 2: -50.0, 3: -40.0}


def test_a_recognizer_is_validated_by_greedy_wer_and_keeps_its_best_epoch(tmp_path, monkeypatch):
    from keras_s2s.tasks import recognition

    def fixed_rates(hypotheses, references):
        assert len(hypotheses) == len(references)
        # the 2 dev utterances after each epoch, then the 3 of the test split
        wer, cer = next(made_up) if len(references) == 2 else (50.0, 20.0)
        return {"wer": wer, "cer": cer}

    monkeypatch.setattr(recognition, "error_rates", fixed_rates)
    out = tmp_path / "run"
    tiny = flags(
        channels=[16, 16], kernels=[5, 5], dropouts=[0.1, 0.1], prologue_channels=16,
        epilogue_channels=[16, 16], epilogue_kernel=5, num_train=12, num_valid=2, num_test=3,
        batch_size=4, steps_per_epoch=2, precision="float32",
    )  # fmt: skip
    train = ["train", "wave2letter_demo", "--data", "demo-speech", "--epochs", "3"]
    made_up = iter([(80.0, 40.0), (30.0, 12.0), (55.0, 20.0)])  # epoch 2 the best: the lowest WER
    assert main([*train, "--out", str(out), *tiny]) == 0
    state = json.loads((out / "checkpoints" / "best.json").read_text())
    assert state == {"metric": "wer", "best_epoch": 2, "scores": {"1": 80.0, "2": 30.0, "3": 55.0}}
    history = json.loads((out / "history.json").read_text())
    assert history["val_wer"] == [80.0, 30.0, 55.0] and history["val_cer"] == [40.0, 12.0, 20.0]
    final, epoch2 = load_model(out), load_model(out)
    epoch2.load_weights(out / "checkpoints" / "epoch-002.weights.h5")
    for a, b in zip(final.weights, epoch2.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_validation_metric_of_another_task_is_refused_with_its_line_before_any_work(tmp_path):
    from keras_s2s import zoo
    from keras_s2s.config import CardError

    card = tmp_path / "asr.yaml"
    card.write_text("base: wave2letter_demo\ntraining:\n  validation:\n    metric: bleu\n")
    with pytest.raises(CardError, match=r"asr.yaml, line 4: .*bleu does not score a speech "
                       r"recognizer \(its validation metrics: wer, loss\)"):  # fmt: skip
        zoo.get_card(str(card))
    with pytest.raises(CardError, match="wer does not score a translation model"):
        zoo.get_card("gnmt_demo", **{"training.validation.metric": "wer"})
    out = tmp_path / "run"
    assert main(["train", str(card), "--data", "demo-speech", "--out", str(out)]) == 2
    assert not out.exists(), "refused before anything is written"
