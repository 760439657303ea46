"""The zoo's tasks: translation, speech recognition, speech synthesis (see `keras_s2s.tasks.base.Task`).

Every module of this package is imported here, and each `Task` subclass
with a `name` registers itself: a new task is one new file.

Example:
    >>> from keras_s2s import tasks
    >>> tasks.for_card(zoo.get_card("jasper_demo")).command
    'transcribe'
    >>> tasks.of_model(model).noun
    'a translation model'
"""

from __future__ import annotations

import importlib
import pkgutil

from keras_s2s.tasks.base import REGISTRY, PreparedTask, Task

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def for_architecture(cls: type) -> Task:
    """The task whose models `cls` (a zoo architecture class) builds."""
    for task in REGISTRY.values():
        if issubclass(cls, task.model_class):
            return task
    raise ValueError(f"{cls.__name__} belongs to no task (tasks: {', '.join(sorted(REGISTRY))})")


def for_card(card) -> Task:
    """The task of a card's architecture."""
    from keras_s2s.models import ARCHITECTURES

    return for_architecture(ARCHITECTURES[card.architecture])


def of_model(model) -> Task:
    """The task of a built model."""
    return for_architecture(type(model))


def get(name: str) -> Task:
    """The task called `name`."""
    if name not in REGISTRY:
        raise ValueError(f"unknown task '{name}'; tasks: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


__all__ = ["PreparedTask", "REGISTRY", "Task", "for_architecture", "for_card", "get", "of_model"]
