"""`Task`: what each kind of sequence-to-sequence problem brings to the zoo, the run, export and the CLI.

A task knows its models' base class, the assets its models are built with
(a tokenizer, or a vocabulary and a feature extractor), the loss and metrics
to compile them with, how to prepare a training run's data and evaluate the
result, and how to serve the model from a SavedModel. The zoo, the runner,
export and the CLI ask the task; none of them tests a model's type.

Defining a subclass with a `name` registers it; every module of
`keras_s2s.tasks` is imported, so a new task is one new file there (plus its
architecture in `keras_s2s/models/` and a card in `zoo/`).

Example:
    >>> from keras_s2s import tasks
    >>> task = tasks.for_card(card)
    >>> task.name, task.command
    ('translation', 'translate')
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Callable

import yaml

from keras_s2s.data.batches import Batching
from keras_s2s.files import atomic_write
from keras_s2s.schema import COUNT, SIZE

log = logging.getLogger("keras_s2s")
REGISTRY: dict[str, "Task"] = {}
# the card `data` keys of every task: where the corpus is, how it is split and batched
CORPUS_SCHEMA = {
    "source": str,
    "batch_size": COUNT,
    "num_train": SIZE,  # 0: all that is left after the held-out splits
    "num_valid": SIZE,
    "num_test": SIZE,
    "seed": int,
}
# ... and of every audio task
AUDIO_SCHEMA = {
    **CORPUS_SCHEMA,
    "features": dict,  # FeatureExtractor arguments
    "characters": str,
    "min_duration": float,  # seconds; shorter utterances are left out of training
    "max_duration": float,
}


@dataclasses.dataclass
class PreparedTask:
    """What a training run needs from its task: the card it records (with the settings fitted to the
    corpus), datasets, model-building assets and the final evaluation."""

    card: object  # a `keras_s2s.cards.Card`
    train: object
    valid: object
    num_train: int
    build_kwargs: dict
    evaluate: Callable  # model -> results dict
    commit: Callable  # () -> None: writes the card (and tokenizer) once the model is built
    # (source, reference) dev pairs scored while training: text (BLEU) or audio paths (WER)
    valid_pairs: list | None = None
    longest_batch: tuple[int, int] | None = None  # (rows, length) of the largest training batch


class Task:
    """The interface of a task. Subclasses set the class attributes and implement the methods.

    Attributes:
        name: str. The task's name (`translation`, `recognition`, `synthesis`).
        model_class: type. The base class of its architectures.
        command: str. The `keras-s2s` command that uses a trained model.
        noun: str. What its models are called in messages ("a translation model").
        validation_metric: str. What `training.validation` scores by default.
        validation_metrics: tuple. What `training.validation.metric` may be (checked with the card).
        data_schema: dict. The card's `data` keys the task reads and the kind of each
            (`keras_s2s.schema`); a card of this task with another key is a CardError.
        training_schema: dict. The `training` keys of this task alone (translation's
            `label_smoothing`), beside every task's (`keras_s2s.cards.SCHEMA["training"]`).
        decoding_options: dict. How its models decode (`evaluate`, the commands), with the
            defaults; `decoding` refuses another task's option.
    """

    name = ""
    model_class: type = object
    command = ""
    noun = ""
    validation_metric = "loss"
    validation_metrics: tuple = ("loss",)
    data_schema: dict = {}
    training_schema: dict = {}
    decoding_options: dict = {}
    # whether a run learns its tokenizer from the corpus (a new run from trained weights takes theirs)
    learns_tokenizer: bool = False

    def decoding(self, model=None, **given) -> dict:
        """The decoding options: `given` over `model`'s own defaults (a preset's tuned search, see
        `model_decoding`) over the task's; an option this task's models do not decode with (a
        recognizer's `lm` for a translation model) is a ValueError naming it.

        Example:
            >>> tasks.get("translation").decoding(beam_width=4)
            {'beam_width': 4, 'length_penalty': 1.0, 'coverage_penalty': 0.0, 'loop_guard': True}
        """
        foreign = sorted(set(given) - set(self.decoding_options))
        if foreign:
            valid = ", ".join(self.decoding_options) or "none"
            raise ValueError(
                f"{', '.join(foreign)}: not a decoding option of {self.noun} (its options: {valid})"
            )
        defaults = self.model_decoding(model) if model is not None else {}
        return {**self.decoding_options, **defaults, **given}

    def model_decoding(self, model) -> dict:
        """The decoding options `model` brings as its own defaults (none here)."""
        return {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name:
            REGISTRY[cls.name] = cls()

    def validation_scores(self, model, pairs: list) -> dict:
        """{metric: value} of `model` on dev `pairs` (source, reference), every metric of
        `validation_metrics` but the loss (the validation callback logs them all as `val_NAME`)."""
        raise NotImplementedError

    def run_assets(self, run_dir: Path, card) -> dict:
        """What a run folder stores for building its model again (`zoo.build_from_card` keywords;
        the card describes the rest): a translation run's tokenizer, nothing here."""
        return {}

    def model_arguments(self, card, **assets) -> dict:
        """Constructor arguments beyond the card's `model` part, from the assets (tokenizer, vocabulary ...)."""
        raise NotImplementedError

    def compile_arguments(self, card) -> dict:
        """`loss` and `metrics` for `model.compile` (None: the model computes its loss in `compute_loss`)."""
        return {"loss": None, "metrics": None}

    def prepare(self, card, out: Path, runtime, tokenizer=None) -> PreparedTask:
        """Load and check the run's data, ready for `fit`; `runtime`: the run's `distribution.Runtime`
        (its pad multiple and replica count shape the batches); `tokenizer`: that of the weights a
        new run starts from (`training.init_from`), for a task whose runs learn one from the corpus
        (translation); the audio tasks' symbols come from the card."""
        raise NotImplementedError

    def evaluate_run(self, model, card, run_dir: Path, data: str | None = None, **decoding) -> dict:
        """Re-evaluate a finished run on its test split (or the test split of `data`); `decoding`:
        all of `decoding_options`."""
        raise NotImplementedError

    def decoding_grid(self, model, card, run_dir: Path, data: str | None = None) -> dict:
        """Score decoding settings on the dev split and name the best (`evaluate --grid`)."""
        raise ValueError(
            f"--grid scores a translation model's beam widths and length penalties; this is "
            f"{self.noun}"
        )

    def serving_module(self, model, **options):
        """A `tf.Module` and its serving function, for `export_saved_model` (`options`: decoding settings)."""
        raise ValueError(
            f"cannot export a {type(model).__name__} as a SavedModel (translation models and speech "
            "recognizers only); use --format keras"
        )

    def require(self, model, where: str):
        """`model` if it belongs to this task, else a ValueError naming `where` it came from."""
        if not isinstance(model, self.model_class):
            raise ValueError(f"{where} holds a {type(model).__name__}, not {self.noun}")
        return model


def write_card(out: Path, card) -> None:
    """The run's resolved card, `out/card.yaml` (atomically; the folder is made only now)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(
        out / "card.yaml", lambda p: p.write_text(yaml.safe_dump(card.to_dict(), sort_keys=False))
    )


def require_test_split(count: int, card) -> None:
    """Refuse a run whose test split is empty: it could not be evaluated after training."""
    if not count:
        raise ValueError(
            f"{card.data['source']}: the test split is empty (data.num_test is "
            f"{card.data.get('num_test', 'unset')}), so the trained model could not be evaluated; "
            "give the corpus a test split or set data.num_test"
        )


def run_batching(card, runtime, pad: bool = True) -> tuple[Batching, dict]:
    """A training run's batch plan (the card's `batch_size` and `seed`; the runtime's replicas and,
    with `pad`, its pad multiple; shuffled, endless, whole batches when split over replicas) and
    the card's other `data` settings: together, the arguments of the task's loader.

    Example:
        >>> plan, settings = run_batching(card, runtime)
        >>> load_speech_data(**settings, batching=plan)
    """
    settings = dict(card.data)
    plan = Batching(
        batch_size=settings.pop("batch_size", Batching.batch_size),
        seed=settings.pop("seed", Batching.seed),
        shuffle=True,
        repeat=True,
        drop_remainder=runtime.replicas > 1,
        pad_to_multiple=runtime.pad_multiple if pad else 1,
        replicas=runtime.replicas,
    )
    return plan, settings


def prepare_audio(card, out: Path, runtime, load, evaluate, scored_valid: bool = False,
                  pad: bool = True, **load_args) -> PreparedTask:  # fmt: skip
    """An audio task's run: `load` with the card's `data` settings and the run's batch plan
    (`run_batching`), write the card, evaluate with `evaluate`; `scored_valid`: the validation
    utterances' (audio path, transcript) pairs are scored while training (WER)."""
    start = time.time()
    plan, settings = run_batching(card, runtime, pad)
    data = load(**settings, **load_args, batching=plan)
    require_test_split(len(data.test_utterances), card)
    log.info("data ready in %.1fs", time.time() - start)
    return PreparedTask(
        card=card,
        train=data.train,
        valid=data.valid,
        num_train=len(data.train_utterances),
        build_kwargs={"vocabulary": data.vocabulary, "extractor": data.extractor},
        evaluate=lambda model: evaluate(model, data.test_utterances, out),
        commit=lambda: write_card(out, card),
        valid_pairs=[(u.path, u.transcript) for u in data.valid_utterances]
        if scored_valid
        else None,
    )


def audio_model_arguments(extractor, vocabulary, features_argument: str) -> dict:
    """An audio model's assets and the sizes they fix (`features_argument`: num_features or num_mels)."""
    return {"extractor": extractor, "vocabulary": vocabulary, features_argument: extractor.feature_size,
            "vocab_size": vocabulary.vocab_size}  # fmt: skip


def speech_test_split(card, data: str | None):
    """The test utterances of a speech card's corpus (or of `data`): its test manifest, or the split
    training cut."""
    from keras_s2s.data.speech import read_test_split

    splits = {
        key: card.data[key]
        for key in ("num_train", "num_valid", "num_test", "seed")
        if key in card.data
    }
    return read_test_split(data or card.data["source"], **splits)
