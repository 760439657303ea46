"""Validation while training: BLEU or WER on the dev split after every epoch, the best checkpoint,
early stop.

`BestCheckpoint` scores each epoch (greedy BLEU or chrF of up to `sentences`
dev pairs for a translation model, greedy WER of up to `sentences` dev
utterances for a recognizer: the task's `validation_scores`; the validation
loss for any model), adds the scores to the epoch's logs (so the progress
line, `history.json` and TensorBoard show `val_bleu` / `val_chrf` or
`val_wer` / `val_cer`), keeps the best epoch's weights in
`checkpoints/best.weights.h5` and the scores of every epoch in
`checkpoints/best.json` (so a resumed run, and `keras-s2s average --best N`,
know them), and stops training after `patience` epochs without a gain. The
runner finishes with the best weights.

Card settings (`training.validation`): `metric` (`bleu`, default for
translation; `chrf`; `wer`, default for recognition; `loss`, the default
elsewhere; the card check refuses a metric of another task), `patience`
(0 = never stop early), `sentences` (dev pairs decoded, default 500),
`min_delta` (an earlier epoch replaces the last one's weights at the end
only when it scored more than this better; default 0.5 BLEU, chrF or WER
points, 0 for the loss: on a few hundred dev sentences smaller differences
are noise, and the last weights are the most trained).

Example:
    >>> best = BestCheckpoint("runs/x/checkpoints", pairs=corpus.valid_pairs, patience=3,
    ...                       scores=tasks.get("translation").validation_scores)
    >>> model.fit(data, epochs=20, validation_data=valid, callbacks=[best]); best.restore_best(model)
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import keras

from keras_s2s.files import atomic_write, ensure_free_space, weights_file_bytes
from keras_s2s.training.backup import save_weights_alone

log = logging.getLogger("keras_s2s")
METRICS = ("bleu", "chrf", "wer", "loss")
LOWER_IS_BETTER = ("wer", "loss")
# measured: see docs/translation.md, "A real corpus"; WER points likewise (500 utterances)
MIN_DELTA = {
    "bleu": 0.5,
    "chrf": 0.5,
    "wer": 0.5,
    "loss": 0.0,
}
BEST_WEIGHTS, BEST_STATE = "best.weights.h5", "best.json"


def read_state(directory: str | Path) -> dict | None:
    """A checkpoints folder's `best.json`: {"metric", "scores" {epoch: score}, "best_epoch"}; None
    when it has none; a ValueError naming the file when it is damaged."""
    path = Path(directory) / BEST_STATE
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text())
        scores = {int(epoch): float(value) for epoch, value in state["scores"].items()}
        best = state.get("best_epoch")
        if best is not None and int(best) not in scores:
            raise KeyError(f"best_epoch {best} has no score")
        state = {"metric": str(state["metric"]), "scores": scores,
                 "best_epoch": None if best is None else int(best)}  # fmt: skip
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{path}: not a readable record of the validation scores ({type(error).__name__}: "
            f"{str(error)[:80]}); remove it to go on without the earlier epochs' scores"
        ) from None
    return state


def read_scores(directory: str | Path) -> dict[int, float]:
    """{epoch: validation score} of a run's checkpoints folder ({} when it kept none); higher is better."""
    state = read_state(directory)
    if state is None:
        return {}
    sign = -1.0 if state["metric"] in LOWER_IS_BETTER else 1.0
    return {epoch: sign * value for epoch, value in state["scores"].items()}


class BestCheckpoint(keras.callbacks.Callback):
    """Score every epoch on the dev split, keep the best weights, stop after `patience` epochs without gain.

    Args:
        directory: str | Path. Where `best.weights.h5` and `best.json` go (the run's checkpoints folder).
        pairs: list | None. (source, reference) dev pairs; needed for every metric but `loss`.
        metric: str. `bleu`, `chrf`, `wer` or `loss` (the validation loss; lower is better for
            it and for `wer`).
        scores: callable | None. (model, pairs) -> {metric: value}: the task's
            `validation_scores`; needed for every metric but `loss`.
        patience: int. Epochs without a gain before training stops (0 = never).
        sentences: int. Dev pairs decoded per evaluation (the first ones: the same every epoch).
        min_delta: float | None. How much better than the last epoch an earlier one must score to be
            restored at the end (default `MIN_DELTA` of the metric).
        write: bool. False on multi-worker non-chiefs (they score, but the chief writes).
    """

    def __init__(
        self,
        directory,
        pairs=None,
        metric: str = "bleu",
        scores=None,
        patience: int = 0,
        sentences: int = 500,
        min_delta: float | None = None,
        write: bool = True,
    ):
        super().__init__()
        if metric not in METRICS:
            raise ValueError(
                f"training.validation.metric must be one of {', '.join(METRICS)}, got {metric!r}"
            )
        if metric != "loss" and not (pairs and scores):
            raise ValueError(
                f"training.validation.metric {metric!r} needs a validation split to decode (a "
                "translation model's or a recognizer's); use metric: loss"
            )
        self.scores_of = scores
        self.directory, self.metric, self.patience, self.write = (
            Path(directory),
            metric,
            int(patience),
            write,
        )
        self.pairs = list(pairs or [])[:sentences]
        self.min_delta = MIN_DELTA[metric] if min_delta is None else float(min_delta)
        if self.min_delta < 0:
            raise ValueError(f"training.validation.min_delta must be at least 0, got {min_delta}")
        self.scores, self.best_epoch = {}, None

    def _better(self, value: float, best: float) -> bool:
        return value < best if self.metric in LOWER_IS_BETTER else value > best

    def on_train_begin(self, logs=None):
        state = read_state(self.directory)  # a resumed run: its earlier epochs' scores still count
        if state is not None and state["metric"] == self.metric:
            self.scores, self.best_epoch = state["scores"], state["best_epoch"]

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        if self.metric == "loss":
            if "val_loss" not in logs:
                return
            value = float(logs["val_loss"])
        else:
            result = self.scores_of(self.model, self.pairs)
            logs.update({f"val_{name}": value for name, value in result.items()})
            value = result[self.metric]
        epoch += 1
        self.scores[epoch] = value
        if self.best_epoch is None or self._better(value, self.scores[self.best_epoch]):
            self.best_epoch = epoch
            if self.write:
                self.directory.mkdir(parents=True, exist_ok=True)
                ensure_free_space(self.directory, weights_file_bytes(self.model))
                atomic_write(self.directory / BEST_WEIGHTS, save_weights_alone(self.model))
        if self.write:
            state = {"metric": self.metric, "best_epoch": self.best_epoch, "scores": self.scores}
            atomic_write(
                self.directory / BEST_STATE, lambda p: p.write_text(json.dumps(state, indent=1))
            )
        best = self.scores[self.best_epoch]
        log.info(
            "validation %s %.2f after epoch %d (best %.2f, epoch %d)",
            self.metric,
            value,
            epoch,
            best,
            self.best_epoch,
        )
        if self.patience and epoch - self.best_epoch >= self.patience:
            self.model.stop_training = True
            log.info("no validation gain in %d epoch(s): stopping early", self.patience)

    def restore_best(self, model) -> int | None:
        """Load the best epoch's weights into `model`, unless the last epoch is the best or scored within
        `min_delta` of it (then the last weights stay); the epoch whose weights the model ends with."""
        if self.best_epoch is None:
            return None
        last, best = max(self.scores), self.best_epoch
        path = self.directory / BEST_WEIGHTS
        if best == last or not path.is_file():
            return last
        if abs(self.scores[last] - self.scores[best]) <= self.min_delta:
            log.info(
                "finishing with the last weights: epoch %d's validation %s %.2f is within %g of the best "
                "(epoch %d, %.2f)",
                last,
                self.metric,
                self.scores[last],
                self.min_delta,
                best,
                self.scores[best],
            )
            return last
        model.load_weights(path)
        log.info(
            "finishing with the best weights: epoch %d, validation %s %.2f",
            best,
            self.metric,
            self.scores[best],
        )
        return best
