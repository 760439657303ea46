"""keras_s2s: fast sequence-to-sequence models for Keras 3.

Submodules load on first use, so `import keras_s2s` (and `keras-s2s --help`)
does not start TensorFlow.

Example:
    >>> import keras_s2s
    >>> model = keras_s2s.zoo.load("gnmt", num_layers=2, units=256)
    >>> trained = keras_s2s.load_model("runs/gnmt_demo")   # a run directory written by `keras-s2s train`
"""

import importlib

__version__ = "0.1.0"
_SUBMODULES = {
    "audio",
    "corpora",
    "data",
    "decoding",
    "distribution",
    "export",
    "models",
    "precision",
    "tasks",
    "text",
    "training",
    "zoo",
}
_RUN_FUNCTIONS = {"train", "load_model"}  # from keras_s2s.training.runner
_RENAMED = {"distribute": "distribution"}  # the name before 0.2, still answered
__all__ = sorted(_SUBMODULES | _RUN_FUNCTIONS)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"keras_s2s.{name}")
    if name in _RENAMED:
        return importlib.import_module(f"keras_s2s.{_RENAMED[name]}")
    if name in _RUN_FUNCTIONS:
        return getattr(importlib.import_module("keras_s2s.training.runner"), name)
    raise AttributeError(f"module 'keras_s2s' has no attribute '{name}'")
