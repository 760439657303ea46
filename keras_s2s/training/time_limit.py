"""Training for a time budget (`--time-limit 25m`, `training.time_limit`), counted over restarts.

`TimeLimit` stops `fit` after the batch during which the budget runs out; the
run then checkpoints, evaluates and saves its preset as usual. The time
spent comes from the run's backup (`AtomicBackupAndRestore.seconds_spent`),
which carries it across restarts, so a run killed after 20 of its 25
minutes trains 5 more when the same command resumes it.

Example:
    >>> backup = AtomicBackupAndRestore("runs/x/backup")
    >>> model.fit(data, epochs=10**5, callbacks=[backup, TimeLimit(parse_duration("25m"), backup.seconds_spent)])
"""

from __future__ import annotations

import logging

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
    """Stop training once `spent()` reaches `seconds`; show the time left on the progress bar
    (`minutes_left`) and after every epoch.

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
            log.info("time limit of %s reached: stopping after this step", format_duration(self.seconds))

    def on_epoch_end(self, epoch, logs=None):
        if not self.reached:
            log.info("%s of the %s time limit spent, %s left", format_duration(self.spent()),
                     format_duration(self.seconds), format_duration(self.seconds - self.spent()))
