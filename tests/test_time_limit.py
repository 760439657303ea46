"""Training for a time budget, counted over restarts (a fake clock: no test waits for real time)."""

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml
from tiny import TINY_GNMT, flags

from keras_s2s import zoo
from keras_s2s.cli import main
from keras_s2s.config import CardError, parse_duration
from keras_s2s.training.backup import AtomicBackupAndRestore
from keras_s2s.training.runner import _run_card
from keras_s2s.training.time_limit import (
    DeadlineLearningRate,
    TimeLimit,
    deadline_rate,
    format_duration,
    schedule_replaced_by_deadline,
)


class FakeClock:
    """Time that moves only when a batch ends (`Tick`), by `seconds_per_batch`."""

    def __init__(self, seconds_per_batch=1.0):
        self.now, self.seconds_per_batch = 1000.0, seconds_per_batch

    def __call__(self):
        return self.now


class Tick(keras.callbacks.Callback):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def on_train_batch_end(self, batch, logs=None):
        self.clock.now += self.clock.seconds_per_batch


def test_durations_are_read_and_written_with_units():
    assert [parse_duration(t) for t in ("25m", "2h", "1h30m", "90s", "1.5h", "1d")] == [
        1500,
        7200,
        5400,
        90,
        5400,
        86400,
    ]
    for bad in ("", "10", "abc", "0m", "-5m", "5x"):
        with pytest.raises(ValueError, match="duration|longer than 0"):
            parse_duration(bad)
    assert [format_duration(s) for s in (3900, 750, 45, -3)] == ["1h05m", "12m30s", "45s", "0s"]
    from keras_s2s import zoo

    assert zoo.get_card("gnmt", **{"training.time_limit": "25m"}).training["time_limit"] == "25m"
    with pytest.raises(
        CardError, match="'training.time_limit' must be a duration such as 25m, 2h or 1h30m"
    ):
        zoo.get_card("gnmt", **{"training.time_limit": "soon"})


def fit_for(backup_dir, clock, limit, epochs=5, steps=4):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    data = tf.data.Dataset.from_tensor_slices(
        (np.ones((8, 3), "float32"), np.ones((8, 1), "float32"))
    )
    backup = AtomicBackupAndRestore(backup_dir, clock=clock)
    limiter = TimeLimit(limit, backup.seconds_spent)
    model.fit(
        data.batch(2).repeat(),
        epochs=epochs,
        steps_per_epoch=steps,
        verbose=0,
        initial_epoch=backup.restore(model),
        callbacks=[Tick(clock), backup, limiter],
    )
    return model, limiter


def test_training_stops_when_the_budget_is_spent_and_a_restart_counts_the_time_before(
    tmp_path, caplog
):
    clock = FakeClock(seconds_per_batch=10.0)
    with caplog.at_level(logging.INFO, logger="keras_s2s"):
        model, limiter = fit_for(tmp_path / "a", clock, limit=55.0)
    assert limiter.reached and int(model.optimizer.iterations) == 6, (
        "stopped after the step that spent 60 s"
    )
    assert (
        "time limit of 55s reached: stopping after step 2 of this epoch's 4" in caplog.text
        and "40s of the 55s time limit spent, 15s left" in caplog.text
    )
    model, limiter = fit_for(tmp_path / "b", FakeClock(10.0), limit=1e9)
    assert not limiter.reached and int(model.optimizer.iterations) == 20, (
        "a budget not reached changes nothing"
    )

    class Crash(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt  # killed after two epochs (80 s), their backup committed

    clock = FakeClock(10.0)
    keras.utils.set_random_seed(0)
    crashed = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    crashed.compile(optimizer="adam", loss="mse")
    data = tf.data.Dataset.from_tensor_slices(
        (np.ones((8, 3), "float32"), np.ones((8, 1), "float32"))
    )
    backup = AtomicBackupAndRestore(tmp_path / "c", clock=clock)
    with pytest.raises(KeyboardInterrupt):
        crashed.fit(
            data.batch(2).repeat(),
            epochs=5,
            steps_per_epoch=4,
            verbose=0,
            callbacks=[Tick(clock), backup, TimeLimit(100.0, backup.seconds_spent), Crash()],
        )
    assert json.loads((tmp_path / "c" / "latest.json").read_text())["train_seconds"] == 80.0
    clock.now += 3600  # the restart comes an hour later: the pause is not training time
    model, limiter = fit_for(tmp_path / "c", clock, limit=100.0)
    assert limiter.reached and int(model.optimizer.iterations) == 8 + 2, (
        "80 s before the crash + 2 steps"
    )


def test_time_spent_validating_past_the_budget_starts_no_other_epoch(tmp_path, caplog):
    clock = FakeClock(seconds_per_batch=10.0)

    # runs before the limit's epoch end, as BestCheckpoint does
    class SlowValidation(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            clock.now += 25.0

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    data = tf.data.Dataset.from_tensor_slices(
        (np.ones((8, 3), "float32"), np.ones((8, 1), "float32"))
    )
    backup = AtomicBackupAndRestore(tmp_path / "b", clock=clock)
    limiter = TimeLimit(60.0, backup.seconds_spent)
    with caplog.at_level(logging.INFO, logger="keras_s2s"):
        model.fit(
            data.batch(2).repeat(),
            epochs=5,
            steps_per_epoch=4,
            verbose=0,
            callbacks=[Tick(clock), SlowValidation(), backup, limiter],
        )
    assert int(model.optimizer.iterations) == 4, (
        "40 s of steps + 25 s validating = 65 s: no second epoch"
    )
    assert (
        limiter.reached
        and "time limit of 1m00s reached at the end of epoch 1: stopping" in caplog.text
    )


TINY = TINY_GNMT + flags(steps_per_epoch=2)


def test_train_with_a_time_limit_and_no_step_count_trains_until_the_budget_is_spent(
    tmp_path, capsys, monkeypatch, caplog
):
    from keras_s2s.training import runner

    clock = {"now": 0.0}

    def ticking():  # every reading of the training clock moves it on by a second
        clock["now"] += 1.0
        return clock["now"]

    monkeypatch.setattr(runner, "_train_clock", ticking)
    out = tmp_path / "run"
    # the card's schedule, replaced by the default
    with caplog.at_level(logging.INFO, logger="keras_s2s"):
        assert (
            main(
                [
                    "train",
                    "gnmt",
                    "--data",
                    "demo",
                    "--time-limit",
                    "12s",
                    "--out",
                    str(out),
                    *TINY,
                    "--set",
                    "lr_floor=0.05",
                ]
            )
            == 0
        )
    assert (
        "training.schedule: deadline (card: warmup_exponential) - the default with a time limit"
        in caplog.text
    )
    assert yaml.safe_load((out / "card.yaml").read_text())["training"]["schedule"] == "deadline"
    printed = capsys.readouterr().out
    history = json.loads((out / "history.json").read_text())
    rates = history["learning_rate"]
    assert rates[-1] < rates[0] and rates[-1] < 0.2 * 0.003, "ends near the floor (5% of the peak)"
    assert "until 12s are spent, in epochs of 2 steps" in printed and "held-out BLEU" in printed
    metadata = json.loads((out / "preset" / "metadata.json").read_text())
    assert (
        2 <= metadata["training_steps"] < 12 and metadata["card"]["training"]["time_limit"] == "12s"
    )
    assert metadata["train_seconds"] >= 12


def test_a_bad_time_limit_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["train", "gnmt", "--time-limit", "10"])
    assert exit_.value.code == 2 and "'10' is not a duration" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_time_limit_brings_the_deadline_schedule_unless_the_user_names_one():
    training = {"schedule": "inverse_sqrt", "time_limit": "25m"}
    assert schedule_replaced_by_deadline(training, given={"time_limit"}) == "inverse_sqrt"
    named = {"schedule": "inverse_sqrt", "time_limit": "25m"}
    assert schedule_replaced_by_deadline(named, given={"schedule", "time_limit"}) is None
    untimed = {"schedule": "inverse_sqrt"}
    assert schedule_replaced_by_deadline(untimed, given=set()) is None
    card = zoo.get_card("transformer_demo", time_limit="25m")
    run_card = _run_card("transformer_demo", {"time_limit": "25m"})
    assert run_card.training["schedule"] == "deadline" and card.training["schedule"] != "deadline"
    assert zoo.get_card("transformer_demo").training.get("time_limit") is None


def test_the_deadline_schedule_ends_at_its_floor_when_the_budget_runs_out():
    assert deadline_rate(1.0, step=0, spent_share=0.0, warmup_steps=4) == 0.25  # warmup by steps
    assert deadline_rate(1.0, step=50, spent_share=0.0, warmup_steps=4) == 1.0
    # half-way down
    assert deadline_rate(1.0, step=50, spent_share=0.5, floor=0.2) == pytest.approx(0.6)
    assert deadline_rate(1.0, step=50, spent_share=1.0, floor=0.2) == pytest.approx(0.2)
    # past it: the floor
    assert deadline_rate(1.0, step=50, spent_share=3.0, floor=0.2) == pytest.approx(0.2)

    # another callback lowering the rate (as the non-finite guard does)
    class Halve(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if int(self.model.optimizer.iterations) == 5:
                self.model.optimizer.learning_rate = float(self.model.optimizer.learning_rate) / 2

    class Record(keras.callbacks.Callback):
        rates = []

        def on_train_batch_end(self, batch, logs=None):
            self.rates.append(float(self.model.optimizer.learning_rate))

    # a fast and a slow machine: both end at the floor at the deadline
    for steps_per_second in (
        1.0,
        0.25,
    ):
        clock = FakeClock(seconds_per_batch=1.0 / steps_per_second)
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
        data = tf.data.Dataset.from_tensor_slices(
            (np.ones((8, 3), "float32"), np.ones((8, 1), "float32"))
        )
        spent = lambda start=clock.now: clock.now - start  # noqa: E731, B023
        Record.rates = []
        budget = 40.0
        model.fit(
            data.batch(2).repeat(),
            epochs=100,
            steps_per_epoch=4,
            verbose=0,
            callbacks=[
                Tick(clock),
                TimeLimit(budget, spent),
                DeadlineLearningRate(0.1, budget, spent, floor=0.1),
                Record(),
                Halve(),
            ],
        )
        steps = len(Record.rates)
        assert steps == budget * steps_per_second
        assert Record.rates[0] == pytest.approx(0.1)
        assert Record.rates[-1] == pytest.approx(
            0.5 * deadline_rate(0.1, steps, (steps - 1) / steps, floor=0.1), rel=1e-5
        ), "the last step: at the floor, halved by the other"
        assert Record.rates[-1] < 0.5 * 0.1 * 0.15 and all(
            a >= b for a, b in zip(Record.rates, Record.rates[1:])
        )


def test_the_deadline_schedule_needs_a_time_limit(tmp_path, capsys):
    assert (
        main(
            [
                "train",
                "gnmt",
                "--data",
                "demo",
                "--out",
                str(tmp_path / "run"),
                *TINY,
                "--set",
                "schedule=deadline",
            ]
        )
        == 2
    )
    assert (
        "schedule deadline decays by the share of the time budget spent: give --time-limit"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "run").exists()
