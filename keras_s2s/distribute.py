"""Distribution strategies by name.

Example:
    >>> strategy = get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    >>> strategy.num_replicas_in_sync
    2
"""

from __future__ import annotations

import json
import logging
import os

import tensorflow as tf

from keras_s2s.config import STRATEGIES
from keras_s2s.training.placement import HybridParallel

log = logging.getLogger("keras_s2s")

# One MirroredStrategy per device set and process: separate instances number their collective ops
# alike, and two models trained under two of them in one process abort with a shape mismatch.
_mirrored: dict[tuple, tf.distribute.MirroredStrategy] = {}


def _tf_config_workers() -> int:
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    except json.JSONDecodeError as exc:
        raise ValueError(f"TF_CONFIG is not valid JSON: {exc}") from None
    return sum(len(cluster.get(role, [])) for role in ("chief", "worker"))


def get_strategy(name: str | tf.distribute.Strategy = "auto", devices: list[str] | None = None,
                 time_chunks: int = 1):
    """Return a `tf.distribute.Strategy`, or a `HybridParallel` for `hybrid`.

    Args:
        name: str. `auto` (multi-worker when TF_CONFIG lists several workers,
            mirrored when several GPUs or `devices` are given, else default),
            `default`, `mirrored`, `multiworker` or `hybrid` (RNN layers on
            devices, readout data-parallel: `keras_s2s.training.placement`).
            A strategy object is returned as is.
        devices: list[str] | None. Devices for `mirrored` (default: all GPUs,
            or the CPU; the same devices give the same strategy object) or
            `hybrid` (default: all GPUs when several, else the logical CPUs).
        time_chunks: int. `hybrid` only: pipelining pieces of each sequence.
    """
    if isinstance(name, (tf.distribute.Strategy, HybridParallel)):
        return name
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    if name == "auto":
        if _tf_config_workers() > 1:
            name = "multiworker"
        elif (devices and len(devices) > 1) or len(tf.config.list_logical_devices("GPU")) > 1:
            name = "mirrored"
        else:
            name = "default"
        log.info("strategy auto -> %s", name)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "hybrid":
        return HybridParallel(devices, time_chunks=time_chunks)
    if name == "mirrored":
        key = tuple(devices or ())
        if key not in _mirrored:
            _mirrored[key] = tf.distribute.MirroredStrategy(devices=devices)
        return _mirrored[key]
    return tf.distribute.MultiWorkerMirroredStrategy()


def describe_strategy(strategy) -> str:
    """`2 replica(s)`, or `hybrid over 2 device(s)`, for progress messages."""
    if isinstance(strategy, HybridParallel):
        return f"hybrid over {len(strategy.devices)} device(s)"
    return f"{strategy.num_replicas_in_sync} replica(s)"
