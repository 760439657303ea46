"""The model zoo: the YAML cards of `zoo/` -> built, compiled Keras models.

Example:
    >>> import keras_s2s
    >>> keras_s2s.zoo.list_models()[:3]
    ['convs2s', 'convs2s_demo', 'deepspeech2']
    >>> model = keras_s2s.zoo.load("gnmt", num_layers=2, units=256)
"""

from __future__ import annotations

import logging
from pathlib import Path

import keras

from keras_s2s import tasks
from keras_s2s.cards import Card, card_path, list_models, load_card
from keras_s2s.config import CardError
from keras_s2s.distribution.placement import HybridParallel
from keras_s2s.distribution.runtime import Runtime, runtime_of_card
from keras_s2s.models import ARCHITECTURES
from keras_s2s.optimizers import build_optimizer

log = logging.getLogger("keras_s2s")


def get_card(name: str, **overrides) -> Card:
    """The validated card of `name` (a zoo name or a .yaml path) with overrides applied; its `data`
    keys are its task's (a speech key on a translation card is refused by name)."""
    return load_card(card_path(name), overrides)


def compile_model(
    model: keras.Model, card: Card, runtime: Runtime, task: tasks.Task | None = None
) -> keras.Model:
    """Compile `model` with the card's optimizer, schedule and loss-scale settings, and its task's loss and
    metrics (translation: label-smoothed cross-entropy and token accuracy; speech recognizers (CTC) and
    synthesizers (mel + stop token) compute their losses themselves)."""
    training = card.training
    model.compile(
        optimizer=build_optimizer(training, runtime.policy),
        **(task or tasks.of_model(model)).compile_arguments(card),
        steps_per_execution=training.get("steps_per_execution", 1),
        jit_compile=runtime.jit_compile(card),
    )
    return model


def _place(card: Card, model: keras.Model, strategy) -> None:
    """Under the hybrid strategy, give the unbuilt model its layer plan."""
    if not isinstance(strategy, HybridParallel):
        return
    if card.training.get("jit_compile"):
        raise CardError(
            f"{card.path}: strategy hybrid spans several devices and XLA compiles for one; "
            "set training.jit_compile: false"
        )
    try:
        strategy.place(model)
    except ValueError as exc:
        raise CardError(f"{card.path}: strategy hybrid: {exc}") from None


def build_from_card(
    card: Card,
    tokenizer=None,
    runtime: Runtime | None = None,
    vocabulary=None,
    extractor=None,
    task: tasks.Task | None = None,
) -> keras.Model:
    """Build and compile the card's model in the runtime's build scope.

    Translation models take a `tokenizer`; speech recognizers and
    synthesizers a `vocabulary` and an `extractor` (default: those the card's
    data part describes). A training run passes the `task` and the `runtime`
    it made once; by default they come from the card (the precision set, the
    strategy made, or the caller's open strategy scope).
    """
    runtime = runtime or runtime_of_card(card)
    task = task or tasks.for_card(card)
    assets = {"tokenizer": tokenizer, "vocabulary": vocabulary, "extractor": extractor}
    kwargs = {**card.model, **task.model_arguments(card, **assets)}
    with runtime.build_scope():
        model = ARCHITECTURES[card.architecture](name=card.name, **kwargs)
        _place(card, model, runtime.strategy)
        model.build()
        compile_model(model, card, runtime, task)
    limit = getattr(model, "max_positions_limit", None)
    if limit is not None and card.data.get("max_length", 0) + 1 > limit:  # +1: BOS or EOS
        raise CardError(
            f"{card.path}: data.max_length={card.data['max_length']} needs max_positions >= "
            f"{card.data['max_length'] + 1}, but the model has {limit}"
        )
    log.info(
        "built %s: %s parameters, policy %s", card.name, f"{model.count_params():,}", runtime.policy
    )
    return model


def load(
    name: str,
    *,
    tokenizer=None,
    strategy=None,
    weights: str | None = None,
    vocabulary=None,
    extractor=None,
    **overrides,
) -> keras.Model:
    """Build and compile zoo model `name`.

    Args:
        name: str. A zoo name (see `list_models()`) or a path to a card.
        tokenizer: SubwordTokenizer | None. Translation: sets the vocabulary
            size and is saved with the model.
        vocabulary, extractor: CharVocabulary, FeatureExtractor | None.
            Speech recognition and synthesis (default: the card's `data.characters` and
            `data.features`); saved with the model.
        strategy: str | strategy object | Runtime | None. Build inside this
            strategy's scope (a `tf.distribute.Strategy` or `HybridParallel`
            on TensorFlow, a `KerasDistribution` on JAX). None: the current
            scope if inside one, else the card's `strategy`. `hybrid` (or a
            `HybridParallel`) places a GNMT's LSTM layers on devices before
            building it.
        weights: str | None. A `.weights.h5` file to load after building, or
            a preset: a name registered in the card's `presets`, a preset
            directory, or a `file://` / `https://` URL of a preset archive
            (downloaded once, sha256-verified when the card registers it).
            A preset brings its own architecture and tokenizer; the card
            supplies the training settings.
        **overrides: card settings, e.g. `units=256`, `precision="float32"`,
            `learning_rate=1e-3`, or dotted paths `training.loss_scale.initial_scale`.
    """
    card = get_card(name, **overrides)
    if weights and not str(weights).endswith(".weights.h5"):
        return _load_preset(card, str(weights), strategy)
    model = build_from_card(
        card,
        tokenizer=tokenizer,
        runtime=runtime_of_card(card, strategy),
        vocabulary=vocabulary,
        extractor=extractor,
    )
    if weights:
        model.load_weights(weights)
    return model


def _preset_source(card: Card, weights: str) -> tuple[str, str | None]:
    """(URL or path, sha256 or None) of preset `weights` of `card`: a registered name, a directory or
    an archive; a PresetError naming the card's presets and the zoo's models with presets."""
    from keras_s2s.presets import PresetError

    entry = card.presets.get(weights)
    if entry:
        return entry["url"], entry.get("sha256")  # absent: unverified, with a warning
    if "://" not in weights and not weights.startswith("package:") and not Path(weights).exists():
        known = ", ".join(sorted(card.presets)) or "none"
        shipping = ", ".join(
            f"{name} ({', '.join(sorted(get_card(name).presets))})"
            for name in list_models()
            if get_card(name).presets
        )
        raise PresetError(
            f"{weights}: not a preset of {card.name} (its presets: {known}) and no such preset "
            f"directory or archive; models with presets: {shipping}"
        )
    return weights, None


def split_preset(source: str) -> tuple[str, str] | None:
    """(zoo name, preset) when `source` reads `NAME:PRESET` with NAME a zoo model and no file or
    folder of that name exists; else None (a run directory).

    Example:
        >>> split_preset("jasper_english:english")
        ('jasper_english', 'english')
    """
    name, colon, preset = str(source).partition(":")
    if colon and preset and not Path(source).exists() and name in list_models():
        return name, preset
    return None


def preset_directory(name: str, weights: str) -> Path:
    """The unpacked folder of preset `weights` of zoo model `name` (downloaded and verified once):
    where files that ship beside the model are, such as a recognizer's word LM (`lm.arpa.gz`).

    Example:
        >>> lm = preset_directory("jasper_english", "english") / "lm.arpa.gz"
    """
    from keras_s2s.presets import fetch_preset

    return fetch_preset(*_preset_source(get_card(name), weights))


def load_initial_weights(model: keras.Model, card: Card, source: str) -> None:
    """Copy into `model` the weights of `source`: a `.weights.h5` file (a run's checkpoint) or a
    preset of `card` (a registered name, a directory or an archive), to go on training from them.
    A preset must hold the same architecture and the same vocabulary: a ValueError names the first
    weight whose shape differs, or the vocabulary that does.

    Example:
        >>> load_initial_weights(model, get_card("jasper_english"), "english")
    """
    if source.endswith(".weights.h5"):
        if not Path(source).is_file():
            raise FileNotFoundError(f"{source}: weights file not found (training.init_from)")
        _check_checkpoint_assets(model, card, Path(source))
        try:
            model.load_weights(source)
        except (
            Exception
        ) as error:  # h5py and Keras report a damaged or foreign file in several types
            raise ValueError(
                f"training.init_from {source}: does not load into this {card.name} "
                f"({str(error).splitlines()[0][:200]})"
            ) from None
        return
    from keras_s2s.presets import load_preset

    donor = load_preset(*_preset_source(card, source))
    for asset in ("vocabulary", "tokenizer", "extractor"):
        mine, theirs = getattr(model, asset, None), getattr(donor, asset, None)
        if mine is not None and theirs is not None and mine.get_config() != theirs.get_config():
            raise ValueError(
                f"training.init_from {source}: the preset's {asset} differs from this run's; "
                "the weights would mean other symbols"
            )
    if len(model.weights) != len(donor.weights):
        raise ValueError(
            f"training.init_from {source}: the preset has {len(donor.weights)} weights, this "
            f"{card.name} {len(model.weights)}: another architecture"
        )
    for mine, theirs in zip(model.weights, donor.weights, strict=True):
        if tuple(mine.shape) != tuple(theirs.shape):
            raise ValueError(
                f"training.init_from {source}: {mine.path} is {tuple(mine.shape)} here, "
                f"{tuple(theirs.shape)} in the preset"
            )
    model.set_weights(donor.get_weights())


def initial_tokenizer(card: Card, source: str):
    """The tokenizer of the weights `source` (`training.init_from`: a preset of `card` or a run's
    `.weights.h5`) that a new run starts from, so that it reads its corpus with the same pieces; None
    where the source has none (a recognizer's, a loose checkpoint).

    Example:
        >>> initial_tokenizer(get_card("convs2s_gettext"), "en-de").vocab_size
        8000
    """
    if source.endswith(".weights.h5"):
        run = _checkpoint_run(Path(source))
        return _stored_tokenizer(run) if (run / "card.yaml").is_file() else None
    from keras_s2s.presets import load_preset

    return getattr(load_preset(*_preset_source(card, source)), "tokenizer", None)


def _stored_tokenizer(run: Path):
    """The tokenizer a run stored, read as its card.yaml says (None if it stored none yet)."""
    from keras_s2s.text.tokenizer import load_run_tokenizer

    data = load_card(run / "card.yaml").data
    return load_run_tokenizer(
        run, data.get("tokenization", "sentencepiece"), data.get("shared_vocabulary", True)
    )


def _checkpoint_run(path: Path) -> Path:
    """The run folder of a checkpoint: the one above its `checkpoints/` or `backup/`."""
    return path.parent.parent if path.parent.name in ("checkpoints", "backup") else path.parent


def _check_checkpoint_assets(model: keras.Model, card: Card, path: Path) -> None:
    """A checkpoint's run (the folder above its `checkpoints/` or `backup/`) must have this model's
    architecture and vocabulary (a tokenizer of the same size learned on other text gives the ids
    other meanings): a ValueError naming the checkpoint otherwise. A loose file cannot be checked."""
    run = _checkpoint_run(path)
    if not (run / "card.yaml").is_file():
        log.warning(
            "training.init_from %s: no run folder (card.yaml) beside it, so its vocabulary cannot "
            "be checked against this run's",
            path,
        )
        return
    donor = load_card(run / "card.yaml")
    where = f"training.init_from {path}"
    if donor.architecture != card.architecture:
        raise ValueError(
            f"{where}: a {donor.architecture} checkpoint, this run is {card.architecture}"
        )
    if getattr(model, "tokenizer", None) is not None:
        theirs = _stored_tokenizer(run)
        if theirs is None:
            raise ValueError(f"{where}: its run ({run}) holds no tokenizer files to check it by")
        if theirs.get_config() != model.tokenizer.get_config():
            raise ValueError(
                f"{where}: its run's tokenizer ({run}) is not this run's; the weights would mean "
                "other pieces (train on the corpus it was learned on, or from its preset)"
            )
    vocabulary = getattr(model, "vocabulary", None)
    if vocabulary is not None and donor.data.get("vocabulary", "characters") == "characters":
        _, theirs = tasks.for_card(donor).assets(donor)
        if theirs.get_config() != vocabulary.get_config():
            raise ValueError(
                f"{where}: its run's characters ({run / 'card.yaml'}) are not this run's; the "
                "weights would mean other symbols"
            )


def _load_preset(card: Card, weights: str, strategy) -> keras.Model:
    from keras_s2s.presets import load_preset

    source, sha256 = _preset_source(card, weights)
    runtime = runtime_of_card(card, strategy)
    if isinstance(runtime.strategy, HybridParallel):
        raise CardError(
            f"{card.path}: a preset loads unplaced; for hybrid training copy its weights into a "
            "placed model: zoo.load(name, strategy='hybrid').set_weights(zoo.load(name, "
            "weights=...).get_weights())"
        )
    with runtime.build_scope():
        model = load_preset(source, sha256)
        compile_model(model, card, runtime)
    log.info("loaded preset %s for %s", weights, card.name)
    return model
