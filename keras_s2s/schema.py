"""What a valid card value is: the kinds of a schema (`Count`, `Choice`, `Number`, ...) and
`check_mapping`, which checks a card part against a schema with errors that name the file, line, key
and the valid choices.

The schemas themselves belong to their owners: the card's frame and training part to
`keras_s2s.cards`, each task's `data` part to its `Task.data_schema`.

Example:
    >>> check_mapping({"batch_size": 0}, {"batch_size": COUNT}, ("data",), "my.yaml", {})
    Traceback (most recent call last):
    CardError: my.yaml: 'data.batch_size' must be a whole number of at least 1, got 0 (int)
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from keras_s2s.config import CardError, parse_duration


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
        return f"{type_name(self.kind)} or null"


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


def type_name(kind: Any) -> str:
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


def matches(value: Any, kind: Any) -> bool:
    if isinstance(kind, Optional):
        return value is None or matches(value, kind.kind)
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


def where(source: str, lines: dict, path: tuple) -> str:
    line = lines.get(path)
    return f"{source}, line {line}" if line else source


def suggest(key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_mapping(
    values: dict, schema: dict, path: tuple, source: str, lines: dict, owner: str = ""
) -> None:
    """A CardError for the first key of `values` (a card part at `path`) that `schema` lacks or
    whose value is not of its kind; `owner` (a task's name) says whose settings these are."""
    valid = sorted(schema)
    for key, value in values.items():
        key_path = path + (key,)
        dotted = ".".join(map(str, key_path))
        if key not in schema:
            whose = f" of a {owner} card" if owner else ""
            raise CardError(
                f"{where(source, lines, key_path)}: unknown key '{dotted}'{whose}"
                f"{suggest(str(key), valid)}. Valid keys here: {', '.join(valid)}"
            )
        kind = schema[key]
        if not matches(value, kind):
            raise CardError(
                f"{where(source, lines, key_path)}: '{dotted}' must be {type_name(kind)}, "
                f"got {value!r} ({type(value).__name__})"
            )
        if isinstance(kind, dict):
            check_mapping(value, kind, key_path, source, lines)
