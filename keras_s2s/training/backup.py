"""Every epoch committed atomically: a checkpoint of the weights, and a backup to resume from.

Example:
    >>> model.fit(data, epochs=5, callbacks=[AtomicCheckpoint("runs/x/checkpoints"),
    ...                                      AtomicBackupAndRestore("runs/x/backup")])
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import keras
import numpy as np

from keras_s2s.backend import outside_distribution
from keras_s2s.files import atomic_write, ensure_free_space, weights_file_bytes

log = logging.getLogger("keras_s2s")


def save_weights_alone(model):
    """A writer for `atomic_write` that saves `model`'s weights in this process alone (a multi-worker
    job's chief writes what the others do not: see `backend.outside_distribution`)."""

    def write(path):
        with outside_distribution():
            model.save_weights(path)

    return write


class AtomicCheckpoint(keras.callbacks.Callback):
    """Save weights to `directory/epoch-NNN.weights.h5` after every epoch, atomically.

    A crash while saving leaves the previous checkpoints intact and no partial file.
    """

    def __init__(self, directory: str | Path):
        super().__init__()
        self.directory = Path(directory)

    def on_epoch_end(self, epoch, logs=None):
        self.directory.mkdir(parents=True, exist_ok=True)
        ensure_free_space(self.directory, weights_file_bytes(self.model))
        atomic_write(
            self.directory / f"epoch-{epoch + 1:03d}.weights.h5", save_weights_alone(self.model)
        )


def random_state(model) -> list:
    """The variables of `model` that are not weights: the states of its layers' random seed
    generators (dropout), which `save_weights` leaves out."""
    weights = {id(variable) for variable in model.weights}
    return [variable for variable in model.variables if id(variable) not in weights]


class AtomicBackupAndRestore(keras.callbacks.Callback):
    """Back up weights, optimizer state and the epoch count after every epoch; restore them at the start.

    Like `keras.callbacks.BackupAndRestore`, but each backup commits atomically:
    the weights go to a new `epoch-NNNN.weights.h5` (written to a temporary
    name, then renamed), then `latest.json` is replaced to point at it, then
    older backups are removed. A crash at any moment leaves `latest.json`
    naming a complete file whose epoch count matches its weights, so a resumed
    run neither repeats nor skips a step. `latest.json` also holds the batches
    seen (the runner skips them on resume) and the dropout seeds' states: a
    resumed run ends with the weights of an uninterrupted one. When `fit` ends the backup is marked
    "training over", and the runner removes it (`discard`) only once the run's
    final files are written: a run killed between the two resumes into no
    more epochs and writes them. Unlike Keras's callback it restores before `fit`
    (`restore`), which then starts at `initial_epoch`: a callback has no public
    way to move `fit`'s first epoch.
    """

    def __init__(self, backup_dir: str | Path, write: bool = True, clock=time.perf_counter):
        super().__init__()
        self.backup_dir = Path(backup_dir)
        # False on multi-worker non-chiefs: they restore from the chief's backup only
        self.write = write
        self.history = {}  # every epoch's logs, the epochs before a resume included
        self.batches_seen = 0  # training batches of the finished epochs, before a resume included
        self._epoch_batches = 0
        self.clock, self.seconds_before, self._start = clock, 0.0, None

    def seconds_spent(self) -> float:
        """Seconds spent training, the runs before a resume included (up to their last backup)."""
        return self.seconds_before + (
            self.clock() - self._start if self._start is not None else 0.0
        )

    def restore(self, model: keras.Model) -> int:
        """Load the last backup into `model` (weights and optimizer state) and return the number of epochs it
        had finished (0 without a backup): pass it on as `fit(..., initial_epoch=...)`.

        Example:
            >>> backup = AtomicBackupAndRestore("runs/x/backup")
            >>> model.fit(data, epochs=5, initial_epoch=backup.restore(model), callbacks=[backup])
        """
        self.history, self.seconds_before, self.training_over = {}, 0.0, False
        self.batches_seen = 0
        pointer = self.backup_dir / "latest.json"
        if not pointer.is_file():
            return 0
        start_over = f"remove {self.backup_dir} to train again from the start"
        try:
            latest = json.loads(pointer.read_text())
            epoch, weights = int(latest["epoch"]), self.backup_dir / latest["weights"]
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(
                f"{pointer}: not a readable backup pointer ({str(error)[:80]}); {start_over}"
            ) from None
        if model.optimizer is not None and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        try:
            model.load_weights(weights)
        except Exception as error:  # h5py and Keras report damaged files in several types
            raise ValueError(
                f"{weights}: the backup does not load ({str(error)[:120]}); {start_over}"
            ) from None
        self.history = latest.get("history", {})
        self.seconds_before = float(latest.get("train_seconds", 0.0))
        self.training_over = bool(latest.get("training_over"))
        self.batches_seen = int(latest.get("batches", 0))  # (0: a backup of an older version)
        states = latest.get("random_state", [])
        variables = random_state(model)
        if len(states) == len(variables):  # (none kept by an older version)
            for variable, state in zip(variables, states):
                variable.assign(np.asarray(state, dtype=variable.dtype))
        log.info("resuming from the backup after epoch %d (%s)", epoch, self.backup_dir)
        return epoch

    def on_train_begin(self, logs=None):
        self._start = self.clock()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self._epoch_batches = batch + 1  # `batch`: the last step of the call (steps_per_execution)

    def on_epoch_end(self, epoch, logs=None):
        self.batches_seen += self._epoch_batches
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        if not self.write:
            return
        self.backup_dir.mkdir(parents=True, exist_ok=True)
        ensure_free_space(self.backup_dir, weights_file_bytes(self.model))
        name = f"epoch-{epoch + 1:04d}.weights.h5"
        atomic_write(self.backup_dir / name, save_weights_alone(self.model))
        atomic_write(
            self.backup_dir / "latest.json",
            lambda p: p.write_text(
                json.dumps(
                    {
                        "epoch": epoch + 1,
                        "weights": name,
                        "history": self.history,
                        "train_seconds": round(self.seconds_spent(), 3),
                        "batches": self.batches_seen,
                        "random_state": [
                            keras.ops.convert_to_numpy(v.value).tolist()
                            for v in random_state(self.model)
                        ],
                    }
                )
            ),
        )
        for old in self.backup_dir.glob("epoch-*.weights.h5"):
            if old.name != name:
                old.unlink()

    def on_train_end(self, logs=None):
        """Mark the backup "training over" (the run's final files are not written yet): a run killed
        before they are resumes into no more epochs and writes them. `discard` removes it after."""
        pointer = self.backup_dir / "latest.json"
        if self.write and pointer.is_file():
            latest = {**json.loads(pointer.read_text()), "training_over": True}
            latest["train_seconds"] = round(self.seconds_spent(), 3)
            atomic_write(pointer, lambda p: p.write_text(json.dumps(latest)))

    def discard(self):
        """Remove the backup: the run's final files (`model.keras` last) are written."""
        if self.write:
            shutil.rmtree(self.backup_dir, ignore_errors=True)
