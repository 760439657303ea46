"""Model cards: YAML files of constructor arguments and run settings.

A card has four parts::

    architecture: gnmt          # which zoo architecture (a name, never code)
    model: {units: 1024, ...}   # constructor arguments of that architecture
    data: {source: demo, ...}   # data and pipeline settings
    training: {epochs: 5, ...}  # optimizer, schedule, precision, strategy

`load_card` parses with `yaml.safe_load` semantics, validates every key and
type against `SCHEMA`, the architecture's constructor (`model`) and the
schema of the architecture's task (`data`, `Task.data_schema`), and raises
`CardError` naming the file, line, key and the valid choices.

Example:
    >>> card = load_card("zoo/gnmt.yaml", {"units": 256})
    >>> card.model["units"]
    256
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import logging
import re
from pathlib import Path
from typing import Any

import yaml

from keras_s2s.config import (
    OPTIMIZERS,
    PRECISIONS,
    SCHEDULES,
    STRATEGIES,
    CardError,
    CardLoader,
    is_sha256,
    safe_load,
)
from keras_s2s.files import read_text
from keras_s2s.home import zoo_dir
from keras_s2s.schema import (
    COUNT,
    SIZE,
    Choice,
    Count,
    Duration,
    Number,
    Optional,
    check_mapping,
    suggest,
    where,
)

SCHEMA: dict[str, Any] = {
    "name": str,
    "description": str,
    "base": str,  # a card this one starts from (resolved by read_card before validation)
    "architecture": str,
    "presets": dict,  # name -> {url, sha256, size, description}: pretrained weights for zoo.load(weights=name)
    "model": dict,  # checked against the architecture's constructor
    "data": dict,  # checked against the schema of the architecture's task (Task.data_schema)
    "training": {
        "epochs": COUNT,
        "steps_per_epoch": Optional(COUNT),
        "optimizer": Choice(*OPTIMIZERS),
        "learning_rate": float,
        "schedule": Choice(*SCHEDULES),
        "warmup_steps": SIZE,
        "decay_steps": COUNT,
        "decay_rate": float,
        "clipnorm": Optional(float),
        "precision": Choice(*PRECISIONS),
        "strategy": Choice(*STRATEGIES),
        "time_chunks": COUNT,  # hybrid strategy: pieces each LSTM runs its sequence in (pipelining; 1 = off)
        "loss_scale": {
            "algorithm": Choice("dynamic", "static", "logmax"),
            "initial_scale": float,
            "growth_interval": COUNT,
            "log_max": float,
            "beta1": float,
            "beta2": float,
            "overflow_std_dev": float,
            "scale_min": float,
            "scale_max": float,
        },
        # a non-finite loss: roll back, lower the learning rate (keras_s2s/training/nonfinite.py)
        "nonfinite": {"rollbacks": SIZE, "lr_factor": float, "skipped_steps": COUNT},
        # scored after every epoch, best weights kept (keras_s2s/training/validation.py)
        "validation": {
            "metric": Choice(
                "bleu", "chrf", "wer", "loss"
            ),  # each task takes some (its validation_metrics)
            "patience": SIZE,
            "sentences": COUNT,
            "min_delta": Number(0),
        },
        "accumulate_steps": COUNT,  # gradient accumulation: batches per update (OpenSeq2Seq's iter_size)
        "steps_per_execution": COUNT,
        "time_limit": Optional(Duration()),  # train until this much time is spent (over restarts)
        # start a new run from these weights: a preset of the card, a preset folder/archive, a .weights.h5
        "init_from": Optional(str),
        # schedule deadline: the rate at the deadline, a share of the peak
        "lr_floor": Number(0, 1),
        "jit_compile": bool,
        "seed": int,
    },  # and the task's own (Task.training_schema: translation's label_smoothing)
}
# settings that moved to another part of the card: (old path, new path); an old card is read
# with a notice (`moved_settings`)
MOVED = ((("training", "decode_max_length"), ("model", "decode_max_length")),)

REQUIRED = ("architecture", "model", "data", "training")
# named after its own file unless it says otherwise; presets are a card's own
NOT_INHERITED = (
    "name",
    "presets",
)
# model arguments the task takes from the data part (and the tokenizer)
DATA_SIZED = ("vocab_size",)


@dataclasses.dataclass
class Card:
    """A validated model card."""

    name: str
    path: str
    architecture: str
    model: dict
    data: dict
    training: dict
    description: str = ""
    presets: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        """The card as plain data, ready for `yaml.safe_dump`."""
        return {
            "name": self.name,
            "description": self.description,
            "architecture": self.architecture,
            "model": dict(self.model),
            "data": dict(self.data),
            "training": copy.deepcopy(self.training),
            **({"presets": copy.deepcopy(self.presets)} if self.presets else {}),
        }


def _key_lines(text: str, source: str = "card") -> dict[tuple, int]:
    """Map each key path of a YAML mapping to its 1-based line number; a key written twice is an error."""
    lines: dict[tuple, int] = {}

    def walk(node: Any, prefix: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                path = prefix + (key_node.value,)
                line = key_node.start_mark.line + 1
                if path in lines:
                    raise CardError(
                        f"{source}, line {line}: '{'.'.join(map(str, path))}' is set twice (first "
                        f"on line {lines[path]}); a card states each key once"
                    )
                lines[path] = line
                walk(value_node, path)

    try:
        walk(yaml.compose(text, Loader=CardLoader), ())
    except yaml.YAMLError:
        pass
    return lines


# passed as objects, never set in a card
OBJECT_ARGUMENTS = (
    "self",
    "tokenizer",
    "vocabulary",
    "extractor",
)


def architecture_arguments(cls: type) -> dict[str, Any]:
    """Constructor arguments of `cls` with the type of each default value (an int default: a count,
    at least 1 where the default is positive, else at least 0)."""
    arguments = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name in OBJECT_ARGUMENTS or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        default = param.default
        if default is None or default is inspect.Parameter.empty:
            arguments[name] = Any
        elif isinstance(default, float):
            arguments[name] = float
        # sizes and counts: 0 = "derived"
        elif isinstance(default, int) and not isinstance(default, bool):
            arguments[name] = Count(1 if default > 0 else 0)
        else:
            arguments[name] = type(default)
    return arguments


def validate(raw: Any, source: str, lines: dict | None = None, path: str | None = None) -> Card:
    """Validate a parsed card and return it as a `Card`; `source` names it in errors, `path` (default
    `source`) is its file, which names a card without `name:`."""
    from keras_s2s import tasks  # here: listing the cards needs no Keras
    from keras_s2s.models import ARCHITECTURES

    lines = lines or {}
    if not isinstance(raw, dict):
        raise CardError(f"{source}: a model card must be a YAML mapping, got {type(raw).__name__}")
    raw = moved_settings(raw, source)
    check_mapping(raw, {**SCHEMA, "training": dict}, (), source, lines)
    for key in REQUIRED:
        if key not in raw:
            raise CardError(f"{source}: missing required key '{key}'")
    arch = raw["architecture"]
    if arch not in ARCHITECTURES:
        raise CardError(
            f"{where(source, lines, ('architecture',))}: unknown architecture '{arch}'"
            f"{suggest(arch, sorted(ARCHITECTURES))}. Valid: {', '.join(sorted(ARCHITECTURES))}"
        )
    model_schema = architecture_arguments(ARCHITECTURES[arch])
    check_mapping(raw["model"], model_schema, ("model",), source, lines)
    task = tasks.for_architecture(ARCHITECTURES[arch])
    check_mapping(raw["data"], task.data_schema, ("data",), source, lines, owner=task.name)
    training_schema = {**SCHEMA["training"], **task.training_schema}
    check_mapping(raw["training"], training_schema, ("training",), source, lines, owner=task.name)
    metric = raw["training"].get("validation", {}).get("metric")
    if metric is not None and metric not in task.validation_metrics:
        raise CardError(
            f"{where(source, lines, ('training', 'validation', 'metric'))}: {metric} does not score "
            f"{task.noun} (its validation metrics: {', '.join(task.validation_metrics)})"
        )
    for preset, entry in (raw.get("presets") or {}).items():
        if not isinstance(entry, dict) or "url" not in entry:
            raise CardError(
                f"{where(source, lines, ('presets', preset))}: preset '{preset}' needs url"
            )
        if "sha256" in entry and not is_sha256(entry["sha256"]):
            raise CardError(
                f"{where(source, lines, ('presets', preset, 'sha256'))}: preset '{preset}': sha256 "
                f"must be 64 hexadecimal characters (or left out, unverified); got {entry['sha256']!r}"
            )
    # a card without a name is named after its file, in characters every backend takes in a name
    name = raw.get("name") or re.sub(r"[^A-Za-z0-9_.-]", "_", Path(path or source).stem)
    return Card(
        name=name,
        path=source,
        architecture=arch,
        model=dict(raw["model"]),
        data=dict(raw["data"]),
        training=copy.deepcopy(raw["training"]),
        description=raw.get("description", ""),
        presets=copy.deepcopy(raw.get("presets") or {}),
    )


def moved_settings(raw: dict, source: str | None = None) -> dict:
    """`raw` with the settings of `MOVED` at their new place (a copy; `raw` itself when none is at
    its old one); a notice names the card (`source`), or none when `source` is None.

    Example:
        >>> moved_settings({"model": {}, "training": {"decode_max_length": 96}}, None)
        {'model': {'decode_max_length': 96}, 'training': {}}
    """
    moved = [
        (old, new)
        for old, new in MOVED
        if isinstance(raw.get(old[0]), dict) and old[1] in raw[old[0]]
    ]
    if not moved:
        return raw
    raw = copy.deepcopy(raw)
    for old, new in moved:
        value = raw[old[0]].pop(old[1])
        if not isinstance(raw.setdefault(new[0], {}), dict):
            continue  # the card check names the part that is not a mapping
        raw[new[0]][new[1]] = value  # set at the old place (by an older card or a --set): it wins
        if source is not None:
            logging.getLogger("keras_s2s").warning(
                "%s: '%s' is a %s setting now, read as '%s' (move it there)",
                source,
                ".".join(old),
                new[0],
                ".".join(new),
            )
    return raw


def _resolve_override_key(card: dict, key: str) -> list[tuple]:
    """Where a bare or dotted override key lives in the card (every section that has it; `vocab_size`:
    the data part, which the model takes it from)."""
    from keras_s2s import tasks
    from keras_s2s.models import ARCHITECTURES

    if "." in key:
        return [tuple(key.split("."))]
    architecture = ARCHITECTURES.get(card.get("architecture"))
    arch_args = architecture_arguments(architecture or object)
    task = tasks.for_architecture(architecture) if architecture else None
    data_schema = task.data_schema if task else {}
    training_schema = {**SCHEMA["training"], **(task.training_schema if task else {})}
    homes = []
    if key in arch_args and not (key in DATA_SIZED and key not in card.get("model", {})):
        homes.append(("model", key))
    if key in data_schema:
        homes.append(("data", key))
    if key in training_schema:
        homes.append(("training", key))
    if key in SCHEMA and key not in ("data", "training"):  # name, description, ...
        homes.append((key,))
    if not homes:
        valid = sorted(set(arch_args) | set(data_schema) | set(training_schema))
        raise CardError(
            f"override '{key}': unknown setting{suggest(key, valid)}. "
            f"Valid settings: {', '.join(valid)} (or a dotted path such as training.learning_rate)"
        )
    return homes


def apply_overrides(raw: dict, overrides: dict[str, Any]) -> dict:
    """Return a copy of the parsed card with `overrides` applied.

    Keys are bare names (`units`, `batch_size`, `precision`; a name found in
    several parts, such as `vocab_size` or `seed`, is set in each) or dotted
    paths (`training.loss_scale.initial_scale`).
    """
    card = copy.deepcopy(raw)
    for key, value in overrides.items():
        for path in _resolve_override_key(card, key):  # e.g. vocab_size: model and data
            node = card
            for part in path[:-1]:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    raise CardError(f"override '{key}': '{part}' is not a mapping")
            node[path[-1]] = copy.deepcopy(value)
    return card


def list_models() -> list[str]:
    """Names of the cards in the zoo (no TensorFlow needed)."""
    return sorted(p.stem for p in zoo_dir().glob("*.yaml"))


def card_path(name: str) -> Path:
    """The card file of zoo model `name`, or the path itself if `name` is a .yaml file."""
    if str(name).endswith((".yaml", ".yml")):
        return Path(name)
    path = zoo_dir() / f"{name}.yaml"
    if not path.is_file():
        available = list_models()
        close = difflib.get_close_matches(name, available, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise CardError(f"unknown model '{name}'.{hint} Available models: {', '.join(available)}")
    return path


def _merged(base: dict, card: dict) -> dict:
    """`card` over `base`: mappings merge key by key, any other value replaces the base's."""
    merged = copy.deepcopy(base)
    for key, value in card.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


MAX_BASE_DEPTH = 32  # cards in one base chain (the zoo's deepest has 3)


def read_card(path: str | Path, _seen: tuple = ()) -> tuple[dict, dict]:
    """The parsed card at `path` with its base cards resolved, and the line of each key it states itself.

    `base: transformer` (a zoo name, or a .yaml path relative to the card)
    starts from that card and states only what differs: mappings merge key by
    key, other values replace the base's; `name` is not inherited.

    Example:
        >>> raw, lines = read_card("zoo/transformer_big.yaml")
        >>> raw["model"]["d_model"], raw["model"]["num_layers"]   # its own, and transformer's
        (1024, 6)
    """
    path = Path(path)
    if not path.is_file():
        raise CardError(f"model card not found: {path}")
    try:
        text = read_text(path)
    except ValueError as error:
        raise CardError(f"{error}: is it a model card?") from None
    try:
        raw = safe_load(text, str(path))
    except yaml.YAMLError as exc:
        raise CardError(f"{path}: not valid YAML: {exc}") from None
    lines = _key_lines(text, str(path))
    if not isinstance(raw, dict) or "base" not in raw:
        return raw, lines
    base = raw.pop("base")
    if not isinstance(base, str) or not base:
        raise CardError(
            f"{where(str(path), lines, ('base',))}: 'base' must name a card, got {base!r}"
        )
    base_path = card_path(base) if not base.endswith((".yaml", ".yml")) else path.parent / base
    if base_path.resolve() in _seen + (path.resolve(),):
        raise CardError(f"{path}: base card {base} leads back to itself")
    if len(_seen) + 1 >= MAX_BASE_DEPTH:
        first = _seen[0] if _seen else path
        raise CardError(
            f"{first}: its chain of base cards is more than {MAX_BASE_DEPTH} deep (at {path}: "
            f"base {base}); a card needs a few levels at most"
        )
    inherited, _ = read_card(base_path, _seen + (path.resolve(),))
    if not isinstance(inherited, dict):
        raise CardError(f"{base_path}: a base card must be a YAML mapping")
    inherited = {key: value for key, value in inherited.items() if key not in NOT_INHERITED}
    return _merged(inherited, raw), lines


def load_card(path: str | Path, overrides: dict[str, Any] | None = None) -> Card:
    """Read, override and validate the card at `path`."""
    raw, lines = read_card(path)
    card = validate(raw, str(path), lines)  # the card itself, with line numbers
    if overrides:
        card = validate(
            apply_overrides(raw, overrides),
            f"{path} (with overrides {_shortened(overrides)})",
            path=str(path),
        )
    return card


def _shortened(value, limit: int = 200) -> str:
    """`repr(value)`, cut to `limit` characters (a pasted value can be megabytes long)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
