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
    >>> card = load_card("keras_s2s/zoo/gnmt.yaml", {"units": 256})
    >>> card.model["units"]
    256
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import math
import numbers
import re
from pathlib import Path
from typing import Any

import yaml

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
STRATEGIES = ("auto", "default", "mirrored", "multiworker", "hybrid")
OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "exponential", "warmup_exponential", "inverse_sqrt", "deadline")
FITTABLE = ("vocab_size", "max_length", "num_train")  # data settings a corpus can choose (data/fitting.py)


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


class Duration:
    """A time span written with units: `25m`, `2h`, `1h30m`, `90s`, `1.5h` (see `parse_duration`)."""

    def __repr__(self) -> str:
        return "a duration such as 25m, 2h or 1h30m"


COUNT, SIZE = Count(1), Count(0)  # SIZE: 0 allowed (e.g. num_train 0 = all)

SCHEMA: dict[str, Any] = {
    "name": str,
    "description": str,
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
        "augment": dict,  # see keras_s2s/data/augment.py
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
        "loss_scale": {"algorithm": Choice("dynamic", "static", "logmax"), "initial_scale": float,
                       "growth_interval": COUNT, "log_max": float, "beta1": float, "beta2": float,
                       "overflow_std_dev": float, "scale_min": float, "scale_max": float},
        # a non-finite loss: roll back, lower the learning rate (keras_s2s/training/nonfinite.py)
        "nonfinite": {"rollbacks": SIZE, "lr_factor": float, "skipped_steps": COUNT},
        # scored after every epoch, best weights kept (keras_s2s/training/validation.py)
        "validation": {"metric": Choice("bleu", "chrf", "loss"), "patience": SIZE, "sentences": COUNT,
                       "min_delta": float},
        "accumulate_steps": COUNT,  # gradient accumulation: batches per update (OpenSeq2Seq's iter_size)
        "steps_per_execution": COUNT,
        "time_limit": Optional(Duration()),  # train until this much time is spent (over restarts)
        "lr_floor": float,  # schedule deadline: the rate at the deadline, a share of the peak
        "jit_compile": bool,
        "seed": int,
        "decode_max_length": COUNT,
    },
}

REQUIRED = ("architecture", "model", "data", "training")


class CardLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that also reads `1e-3` as a float (YAML 1.1 needs `1.0e-3`)."""


CardLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def safe_load(text: str):
    """Parse YAML text safely (no code, no custom tags)."""
    return yaml.load(text, Loader=CardLoader)


def check_count(name: str, value, minimum: int = 1) -> int:
    """`value` as an int when it is a whole number of at least `minimum`; a ValueError naming `name` if not.

    Example:
        >>> check_count("batch_size", 0)
        Traceback (most recent call last):
        ValueError: batch_size must be a whole number of at least 1, got 0
    """
    whole = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not whole or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, got {value!r}")
    return int(value)


_DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text) -> float:
    """Seconds in a duration written with units (d, h, m, s); a ValueError for anything else.

    Example:
        >>> parse_duration("1h30m"), parse_duration("25m"), parse_duration("1.5h")
        (5400.0, 1500.0, 5400.0)
    """
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([dhms])", str(text).strip().lower())
    rebuilt = "".join(number + unit for number, unit in parts)
    if not parts or rebuilt != re.sub(r"\s+", "", str(text).strip().lower()):
        raise ValueError(f"{text!r} is not a duration: write e.g. 25m, 2h, 1h30m or 90s")
    seconds = sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r}: a time limit must be longer than 0")
    return seconds


class CardError(ValueError):
    """A model card (or an override of it) is invalid."""


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
        return {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
                "dict": "mapping", "list": "list"}.get(kind.__name__, kind.__name__)
    if isinstance(kind, dict):
        return "mapping"
    return repr(kind)


def _matches(value: Any, kind: Any) -> bool:
    if isinstance(kind, Optional):
        return value is None or _matches(value, kind.kind)
    if isinstance(kind, Choice):
        return isinstance(value, str) and value in kind.values
    if isinstance(kind, Subset):
        return isinstance(value, list) and all(isinstance(v, str) and v in kind.values for v in value)
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
    if kind is Any:
        return True
    return isinstance(value, kind)


def _key_lines(text: str) -> dict[tuple, int]:
    """Map each key path of a YAML mapping to its 1-based line number."""
    lines: dict[tuple, int] = {}

    def walk(node: Any, prefix: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                path = prefix + (key_node.value,)
                lines[path] = key_node.start_mark.line + 1
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


OBJECT_ARGUMENTS = ("self", "tokenizer", "vocabulary", "extractor")  # passed as objects, never set in a card


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
        elif isinstance(default, int) and not isinstance(default, bool):  # sizes and counts: 0 = "derived"
            arguments[name] = Count(1 if default > 0 else 0)
        else:
            arguments[name] = type(default)
    return arguments


def validate(raw: Any, source: str, lines: dict | None = None) -> Card:
    """Validate a parsed card and return it as a `Card`."""
    from keras_s2s.models import ARCHITECTURES

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
        missing = [key for key in ("url", "sha256") if not isinstance(entry, dict) or key not in entry]
        if missing:
            raise CardError(f"{_where(source, lines, ('presets', preset))}: preset '{preset}' needs "
                            f"{' and '.join(missing)}")
    name = raw.get("name") or Path(source).stem
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
    """Where a bare or dotted override key lives in the card (every section that has it)."""
    from keras_s2s.models import ARCHITECTURES

    if "." in key:
        return [tuple(key.split("."))]
    arch_args = architecture_arguments(ARCHITECTURES.get(card.get("architecture"), object))
    homes = []
    if key in arch_args:
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


def parse_override(text: str) -> tuple[str, Any]:
    """Parse a `key=value` command-line override; the value is read as YAML."""
    if "=" not in text:
        raise CardError(f"override '{text}' must look like key=value, e.g. units=256")
    key, value = text.split("=", 1)
    try:
        parsed = safe_load(value) if value.strip() else ""
    except yaml.YAMLError as exc:
        raise CardError(f"override '{text}': value is not valid YAML ({exc})") from None
    return key.strip(), parsed


def load_card(path: str | Path, overrides: dict[str, Any] | None = None) -> Card:
    """Read, override and validate the card at `path`."""
    path = Path(path)
    if not path.is_file():
        raise CardError(f"model card not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        raw = safe_load(text)
    except yaml.YAMLError as exc:
        raise CardError(f"{path}: not valid YAML: {exc}") from None
    lines = _key_lines(text)
    card = validate(raw, str(path), lines)  # the card itself, with line numbers
    if overrides:
        card = validate(apply_overrides(raw, overrides), f"{path} (with overrides {overrides})")
    return card
