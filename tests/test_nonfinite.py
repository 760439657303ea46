"""A non-finite loss is survived: real fits with NaN and inf injected into chosen batches."""

import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_s2s.optimizers import WarmupSchedule, build_optimizer
from keras_s2s.training.nonfinite import DivergenceError, NonFiniteGuard, ScaledSchedule

STEPS = 10  # batches per epoch


def poisoned_data(bad_batches, value=np.nan, batches=40, seed=0):
    """Batches of a linear regression task; those in `bad_batches` (counted over all epochs) hold `value`."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batches * 8, 4)).astype("float32")
    y = x @ rng.normal(size=(4, 2)).astype("float32")
    for batch in bad_batches:
        x[batch * 8 : (batch + 1) * 8] = value
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(8)


def fitted(bad_batches, epochs=3, training=None, value=np.nan, policy="float32", **guard):
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(2)]
    )
    model.compile(
        optimizer=build_optimizer(training or {"learning_rate": 0.01}, policy), loss="mse"
    )
    callback = NonFiniteGuard(**guard)
    history = model.fit(
        poisoned_data(bad_batches, value),
        epochs=epochs,
        steps_per_epoch=STEPS,
        verbose=0,
        shuffle=False,
        callbacks=[callback],
    )
    return model, callback, history


def assert_finite(model):
    assert all(np.isfinite(w.numpy()).all() for w in model.weights)


def test_without_the_guard_one_nan_batch_ruins_the_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer=build_optimizer({"learning_rate": 0.01}, "float32"), loss="mse")
    model.fit(poisoned_data([14]), epochs=2, steps_per_epoch=STEPS, verbose=0, shuffle=False)
    assert not np.isfinite(model.weights[0].numpy()).all()


def test_a_nan_loss_rolls_back_to_the_last_epoch_and_halves_the_learning_rate(caplog):
    with caplog.at_level(logging.WARNING, logger="keras_s2s"):
        model, guard, history = fitted([14])  # epoch 2, batch 5
    assert_finite(model)
    assert guard.done == 1 and np.isfinite(history.history["loss"]).all()
    assert float(model.optimizer.learning_rate) == pytest.approx(0.005)
    assert (
        "the loss is nan; rolled back to epoch 1 (step 10), learning rate x0.5 (rollback 1 of 3)"
        in caplog.text
    )
    assert int(model.optimizer.iterations) == 30 - 5, (
        "the five steps of epoch 2 before the NaN are undone"
    )


def test_a_schedule_is_scaled_and_each_rollback_lowers_it_further():
    training = {"learning_rate": 0.02, "schedule": "inverse_sqrt", "warmup_steps": 4}
    # both in epoch 1: back to the start twice
    model, guard, _ = fitted([3, 6], training=training, epochs=2)
    assert_finite(model)
    assert guard.done == 2
    inner = model.optimizer
    schedule = keras.saving.deserialize_keras_object(inner.get_config()["learning_rate"])
    assert isinstance(schedule, ScaledSchedule) and schedule.factor == pytest.approx(0.25)
    step = int(model.optimizer.iterations)
    expected = WarmupSchedule(0.02, warmup_steps=4, decay="inverse_sqrt")(step) * 0.25
    assert float(model.optimizer.learning_rate) == pytest.approx(float(expected), rel=1e-5)


def test_after_the_allowed_rollbacks_the_run_stops_with_what_to_try():
    with pytest.raises(
        DivergenceError, match=r"after 2 rollback\(s\) .* Try a lower training.learning_rate"
    ):
        fitted([3, 13, 23], rollbacks=2)
    with pytest.raises(ValueError, match=r"lr_factor must be in \(0, 1\]"):
        NonFiniteGuard(lr_factor=1.5)


def test_float16_skipped_steps_are_normal_until_too_many_come_in_a_row(caplog):
    overflow = 1e30  # float16 overflows: inf loss, non-finite gradients, the step skipped
    model, guard, _ = fitted([5, 16], value=overflow, policy="mixed_float16", skipped_steps=3)
    assert guard.done == 0, "isolated skipped steps are what loss scaling is for"
    assert_finite(model)
    with caplog.at_level(logging.WARNING, logger="keras_s2s"):
        model, guard, _ = fitted(
            [12, 13, 14, 15], value=overflow, policy="mixed_float16", skipped_steps=3
        )
    assert guard.done == 1 and "3 batches in a row were skipped by the loss scaling" in caplog.text
    assert "loss scale now" in caplog.text
    assert_finite(model)
