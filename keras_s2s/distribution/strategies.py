"""TensorFlow's distribution strategies by name (the TensorFlow runtime's; `runtime.get_strategy`
is the public entry on both backends), and a multi-worker job's TF_CONFIG.

Example:
    >>> strategy = tensorflow_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    >>> strategy.num_replicas_in_sync
    2
"""

from __future__ import annotations

import json
import logging
import os

from keras_s2s.backend import tf
from keras_s2s.config import STRATEGIES
from keras_s2s.distribution.placement import HybridParallel, check_devices

log = logging.getLogger("keras_s2s")

# One MirroredStrategy per device set and process: separate instances number their collective ops
# alike, and two models trained under two of them in one process abort with a shape mismatch.
_mirrored: dict[tuple, tf.distribute.MirroredStrategy] = {}


def tf_config_for(workers: list[str], index: int) -> str:
    """The TF_CONFIG of worker `index` among `workers` (host:port each); worker 0 is the chief."""
    if not workers:
        raise ValueError(
            "--workers needs host:port of every worker, e.g. 10.0.0.1:2222,10.0.0.2:2222"
        )
    for address in workers:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"worker address {address!r} is not host:port")
    if not 0 <= index < len(workers):
        raise ValueError(f"--task-index {index} is not a worker index (0..{len(workers) - 1})")
    return json.dumps(
        {"cluster": {"worker": list(workers)}, "task": {"type": "worker", "index": index}}
    )


def _count_workers(cluster: dict) -> int:
    """Training processes (chief and workers) of a cluster spec {role: [addresses]}."""
    return sum(len(cluster.get(role, [])) for role in ("chief", "worker"))


def _tf_config_workers() -> int:
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    except json.JSONDecodeError as exc:
        raise ValueError(f"TF_CONFIG is not valid JSON: {exc}") from None
    return _count_workers(cluster)


def tensorflow_strategy(
    name: str | tf.distribute.Strategy = "auto",
    devices: list[str] | None = None,
    time_chunks: int = 1,
):
    """A `tf.distribute.Strategy`, or a `HybridParallel` for `hybrid` (what
    `runtime.get_strategy` returns on TensorFlow; see it for the names). A strategy object is
    returned as is; the same `mirrored` devices give the same strategy object."""
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
        if devices:
            check_devices(devices)  # MirroredStrategy would quietly fall back to the CPU
        key = tuple(devices or ())
        if key not in _mirrored:
            _mirrored[key] = tf.distribute.MirroredStrategy(devices=devices)
        return _mirrored[key]
    from keras_s2s.distribution.multiworker import MultiWorkerStrategy

    return MultiWorkerStrategy()


def is_multiworker_strategy(strategy) -> bool:
    """Whether `strategy` is TensorFlow's multi-worker strategy."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def describe_tensorflow_strategy(strategy) -> str:
    """`2 replica(s)`, `2 replica(s) on 2 worker(s)` or `hybrid over 2 device(s)`."""
    if isinstance(strategy, HybridParallel):
        return f"hybrid over {len(strategy.devices)} device(s)"
    if is_multiworker_strategy(strategy):
        workers = _count_workers(strategy.cluster_resolver.cluster_spec().as_dict()) or 1
        return f"{strategy.num_replicas_in_sync} replica(s) on {workers} worker(s)"
    return f"{strategy.num_replicas_in_sync} replica(s)"
