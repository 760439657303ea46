"""Training for a time budget (`--time-limit 25m`, `training.time_limit`), counted over restarts.

`TimeLimit` stops `fit` after the batch during which the budget runs out; the
run then checkpoints, evaluates and saves its preset as usual. The time
spent comes from the run's backup (`AtomicBackupAndRestore.seconds_spent`),
which carries it across restarts, so a run killed after 20 of its 25
minutes trains 5 more when the same command resumes it.

`DeadlineLearningRate` (card `training.schedule: deadline`, the default of
a time-limited run) is a learning rate that ends annealed exactly when the
budget runs out: linear warmup over
`warmup_steps`, then a cosine from the peak down to `lr_floor` x the peak,
driven by the share of the budget spent, not by steps (steps per second
change with sentence lengths, precision and the machine), so a 25-minute and
an overnight run both end at the floor.

Example:
    >>> backup = AtomicBackupAndRestore("runs/x/backup")
    >>> budget = parse_duration("25m")
    >>> model.fit(data, epochs=10**5, callbacks=[backup, TimeLimit(budget, backup.seconds_spent),
    ...                                          DeadlineLearningRate(3e-3, budget, backup.seconds_spent)])
"""

from __future__ import annotations

import logging
import math

import keras

log = logging.getLogger("keras_s2s")
UNTIL_TIME_EPOCHS = 100_000  # epochs of a run bounded by its time limit alone


def format_duration(seconds: float) -> str:
    """`1h05m`, `12m30s`, `45s`.

    Example:
        >>> format_duration(3900), format_duration(750), format_duration(45)
        ('1h05m', '12m30s', '45s')
    """
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class TimeLimit(keras.callbacks.Callback):
    """Stop training once `spent()` reaches `seconds` (checked after every batch, and after the epoch's
    other callbacks, so that time spent validating never starts another epoch); show the time left on the
    progress bar (`minutes_left`) and after every epoch.

    Args:
        seconds: float. The budget.
        spent: () -> float. Training seconds spent so far, earlier runs of the same training included.
    """

    def __init__(self, seconds: float, spent):
        super().__init__()
        self.seconds, self.spent = float(seconds), spent
        self.reached = False

    def on_train_batch_end(self, batch, logs=None):
        left = self.seconds - self.spent()
        if logs is not None:
            logs["minutes_left"] = round(max(left, 0.0) / 60, 1)
        if left <= 0 and not self.reached:
            self.reached = True
            self.model.stop_training = True
            # Keras's progress line then shows the epoch as complete, its time per step divided
            # by all of the epoch's steps: say how many ran
            steps = (self.params or {}).get("steps")
            log.info(
                "time limit of %s reached: stopping after step %d of this epoch%s",
                format_duration(self.seconds),
                batch + 1,
                f"'s {steps} (the progress line counts all {steps})" if steps else "",
            )

    def on_epoch_end(self, epoch, logs=None):
        if self.reached:
            return
        spent = self.spent()
        # spent by the epoch's end (validation, checkpoints): no epoch more
        if spent >= self.seconds:
            self.reached = True
            self.model.stop_training = True
            log.info(
                "time limit of %s reached at the end of epoch %d: stopping",
                format_duration(self.seconds),
                epoch + 1,
            )
            return
        log.info(
            "%s of the %s time limit spent, %s left",
            format_duration(spent),
            format_duration(self.seconds),
            format_duration(self.seconds - spent),
        )


def schedule_replaced_by_deadline(training: dict, given: set) -> str | None:
    """The card's schedule that `deadline` replaces: with a time limit, unless `given` (the settings
    the user named) holds `schedule`; None when the schedule stays.

    Example:
        >>> schedule_replaced_by_deadline({"schedule": "inverse_sqrt", "time_limit": "25m"}, {"time_limit"})
        'inverse_sqrt'
    """
    schedule = training.get("schedule")
    if not training.get("time_limit") or "schedule" in given or schedule == "deadline":
        return None
    return schedule


def deadline_rate(
    peak: float, step: int, spent_share: float, warmup_steps: int = 0, floor: float = 0.0
) -> float:
    """The deadline schedule's rate: warmup by steps, then a cosine by the share of the budget spent.

    Example:
        >>> deadline_rate(1e-3, step=10_000, spent_share=0.5, warmup_steps=100, floor=0.1)  # half-way down
        0.00055
    """
    ramp = min((step + 1) / warmup_steps, 1.0) if warmup_steps else 1.0
    share = min(max(spent_share, 0.0), 1.0)
    return peak * ramp * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * share)))


class DeadlineLearningRate(keras.callbacks.Callback):
    """Sets the optimizer's (float) learning rate before every batch to `deadline_rate`.

    A rate lowered by another callback (the non-finite guard halves it) stays
    lowered by that factor.

    Args:
        peak: float. The rate after warmup, at the start of the budget.
        seconds: float. The budget.
        spent: () -> float. Training seconds spent so far (earlier runs included).
        warmup_steps: int. Steps of linear warmup.
        floor: float. The rate at the deadline, as a share of `peak`.
    """

    def __init__(
        self, peak: float, seconds: float, spent, warmup_steps: int = 0, floor: float = 0.0
    ):
        super().__init__()
        if not 0.0 <= floor <= 1.0:
            raise ValueError(
                f"training.lr_floor must be between 0 and 1 (a share of the peak rate), got {floor}"
            )
        self.peak, self.seconds, self.spent = float(peak), float(seconds), spent
        self.warmup_steps, self.floor = int(warmup_steps), float(floor)
        self.factor, self.last = 1.0, None

    def on_train_batch_begin(self, batch, logs=None):
        optimizer = self.model.optimizer
        current = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
        # lowered (or raised) by someone else
        if self.last and abs(current - self.last) > 1e-6 * self.last:
            self.factor *= current / self.last
        step = int(keras.ops.convert_to_numpy(optimizer.iterations))
        rate = self.factor * deadline_rate(
            self.peak, step, self.spent() / self.seconds, self.warmup_steps, self.floor
        )
        optimizer.learning_rate = rate
        # as stored (float32)
        self.last = float(keras.ops.convert_to_numpy(optimizer.learning_rate))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None and self.last is not None:
            logs["learning_rate"] = self.last
