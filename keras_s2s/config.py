"""Settings every layer shares: the valid precisions, strategies, optimizers and schedules, counts and
durations as the command line and the cards write them, and `CardError`.

The cards themselves (schema, validation, base cards, overrides) are `keras_s2s.cards`.

Example:
    >>> parse_duration("1h30m"), check_count("batch_size", 64)
    (5400.0, 64)
    >>> parse_override("units=256")
    ('units', 256)
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import yaml

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
STRATEGIES = ("auto", "default", "mirrored", "multiworker", "hybrid")
OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "exponential", "warmup_exponential", "inverse_sqrt", "deadline")
# beam search's GNMT length-penalty alpha when none is given: translate, evaluate, serving and the
# CTranslate2 export. 1.0 scored +0.06 to +0.42 dev BLEU over GNMT's 0.6 on six 25-minute
# ConvS2S and Transformer runs (docs/translation.md, "Spending the 25 minutes")
LENGTH_PENALTY = 1.0
# data settings a corpus can choose (data/fitting.py)
FITTABLE = (
    "vocab_size",
    "max_length",
    "num_train",
)


class CardLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that also reads `1e-3` as a float (YAML 1.1 needs `1.0e-3`)."""


CardLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


MAX_YAML_VALUES = 100_000  # values a card may expand to through aliases (a zoo card has ~60)


def _expanded_values(root) -> int:
    """How many values the YAML node graph `root` stands for once every alias is expanded, counted
    over its distinct nodes (an alias shares its anchor's node): fast even for an alias bomb."""
    counts: dict[int, int] = {}

    def count(node) -> int:
        if id(node) not in counts:
            counts[id(node)] = 0  # a node that contains itself adds nothing more
            if isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            else:
                children = node.value if isinstance(node, yaml.SequenceNode) else []
            counts[id(node)] = 1 + sum(count(child) for child in children)
        return counts[id(node)]

    return count(root)


def safe_load(text: str, source: str = "YAML"):
    """Parse YAML text safely (no code, no custom tags; a CardError naming `source` when aliases
    would expand it beyond `MAX_YAML_VALUES` values, before anything is expanded)."""
    try:
        root = yaml.compose(text, Loader=CardLoader)
        if root is not None and (values := _expanded_values(root)) > MAX_YAML_VALUES:
            raise CardError(
                f"{source}: its aliases (*name) expand it to {values:,} values, more than the "
                f"{MAX_YAML_VALUES:,} a card may hold; write the values out, or use fewer aliases"
            )
        return yaml.load(text, Loader=CardLoader)
    except RecursionError:  # the YAML reader recurses once per level
        raise CardError(
            f"{source}: nested too deeply (lists or mappings inside each other hundreds of "
            "levels deep); a card needs a few"
        ) from None


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


class MissingExtra(ImportError):
    """An optional dependency a command needs is not installed; the message says what to install.

    Example:
        >>> raise MissingExtra('KenLM is not installed: pip install "keras-s2s[lm]"')
    """


def parse_override(text: str) -> tuple[str, Any]:
    """Parse a `key=value` command-line override; the value is read as YAML."""
    if "=" not in text:
        raise CardError(f"override '{text}' must look like key=value, e.g. units=256")
    key, value = text.split("=", 1)
    try:
        parsed = safe_load(value, f"--set {key.strip()}") if value.strip() else ""
    except yaml.YAMLError as exc:
        raise CardError(f"override '{text}': value is not valid YAML ({exc})") from None
    return key.strip(), parsed


def is_sha256(value) -> bool:
    """Whether `value` is a sha256 digest: 64 hexadecimal characters (a YAML number or '' is not).

    Example:
        >>> is_sha256("0" * 64), is_sha256(""), is_sha256(1234)
        (True, False, False)
    """
    return isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{64}", value) is not None
