"""A whole training run, as `keras-s2s train` does it, callable from Python.

A run directory holds::

    card.yaml            the resolved card (with overrides)
    tokenizer.model      the SentencePiece model (tokenizer.vocab for pretokenized corpora;
                         tokenizer.source.* and tokenizer.target.* for separate vocabularies)
    backup/              weights, optimizer state, epoch and batches seen after the last finished
                         epoch, while training (AtomicBackupAndRestore: resume after a crash)
    checkpoints/         weights after every epoch
    logs/                TensorBoard
    history.json         the loss and metrics per epoch;  fit.json  training time, cores busy, steps
    model.keras          the final model (tokenizer inside), written atomically after training; a run
                         with model.keras but no preset/ finishes (evaluation, preset) when rerun
    preset/              the same as a preset (config, weights, metadata.json with card, steps, metrics)
    eval.json            held-out BLEU/chrF;  hypotheses.txt  the test translations
                         (speech: WER/CER, transcripts.txt; synthesis: attention focus and
                         mel distances, samples/ with WAVs, alignment and mel plots)

Example:
    >>> result = train("gnmt", data="demo", out="runs/gnmt", steps=200, overrides={"units": 128})
    >>> result["bleu"]
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import keras
import yaml

from keras_s2s import tasks, zoo
from keras_s2s.cards import Card, moved_settings
from keras_s2s.config import check_count, parse_duration
from keras_s2s.data.encoded import settings_of_folder
from keras_s2s.data.fitting import settings_to_fit
from keras_s2s.distribution.runtime import Runtime, runtime_of_card
from keras_s2s.files import atomic_write, run_lock
from keras_s2s.tasks import PreparedTask, Task
from keras_s2s.training.backup import AtomicBackupAndRestore, AtomicCheckpoint
from keras_s2s.training.memory import check_step_memory
from keras_s2s.training.nonfinite import NonFiniteGuard
from keras_s2s.training.time_limit import (
    UNTIL_TIME_EPOCHS,
    DeadlineLearningRate,
    TimeLimit,
    schedule_replaced_by_deadline,
)
from keras_s2s.training.validation import BestCheckpoint, read_scores

log = logging.getLogger("keras_s2s")
FIT_FILE = "fit.json"  # how long training took, how many steps: kept for the preset of a run finished later


def load_model(run_dir: str | Path) -> keras.Model:
    """The trained model (with its tokenizer) saved in a run directory."""
    path = Path(run_dir) / "model.keras"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: is '{run_dir}' a finished keras-s2s run directory?"
        )
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"{path}: not a readable .keras file (damaged or truncated); rerun training with the same "
            "--out to write it again from the last checkpoint, or restore it from a copy"
        )
    try:
        return keras.saving.load_model(path)
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as error:
        raise ValueError(f"{path}: the model does not load ({str(error)[:160]})") from None


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _has_trained(out: Path) -> bool:
    """Whether `out` holds training worth protecting: a finished epoch (backup or checkpoint) or a model."""
    return (
        (out / "model.keras").exists()
        or (out / "backup" / "latest.json").exists()
        or any((out / "checkpoints").glob("epoch-*.weights.h5"))
    )


def check_run_dir(out: Path, card) -> None:
    """Refuse to overwrite a finished run, or to resume an interrupted or trained one with other settings.

    A directory that an earlier attempt left before its first epoch ended (a card and a tokenizer, no
    checkpoint) is not a run to protect: its files are removed and the run starts afresh.
    """
    if (out / "preset").exists():
        raise ValueError(
            f"{out} already holds a finished run (model.keras and preset/); choose another --out "
            "or remove it"
        )
    saved_path = out / "card.yaml"  # (`train` refuses an --out that is a file before its lock)
    if not saved_path.exists():
        return
    try:
        saved = yaml.safe_load(saved_path.read_text()) or {}
        saved = _flatten(moved_settings(saved) if isinstance(saved, dict) else {})
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
        raise ValueError(f"{saved_path}: not a readable card ({str(error)[:120]})") from None
    current = _flatten(card.to_dict())
    source = card.data.get("source")
    fitted = settings_to_fit(source, card.data.get("fit_to_corpus")) | settings_of_folder(source)
    for card_keys in (saved, current):
        card_keys.pop("training.time_limit", None)  # a budget may be raised on resume
        # chosen from the corpus when the run began (the same corpus: the same choice), or an
        # encoded folder's (its tokenizer is checked against the run's when the data are read)
        for key in fitted:
            card_keys.pop(f"data.{key}", None)
    changed = [
        f"{key} ({saved.get(key)!r} -> {current.get(key)!r})"
        for key in sorted(set(saved) | set(current))
        if saved.get(key) != current.get(key)
    ]
    if changed and _has_trained(out):
        raise ValueError(
            f"cannot resume the interrupted run in {out}: settings differ from {saved_path}: "
            f"{', '.join(changed)}. Use the same settings, or another --out"
        )
    # an attempt that never finished an epoch: its card and tokenizer belong to other settings
    if changed:
        log.warning(
            "%s: an earlier attempt with other settings stopped before its first epoch; starting afresh",
            out,
        )
        for path in [saved_path, *out.glob("tokenizer.*")]:
            path.unlink()


def _train_clock() -> float:
    """The clock that training time (and a time limit) is measured with; tests replace it."""
    return time.perf_counter()


def _clock() -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds over all its threads) now."""
    return time.perf_counter(), time.process_time()


def cores_busy(since: tuple[float, float]) -> float:
    """Cores this process kept busy on average since `since` (a `_clock()`): CPU seconds over wall seconds.

    Example:
        >>> start = _clock(); model.fit(...); cores_busy(start)
        1.74
    """
    wall, cpu = since
    return round((time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9), 2)


def _available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _steps_per_epoch(card, num_train: int) -> int:
    return card.training.get("steps_per_epoch") or max(1, num_train // card.data["batch_size"])


def train(
    card: str,
    data: str | None = None,
    out: str | Path | None = None,
    epochs: int | None = None,
    steps: int | None = None,
    overrides: dict | None = None,
    devices: list[str] | None = None,
    verbose: int | str | None = None,
) -> dict:
    """Train the model of a card and evaluate it; returns eval results.

    Args:
        card: str. A zoo name or a card path.
        data: str | None. `demo`, a TSV, or "a.src,a.tgt" (default: the card's `data.source`).
        out: str | Path | None. Run directory (default runs/<name>); an
            interrupted run in it resumes from its last backup.
        epochs, steps: int | None. Number of epochs, or total training steps.
        overrides: dict | None. Card settings (see `zoo.load`).
        devices: list[str] | None. Devices for the mirrored or hybrid strategy.
        Multi-worker (`strategy: multiworker`, TF_CONFIG set): every worker runs
        this with the same arguments and `out` on storage they share; only the
        chief writes there (the others train in a temporary folder, removed at
        the end) and evaluates; all resume from the chief's backup.
    """
    for name, count in (("epochs", epochs), ("steps", steps)):
        if count is not None:
            check_count(name, count)
    overrides = dict(overrides or {})
    if data:
        overrides["data.source"] = data
    card = _run_card(card, overrides)
    out = Path(out or Path("runs") / card.name)
    # first: a multi-worker strategy must exist before TensorFlow runs anything
    runtime = runtime_of_card(card, card.training["strategy"], devices=devices)
    if card.training.get("schedule") == "deadline" and not card.training.get("time_limit"):
        raise ValueError(
            "training.schedule deadline decays by the share of the time budget spent: give "
            "--time-limit (or training.time_limit), or another schedule"
        )
    if card.training.get("time_limit") and runtime.multiworker:
        raise ValueError(
            "training.time_limit is not supported with several workers yet (each worker's clock "
            "would stop it at another step); give --steps or --epochs"
        )
    if not runtime.chief:  # a worker other than the chief writes nothing that lasts
        with tempfile.TemporaryDirectory(prefix="keras-s2s-worker-") as scratch:
            return _train(card, out, Path(scratch), runtime, epochs, steps, verbose)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a run directory")
    with run_lock(out):  # a second `train` on the same --out is refused while this one runs
        return _train(card, out, out, runtime, epochs, steps, verbose)


def _run_card(name: str, overrides: dict) -> Card:
    """The card a run trains: `name` with `overrides`; a setting the user named is not fitted to the
    corpus, and a time limit brings the deadline schedule (unless the user named a schedule)."""
    card = zoo.get_card(name, **overrides)
    given = {key.rsplit(".", 1)[-1] for key in overrides}
    data, training = dict(card.data), dict(card.training)
    if data.get("fit_to_corpus"):
        data["fit_to_corpus"] = [key for key in data["fit_to_corpus"] if key not in given]
    replaced = schedule_replaced_by_deadline(training, given)
    if replaced:
        training["schedule"] = "deadline"
        log.info(
            "training.schedule: deadline (card: %s) - the default with a time limit: the rate anneals to "
            "lr_floor as the budget runs out; fix it with --set schedule=%s",
            replaced,
            replaced,
        )
    return dataclasses.replace(card, data=data, training=training)


def _best_checkpoint(
    card, task: Task, prepared: PreparedTask, directory: Path, chief: bool
) -> BestCheckpoint | None:
    """The card's validation (BLEU for translation, WER for recognition, the validation loss otherwise);
    None without a dev split."""
    settings = dict(card.training.get("validation", {}))
    settings.setdefault("metric", task.validation_metric if prepared.valid_pairs else "loss")
    if prepared.valid is None and not prepared.valid_pairs:
        return None
    return BestCheckpoint(directory, pairs=prepared.valid_pairs, scores=task.validation_scores,
                          write=chief, **settings)  # fmt: skip


def _train(card, out: Path, write_dir: Path, runtime: Runtime, epochs, steps, verbose) -> dict:
    """Train in `write_dir` (the run directory, or a non-chief worker's scratch folder); every worker
    resumes from the chief's backup in `out`. The task is resolved here, once (the precision and the
    strategy were, in the runtime)."""
    chief = write_dir == out
    run_clock = _clock()
    keras.utils.set_random_seed(card.training.get("seed", 0))
    task = tasks.for_card(card)
    if chief:
        check_run_dir(out, card)
    source = card.training.get("init_from") if not _has_trained(out) else None
    # a new run from trained weights reads its corpus with their tokenizer
    start = zoo.initial_tokenizer(card, source) if source and task.learns_tokenizer else None
    prepared = task.prepare(card, write_dir, runtime, tokenizer=start)
    card = prepared.card  # with the settings fitted to the corpus
    if (out / "model.keras").exists():  # trained, but evaluation or the preset did not follow
        return _finish(card, out, prepared, run_clock) if chief else {}
    model = zoo.build_from_card(card, task=task, runtime=runtime, **prepared.build_kwargs)
    check_step_memory(model, prepared.longest_batch, card.name, runtime)
    if source:  # a new run: a bad source leaves nothing behind either
        with runtime.weights_scope(model):
            zoo.load_initial_weights(model, card, source)
        print(f"starting from the weights of {source}")
    prepared.commit()  # only now: a card that cannot build a model (or fit in memory) leaves nothing
    per_epoch = _steps_per_epoch(card, prepared.num_train)
    epochs, steps_per_epoch, length = _run_length(card, per_epoch, epochs, steps)
    backup = AtomicBackupAndRestore(out / "backup", write=chief, clock=_train_clock)
    best = _best_checkpoint(card, task, prepared, write_dir / "checkpoints", chief)
    callbacks = _callbacks(card, write_dir, backup, best) + runtime.tensorboard(write_dir / "logs")
    print(
        f"training {card.name} ({model.count_params():,} parameters, {runtime.policy}, "
        f"{runtime.describe()}): {length}"
    )
    fit_clock = _clock()
    initial_epoch, train_data = _resume(model, prepared, runtime, backup)
    if backup.training_over:  # killed after training, before the run's final files
        print(f"training had ended after epoch {initial_epoch}; writing the run's final files")
        epochs = initial_epoch
    with runtime.fit_scope():
        model.fit(
            train_data,
            **_validation_data(prepared, runtime),
            epochs=epochs,
            initial_epoch=initial_epoch,
            steps_per_epoch=steps_per_epoch,
            callbacks=callbacks,
            verbose=(1 if sys.stdout.isatty() else 2) if verbose is None else verbose,
            shuffle=False,  # the pipeline shuffles; Keras cannot shuffle a tf.data.Dataset
        )
    train_seconds = backup.seconds_spent()  # the runs before a resume included
    fit_cores = cores_busy(fit_clock)
    model = runtime.finish_fit(model, out)
    if not chief:
        print(f"worker trained in {train_seconds:.0f}s; the chief saves and evaluates the model")
        return {"train_seconds": round(train_seconds, 1), "loss": backup.history["loss"][-1]}
    fit = _save_trained(out, model, backup, best, train_seconds, fit_cores)
    return _evaluate_and_save_preset(card, out, prepared, model, fit, run_clock)


def _run_length(card, steps_per_epoch: int, epochs, steps) -> tuple[int, int, str]:
    """(epochs, steps per epoch, how the run is bounded in words) from --epochs, --steps and the
    card's epochs and time limit."""
    time_limit = card.training.get("time_limit")
    length = f"{epochs or card.training['epochs']} epoch(s) x {steps_per_epoch} steps"
    if time_limit and not (epochs or steps):  # the budget alone bounds the run
        return (
            UNTIL_TIME_EPOCHS,
            steps_per_epoch,
            f"until {time_limit} are spent, in epochs of {steps_per_epoch} steps",
        )
    or_budget = f", or {time_limit}" if time_limit else ""
    if not steps:
        return epochs or card.training["epochs"], steps_per_epoch, length + or_budget
    epochs = max(1, math.ceil(steps / steps_per_epoch))
    steps_per_epoch = math.ceil(steps / epochs)
    return epochs, steps_per_epoch, f"{epochs} epoch(s) x {steps_per_epoch} steps{or_budget}"


def _callbacks(card, write_dir: Path, backup, best) -> list:
    """The run's callbacks, in the order they must see each epoch's end."""
    training = card.training
    budget = parse_duration(training["time_limit"]) if training.get("time_limit") else None
    callbacks = []
    # first: the rate it logs reaches the backup's history
    if training.get("schedule") == "deadline":
        callbacks.append(
            DeadlineLearningRate(
                training["learning_rate"],
                budget,
                backup.seconds_spent,
                training.get("warmup_steps", 0),
                training.get("lr_floor", 0.0),
            )
        )
    callbacks.append(AtomicCheckpoint(write_dir / "checkpoints"))
    if best is not None:  # after the checkpoint it names; before the backup, which keeps its score
        callbacks.append(best)
    callbacks.append(backup)  # commits the epoch
    if budget is not None:
        callbacks.append(TimeLimit(budget, backup.seconds_spent))
    # after the backup: keeps the restored state
    callbacks.append(NonFiniteGuard(**training.get("nonfinite", {})))
    return callbacks


def _resume(model, prepared: PreparedTask, runtime: Runtime, backup) -> tuple[int, object]:
    """(the epochs an interrupted run had finished, 0 for a new one; the training data from where it
    stopped)."""
    with runtime.weights_scope(model):
        initial_epoch = backup.restore(model)
    if not backup.batches_seen or backup.training_over:
        return initial_epoch, prepared.train
    # the batches the interrupted run would have seen next (tf.data's skip, or BucketedBatches.skip):
    # it ends with the weights an uninterrupted run ends with
    log.info(
        "the input goes on where the interrupted run stopped: its %d batches are skipped (TensorFlow "
        "reads them again, which takes a while after many steps)",
        backup.batches_seen,
    )
    return initial_epoch, prepared.train.skip(backup.batches_seen)


def _validation_data(prepared: PreparedTask, runtime: Runtime) -> dict:
    """`fit`'s validation arguments for the task's dev split (none without one)."""
    return {} if prepared.valid is None else runtime.validation_arguments(prepared.valid)


def _save_trained(out: Path, model, backup, best, train_seconds: float, fit_cores: float) -> dict:
    """Write history.json, fit.json and (last: it means training is over) model.keras with the best
    weights, then drop the backup; returns what fit.json holds."""
    atomic_write(out / "history.json", lambda p: p.write_text(json.dumps(backup.history, indent=2)))
    fit = {
        "train_seconds": round(train_seconds, 1),
        "fit_cores_busy": fit_cores,
        "training_steps": int(model.optimizer.iterations.numpy()),
    }
    if best is not None:
        # the best, or the last if within min_delta
        fit["weights_epoch"] = best.restore_best(model)
        fit["best_epoch"] = best.best_epoch
    atomic_write(out / FIT_FILE, lambda p: p.write_text(json.dumps(fit, indent=2)))
    atomic_write(out / "model.keras", model.save)  # last: a model.keras means training is over
    backup.discard()
    print(
        f"trained in {train_seconds:.0f}s ({fit_cores:.2f} of {_available_cores()} cores busy); "
        f"model saved to {out / 'model.keras'}"
    )
    return fit


def _finish(card, out: Path, prepared: PreparedTask, run_clock) -> dict:
    """Evaluate a run that trained to the end but stopped before its preset, and save the preset."""
    print(f"{out}: training finished earlier (model.keras); evaluating it and saving the preset")
    shutil.rmtree(out / "backup", ignore_errors=True)  # if killed before the backup was discarded
    fit_path = out / FIT_FILE
    fit = json.loads(fit_path.read_text()) if fit_path.exists() else {}
    return _evaluate_and_save_preset(card, out, prepared, load_model(out), fit, run_clock)


def _evaluate_and_save_preset(
    card, out: Path, prepared: PreparedTask, model, fit: dict, run_clock
) -> dict:
    """Evaluate the trained model on the test split and save the run's preset (the card, the steps,
    the time and the scores in its metadata)."""
    result = prepared.evaluate(model)
    result.update(
        {
            key: fit[key]
            for key in ("train_seconds", "fit_cores_busy", "best_epoch", "weights_epoch")
            if key in fit
        },
        run_cores_busy=cores_busy(run_clock),
    )
    model.save_to_preset(
        out / "preset",
        metadata={
            "card": card.to_dict(),
            "training_steps": fit.get("training_steps"),
            "train_seconds": fit.get("train_seconds"),
            "metrics": result,
        },
    )
    return result


def evaluate_run(
    run_dir: str | Path,
    data: str | None = None,
    out: str | Path | None = None,
    grid: bool = False,
    **decoding,
) -> dict:
    """Re-evaluate a finished run on its test split (or on the test split of `data`): BLEU, WER or
    the synthesis checks (attention focus, mel distances). `decoding`: the options of the run's task
    (`Task.decoding_options`; a translation model's `beam_width`, `length_penalty`,
    `coverage_penalty`; a speech recognizer's `beam_width` and word LM `lm`, `alpha`, `beta`);
    another task's option is a ValueError. `grid`: instead, score a translation model's beam widths
    and length penalties on the dev split (`decoding-grid.json`) and name the best.

    `run_dir` may also be a zoo preset `NAME:PRESET`, scored on its card's corpus or on `data`.
    The transcripts (or translations) and eval JSON go to `out`: by default the run directory;
    for a preset, nowhere unless `out` is given.

    Example:
        >>> evaluate_run("jasper_english:english", data="english/corpus", out="eval", beam_width=8)["wer"]
    """
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"{out}: is a file; --out names a folder for the transcripts and scores")
    preset = zoo.split_preset(str(run_dir))
    card = zoo.get_card(preset[0] if preset else str(Path(run_dir) / "card.yaml"))
    task = tasks.for_card(card)
    checked = task.decoding(**decoding)  # a foreign option is named before the model loads
    if grid and checked != task.decoding():
        raise ValueError(
            "--grid tries its own beam widths and length penalties: give no decoding flag"
        )
    if preset:
        model = zoo.load(preset[0], weights=preset[1])
    else:
        run_dir = Path(run_dir)
        model = load_model(run_dir)
        out = run_dir if out is None else out
    decoding = task.decoding(model, **decoding)  # a preset's own search unless flags change it
    if out is None:  # a preset scored without --out: nothing is written
        return _score(task, model, card, out, data, grid, decoding)
    with run_lock(Path(out), "evaluate"):  # not into a run that a train or average writes
        return _score(task, model, card, Path(out), data, grid, decoding)


def _score(task, model, card, out, data, grid: bool, decoding: dict) -> dict:
    if grid:
        return task.decoding_grid(model, card, out, data)
    return task.evaluate_run(model, card, out, data, **decoding)


def _run_model(run_dir: Path) -> keras.Model:
    """A run's model.keras, or, for a run that has not ended (still training, or stopped), the model
    its card.yaml and stored assets build, for its checkpoints to be loaded into."""
    if (run_dir / "model.keras").exists() or not (run_dir / "card.yaml").is_file():
        return load_model(run_dir)
    card = zoo.get_card(str(run_dir / "card.yaml"))
    task = tasks.for_card(card)
    print(f"{run_dir}: training has not ended (no model.keras); its model built from card.yaml")
    runtime = runtime_of_card(card, "default")
    return zoo.build_from_card(card, task=task, runtime=runtime, **task.run_assets(run_dir, card))


def average_checkpoints(
    run_dir: str | Path, out: str | Path, last: int = 3, best: int | None = None
) -> list[Path]:
    """Average the weights of the last `last` (or the `best` by validation score) epoch checkpoints of a
    run into a new run directory. The run may still be training, or have stopped before its end:
    its model is then built from its card and tokenizer (`--last 1`: the latest epoch as a model
    to evaluate or translate with while training goes on).

    `out` gets the run's card and tokenizer and the averaged `model.keras`,
    so `keras-s2s evaluate --model OUT` and `translate` work on it.
    Returns the checkpoints that were averaged.
    """
    count = check_count("best" if best is not None else "last", best if best is not None else last)
    run_dir, out = Path(run_dir), Path(out)
    folder = run_dir / "checkpoints"
    checkpoints = sorted(folder.glob("epoch-*.weights.h5"))
    if len(checkpoints) < count:
        raise ValueError(
            f"{folder} holds {len(checkpoints)} checkpoint(s); cannot average the "
            f"{'best' if best is not None else 'last'} {count}"
        )
    if (out / "model.keras").exists() or (out.exists() and not out.is_dir()):
        raise ValueError(f"{out} already holds a model.keras or is a file; choose another --out")
    if (out / "card.yaml").exists():  # a run, maybe training or stopped: it could not resume
        raise ValueError(f"{out} holds a run (its card.yaml); average into a new folder")
    if best is None:
        checkpoints = checkpoints[-last:]
    else:
        scores = read_scores(folder)
        epoch_of = lambda path: int(path.name.split("-")[1].split(".")[0])  # noqa: E731  epoch-012.weights.h5
        scored = [path for path in checkpoints if epoch_of(path) in scores]
        if len(scored) < best:
            raise ValueError(
                f"{folder / 'best.json'} scores {len(scored)} of the checkpoints; cannot pick the "
                f"best {best} (runs scored while training have one)"
            )
        checkpoints = sorted(sorted(scored, key=lambda path: -scores[epoch_of(path)])[:best])
    model = _run_model(run_dir)
    total = [0.0] * len(model.weights)
    for path in checkpoints:
        try:
            model.load_weights(path)
        except Exception as error:  # h5py and Keras report damaged files in several types
            raise ValueError(
                f"{path}: the checkpoint does not load ({str(error)[:120]}); average fewer (--last) "
                "or remove it"
            ) from None
        total = [t + v.numpy().astype("float64") for t, v in zip(total, model.weights)]
    for variable, summed in zip(model.weights, total):
        variable.assign((summed / len(checkpoints)).astype(variable.dtype))
    with run_lock(out, "average"):  # refused while another command writes `out`
        if (out / "card.yaml").exists():  # written since the check above
            raise ValueError(f"{out} holds a run (its card.yaml); average into a new folder")
        for path in [run_dir / "card.yaml", *run_dir.glob("tokenizer.*")]:
            atomic_write(out / path.name, lambda p, path=path: p.write_bytes(path.read_bytes()))
        atomic_write(out / "model.keras", model.save)
    names = ", ".join(path.name for path in checkpoints)
    plural = "s" if len(checkpoints) > 1 else ""
    print(f"averaged {len(checkpoints)} checkpoint{plural} ({names}) into {out / 'model.keras'}")
    return checkpoints
