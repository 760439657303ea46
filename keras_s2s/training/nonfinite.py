"""Surviving a non-finite loss: roll back to the last good state, lower the learning rate, go on.

A run whose loss turns NaN or inf usually dies (or, worse, trains on as NaN).
`NonFiniteGuard` watches every step:

- float32 / bfloat16 (no loss scaling): any non-finite loss is a divergence.
- float16 (a `LossScaleOptimizer`): an overflowing step is skipped by the loss
  scaling, which is normal now and then; `skipped_steps` batches in a row
  without an update are a divergence.

On a divergence it restores the weights and optimizer state kept at the start
of training and after every epoch whose loss was finite (the state the epoch's
checkpoint holds, kept in memory), multiplies the learning rate by
`lr_factor` (and the loss scale too, where there is one), logs what happened
and trains on. After `rollbacks` rollbacks the next divergence stops the run
with a `DivergenceError` that says what to try; the run's backup still holds
the last good epoch.

Card settings (`training.nonfinite`): `rollbacks` (default 3), `lr_factor`
(0.5), `skipped_steps` (20).

Example:
    >>> model.fit(data, epochs=4, callbacks=[NonFiniteGuard(rollbacks=3, lr_factor=0.5)])
"""

from __future__ import annotations

import logging
import math

import keras
import numpy as np

log = logging.getLogger("keras_s2s")
NONFINITE_KEYS = ("rollbacks", "lr_factor", "skipped_steps")


class DivergenceError(ValueError):
    """Training kept diverging after every rollback it was allowed."""


@keras.saving.register_keras_serializable(package="keras_s2s")
class ScaledSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`factor` times another learning-rate schedule (what a rollback leaves in place of the card's).

    Example:
        >>> ScaledSchedule(WarmupSchedule(1e-3, warmup_steps=100), 0.5)(step)
    """

    def __init__(self, schedule, factor: float):
        if isinstance(schedule, dict):
            schedule = keras.saving.deserialize_keras_object(schedule)
        self.schedule, self.factor = schedule, float(factor)

    def __call__(self, step):
        return self.schedule(step) * self.factor

    def get_config(self):
        return {
            "schedule": keras.saving.serialize_keras_object(self.schedule),
            "factor": self.factor,
        }


def _rate_variable(optimizer):
    """The variable holding `optimizer`'s learning rate, or None when a schedule computes it."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return (
        inner.learning_rate
        if isinstance(inner.get_config()["learning_rate"], (int, float))
        else None
    )


def lower_learning_rate(optimizer, factor: float) -> bool:
    """Multiply `optimizer`'s learning rate (a float or a schedule) by `factor`; True when the training
    function must be traced again (a schedule is replaced, a rate variable is only assigned)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    variable = _rate_variable(optimizer)
    if variable is not None:
        variable.assign(float(variable.numpy()) * factor)
        return False
    schedule = keras.saving.deserialize_keras_object(inner.get_config()["learning_rate"])
    if isinstance(schedule, ScaledSchedule):
        schedule = ScaledSchedule(schedule.schedule, schedule.factor * factor)
    else:
        schedule = ScaledSchedule(schedule, factor)
    inner.learning_rate = schedule
    return True


class NonFiniteGuard(keras.callbacks.Callback):
    """Roll back to the last good state on a non-finite loss (or a run of skipped float16 steps).

    Args:
        rollbacks: int. Rollbacks allowed; the next divergence raises `DivergenceError`.
        lr_factor: float in (0, 1]. Multiplies the learning rate (and any loss scale) at each rollback.
        skipped_steps: int. float16: batches in a row without an update that count as a divergence.
    """

    def __init__(self, rollbacks: int = 3, lr_factor: float = 0.5, skipped_steps: int = 20):
        super().__init__()
        if not 0 < lr_factor <= 1:
            raise ValueError(f"training.nonfinite.lr_factor must be in (0, 1], got {lr_factor}")
        self.rollbacks, self.lr_factor, self.skipped_steps = (
            int(rollbacks),
            float(lr_factor),
            int(skipped_steps),
        )
        self.done = 0
        self._good = None  # (variables' values, step, description) of the last good state

    def _variables(self):
        """What a rollback restores: weights and optimizer state, but not a learning-rate variable (each
        rollback lowers the rate further) or the loss scale (lowered from where the skipping left it)."""
        optimizer = self.model.optimizer
        keep_going = [_rate_variable(optimizer), getattr(optimizer, "dynamic_scale", None)]
        return [
            v
            for v in [*self.model.weights, *optimizer.variables]
            if not any(v is k for k in keep_going)
        ]

    def _step(self) -> int:
        # .numpy(): a MirroredVariable has no __int__
        return int(self.model.optimizer.iterations.numpy())

    def _keep(self, where: str) -> None:
        self._good = ([np.array(v.numpy()) for v in self._variables()], self._step(), where)

    def on_train_begin(self, logs=None):
        if self.model.optimizer is not None and not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)
        self._keep("the start of training")
        self._last_iterations, self._batches_without_update = self._step(), 0
        self._scaled = hasattr(self.model.optimizer, "dynamic_scale")
        self._batches_per_call = int(getattr(self.model, "steps_per_execution", 1) or 1)
        # under loss scaling
        inner = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)
        self._batches_per_update = int(getattr(inner, "accumulate_steps", 1))

    def on_train_batch_end(self, batch, logs=None):
        loss = float((logs or {}).get("loss", 0.0))
        iterations = self._step()
        updated, self._last_iterations = iterations != self._last_iterations, iterations
        self._batches_without_update = (
            0 if updated else self._batches_without_update + self._batches_per_call
        )
        if not self._scaled:
            if not math.isfinite(loss):
                self._roll_back(f"the loss is {loss}")
        elif self._batches_without_update >= self.skipped_steps * self._batches_per_update:
            self._roll_back(
                f"{self._batches_without_update} batches in a row were skipped by the loss scaling "
                f"(non-finite gradients; loss {loss:.4g})"
            )
        elif not math.isfinite(loss):
            self.model.reset_metrics()  # a skipped step: keep the epoch's running loss readable

    def on_epoch_end(self, epoch, logs=None):
        if math.isfinite(float((logs or {}).get("loss", 0.0))):
            self._keep(f"epoch {epoch + 1}")

    def _roll_back(self, what: str) -> None:
        values, step, where = self._good
        if self.done >= self.rollbacks:
            raise DivergenceError(
                f"training diverged at step {self._step()} ({what}) after {self.done} "
                f"rollback(s) with the learning rate lowered each time by {self.lr_factor}. Try a lower "
                "training.learning_rate, more training.warmup_steps, training.clipnorm (e.g. 1.0), or precision "
                "mixed_bfloat16 / float32 instead of mixed_float16; the run's backup keeps its last good epoch"
            )
        for variable, value in zip(self._variables(), values):
            variable.assign(value)
        retrace = lower_learning_rate(self.model.optimizer, self.lr_factor)
        scale = ""
        if self._scaled:
            optimizer = self.model.optimizer
            optimizer.dynamic_scale.assign(
                max(float(optimizer.dynamic_scale.numpy()) * self.lr_factor, 1.0)
            )
            scale = f", loss scale now {float(optimizer.dynamic_scale.numpy()):g}"
        self.model.reset_metrics()
        if retrace:
            self.model.make_train_function(force=True)
        self.done += 1
        self._last_iterations, self._batches_without_update = step, 0
        log.warning(
            "non-finite training step: %s; rolled back to %s (step %d), learning rate x%g%s "
            "(rollback %d of %d)",
            what,
            where,
            step,
            self.lr_factor**self.done,
            scale,
            self.done,
            self.rollbacks,
        )
