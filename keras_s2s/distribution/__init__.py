"""Distribution: the run's runtime (TensorFlow's or JAX's), strategies by name, and the hybrid
data/model-parallel placement.

The names below load on first use, so the model core (GNMT imports the
placement module) starts without TensorFlow on the JAX backend.

Example:
    >>> from keras_s2s import distribution
    >>> strategy = distribution.get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    >>> distribution.describe_strategy(strategy)
    '2 replica(s)'
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "HybridParallel": "keras_s2s.distribution.placement",
    "MultiWorkerStrategy": "keras_s2s.distribution.multiworker",
    "Runtime": "keras_s2s.distribution.runtime",
    "describe_strategy": "keras_s2s.distribution.runtime",
    "get_strategy": "keras_s2s.distribution.runtime",
    "is_chief": "keras_s2s.distribution.runtime",
    "is_multiworker": "keras_s2s.distribution.runtime",
    "make_runtime": "keras_s2s.distribution.runtime",
    "runtime_of_card": "keras_s2s.distribution.runtime",
    "tf_config_for": "keras_s2s.distribution.strategies",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
