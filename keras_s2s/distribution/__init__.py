"""Distribution: tf.distribute strategies by name, and the hybrid data/model-parallel placement.

Example:
    >>> from keras_s2s import distribution
    >>> strategy = distribution.get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    >>> distribution.describe_strategy(strategy)
    '2 replica(s)'
"""

from keras_s2s.distribution.placement import HybridParallel
from keras_s2s.distribution.strategies import (
    MultiWorkerStrategy,
    describe_strategy,
    get_strategy,
    is_chief,
    tf_config_for,
)

__all__ = [
    "HybridParallel",
    "MultiWorkerStrategy",
    "describe_strategy",
    "get_strategy",
    "is_chief",
    "tf_config_for",
]
