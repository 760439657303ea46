"""Distribution: tf.distribute strategies by name, and the hybrid data/model-parallel placement.

The names below load on first use, so the model core (GNMT imports the
placement module) starts without TensorFlow on the JAX backend.

Example:
    >>> from keras_s2s import distribution
    >>> strategy = distribution.get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    >>> distribution.describe_strategy(strategy)
    '2 replica(s)'
"""

import importlib

_PUBLIC = {
    "HybridParallel": "keras_s2s.distribution.placement",
    "MultiWorkerStrategy": "keras_s2s.distribution.strategies",
    "describe_strategy": "keras_s2s.distribution.strategies",
    "get_strategy": "keras_s2s.distribution.strategies",
    "is_chief": "keras_s2s.distribution.strategies",
    "tf_config_for": "keras_s2s.distribution.strategies",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    try:  # a submodule: keras_s2s.distribution.placement, ...
        return importlib.import_module(f"keras_s2s.distribution.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'keras_s2s.distribution' has no attribute '{name}'") from None
