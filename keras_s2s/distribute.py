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


def get_strategy(name: str | tf.distribute.Strategy = "auto", devices: list[str] | None = None):
    """Return a `tf.distribute.Strategy`.

    Args:
        name: str. `auto` (multi-worker when TF_CONFIG lists several workers,
            mirrored when several GPUs or `devices` are given, else default),
            `default`, `mirrored` or `multiworker`. A strategy object is
            returned as is.
        devices: list[str] | None. Devices for `mirrored` (default: all GPUs,
            or the CPU). The same devices give the same strategy object.
    """
    if isinstance(name, tf.distribute.Strategy):
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
    if name == "mirrored":
        key = tuple(devices or ())
        if key not in _mirrored:
            _mirrored[key] = tf.distribute.MirroredStrategy(devices=devices)
        return _mirrored[key]
    return tf.distribute.MultiWorkerMirroredStrategy()
