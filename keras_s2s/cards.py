"""Model cards: YAML files of constructor arguments and run settings.

A card has four parts::

    architecture: gnmt          # which zoo architecture (a name, never code)
    model: {units: 1024, ...}   # constructor arguments of that architecture
    data: {source: demo, ...}   # data and pipeline settings
    training: {epochs: 5, ...}  # optimizer, schedule, precision, strategy

`load_card` parses with `yaml.safe_load` semantics, validates every key and
type against `SCHEMA` (and the architecture's constructor for `model`), and
raises `CardError` naming the file, line, key and the valid choices.

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
import math
import re
from pathlib import Path
from typing import Any

import yaml

from keras_s2s.config import (
    FITTABLE,
    OPTIMIZERS,
    PRECISIONS,
    SCHEDULES,
    STRATEGIES,
    CardError,
    CardLoader,
    is_sha256,
    parse_duration,
    safe_load,
)
from keras_s2s.files import read_text
from keras_s2s.home import zoo_dir


class Choice:
    """A string restricted to a fixed set of values."""

    def __init__(self, *values: str):
        self.values = values

    def __repr__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


class Optional:
    """A value of `kind` or null."""

    def __init__(self, kind: Any):
        self.kind = kind

    def __repr__(self) -> str:
        return f"{_type_name(self.kind)} or null"


class Subset:
    """A list of some of a fixed set of strings."""

    def __init__(self, *values: str):
        self.values = values

    def __repr__(self) -> str:
        return "a list of some of " + ", ".join(repr(v) for v in self.values)


class Count:
    """A whole number of at least `minimum` (steps, sentences, tokens, ...)."""

    def __init__(self, minimum: int = 1):
        self.minimum = minimum

    def __repr__(self) -> str:
        return f"a whole number of at least {self.minimum}"


class Number:
    """A finite number from `minimum` to `maximum` (either bound may be None)."""

    def __init__(self, minimum: float | None = None, maximum: float | None = None):
        self.minimum, self.maximum = minimum, maximum

    def __repr__(self) -> str:
        if self.maximum is None:
            return f"a number of at least {self.minimum:g}"
        return f"a number from {self.minimum:g} to {self.maximum:g}"

    def holds(self, value: Any) -> bool:
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (self.minimum is None or value >= self.minimum)
            and (self.maximum is None or value <= self.maximum)
        )


class Duration:
    """A time span written with units: `25m`, `2h`, `1h30m`, `90s`, `1.5h` (see `parse_duration`)."""

    def __repr__(self) -> str:
        return "a duration such as 25m, 2h or 1h30m"


COUNT, SIZE = Count(1), Count(0)  # SIZE: 0 allowed (e.g. num_train 0 = all)

SCHEMA: dict[str, Any] = {
    "name": str,
    "description": str,
    "base": str,  # a card this one starts from (resolved by read_card before validation)
    "architecture": str,
    "presets": dict,  # name -> {url, sha256, size, description}: pretrained weights for zoo.load(weights=name)
    "model": dict,  # checked against the architecture's constructor
    "data": {
        "source": str,
        "vocab_size": COUNT,
        "max_length": COUNT,
        "batch_size": COUNT,
        "num_train": SIZE,
        "num_valid": SIZE,
        "num_test": SIZE,
        "seed": int,
        "bucket_width": COUNT,
        "batch_tokens": Optional(COUNT),
        "direction": Optional(str),
        "tokenization": Choice("sentencepiece", "pretokenized"),
        "shared_vocabulary": bool,
        "source_vocab_size": Optional(COUNT),
        # settings chosen from a corpus other than the demo (keras_s2s/data/fitting.py)
        "fit_to_corpus": Subset(*FITTABLE),
        # speech recognition
        "features": dict,  # FeatureExtractor arguments
        "characters": str,
        "vocabulary": Choice("characters", "subword"),
        "min_duration": float,
        "max_duration": float,
        "augment": dict,  # see keras_s2s/audio/augment.py
        # speech synthesis
        "cache": str,  # mel targets: memory, a file prefix, or "" (see keras_s2s/data/tts.py)
    },
    "training": {
        "epochs": COUNT,
        "steps_per_epoch": Optional(COUNT),
        "optimizer": Choice(*OPTIMIZERS),
        "learning_rate": float,
        "schedule": Choice(*SCHEDULES),
        "warmup_steps": SIZE,
        "decay_steps": COUNT,
        "decay_rate": float,
        "label_smoothing": float,
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
            "metric": Choice("bleu", "chrf", "loss"),
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
        "decode_max_length": COUNT,
    },
}

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


def _type_name(kind: Any) -> str:
    if isinstance(kind, type):
        return {
            "str": "string",
            "int": "integer",
            "float": "number",
            "bool": "boolean",
            "dict": "mapping",
            "list": "list",
        }.get(kind.__name__, kind.__name__)
    if isinstance(kind, dict):
        return "mapping"
    return repr(kind)


def _matches(value: Any, kind: Any) -> bool:
    if isinstance(kind, Optional):
        return value is None or _matches(value, kind.kind)
    if isinstance(kind, Choice):
        return isinstance(value, str) and value in kind.values
    if isinstance(kind, Subset):
        return isinstance(value, list) and all(
            isinstance(v, str) and v in kind.values for v in value
        )
    if isinstance(kind, dict):
        return isinstance(value, dict)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(kind, Duration):
        try:
            parse_duration(value)
            return True
        except ValueError:
            return False
    if isinstance(kind, Count):
        return isinstance(value, int) and not isinstance(value, bool) and value >= kind.minimum
    if isinstance(kind, Number):
        return kind.holds(value)
    if kind is Any:
        return True
    return isinstance(value, kind)


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


def _where(source: str, lines: dict, path: tuple) -> str:
    line = lines.get(path)
    return f"{source}, line {line}" if line else source


def _suggest(key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_mapping(values: dict, schema: dict, path: tuple, source: str, lines: dict) -> None:
    valid = sorted(schema)
    for key, value in values.items():
        key_path = path + (key,)
        dotted = ".".join(map(str, key_path))
        if key not in schema:
            raise CardError(
                f"{_where(source, lines, key_path)}: unknown key '{dotted}'"
                f"{_suggest(str(key), valid)}. Valid keys here: {', '.join(valid)}"
            )
        kind = schema[key]
        if not _matches(value, kind):
            raise CardError(
                f"{_where(source, lines, key_path)}: '{dotted}' must be {_type_name(kind)}, "
                f"got {value!r} ({type(value).__name__})"
            )
        if isinstance(kind, dict):
            _check_mapping(value, kind, key_path, source, lines)


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
    from keras_s2s.models import ARCHITECTURES  # here: listing the cards needs no TensorFlow

    lines = lines or {}
    if not isinstance(raw, dict):
        raise CardError(f"{source}: a model card must be a YAML mapping, got {type(raw).__name__}")
    _check_mapping(raw, SCHEMA, (), source, lines)
    for key in REQUIRED:
        if key not in raw:
            raise CardError(f"{source}: missing required key '{key}'")
    arch = raw["architecture"]
    if arch not in ARCHITECTURES:
        raise CardError(
            f"{_where(source, lines, ('architecture',))}: unknown architecture '{arch}'"
            f"{_suggest(arch, sorted(ARCHITECTURES))}. Valid: {', '.join(sorted(ARCHITECTURES))}"
        )
    model_schema = architecture_arguments(ARCHITECTURES[arch])
    _check_mapping(raw["model"], model_schema, ("model",), source, lines)
    for preset, entry in (raw.get("presets") or {}).items():
        if not isinstance(entry, dict) or "url" not in entry:
            raise CardError(
                f"{_where(source, lines, ('presets', preset))}: preset '{preset}' needs url"
            )
        if "sha256" in entry and not is_sha256(entry["sha256"]):
            raise CardError(
                f"{_where(source, lines, ('presets', preset, 'sha256'))}: preset '{preset}': sha256 "
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


def _resolve_override_key(card: dict, key: str) -> list[tuple]:
    """Where a bare or dotted override key lives in the card (every section that has it; `vocab_size`:
    the data part, which the model takes it from)."""
    from keras_s2s.models import ARCHITECTURES

    if "." in key:
        return [tuple(key.split("."))]
    arch_args = architecture_arguments(ARCHITECTURES.get(card.get("architecture"), object))
    homes = []
    if key in arch_args and not (key in DATA_SIZED and key not in card.get("model", {})):
        homes.append(("model", key))
    for section in ("data", "training"):
        if key in SCHEMA[section]:
            homes.append((section, key))
    if key in SCHEMA and not isinstance(SCHEMA[key], dict):
        homes.append((key,))
    if not homes:
        valid = sorted(set(arch_args) | set(SCHEMA["data"]) | set(SCHEMA["training"]))
        raise CardError(
            f"override '{key}': unknown setting{_suggest(key, valid)}. "
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
            f"{_where(str(path), lines, ('base',))}: 'base' must name a card, got {base!r}"
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
            apply_overrides(raw, overrides), f"{path} (with overrides {overrides})", path=str(path)
        )
    return card
