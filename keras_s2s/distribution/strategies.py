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

from keras_s2s.backend import is_tensorflow, tf
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


def is_chief(strategy) -> bool:
    """Whether this process writes checkpoints, logs and exports (always, except multi-worker non-chiefs)."""
    extended = getattr(strategy, "extended", None)
    return bool(getattr(extended, "should_checkpoint", True))


def _count_workers(cluster: dict) -> int:
    """Training processes (chief and workers) of a cluster spec {role: [addresses]}."""
    return sum(len(cluster.get(role, [])) for role in ("chief", "worker"))


def _tf_config_workers() -> int:
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    except json.JSONDecodeError as exc:
        raise ValueError(f"TF_CONFIG is not valid JSON: {exc}") from None
    return _count_workers(cluster)


def get_strategy(
    name: str | tf.distribute.Strategy = "auto",
    devices: list[str] | None = None,
    time_chunks: int = 1,
):
    """Return a `tf.distribute.Strategy`, or a `HybridParallel` for `hybrid`.

    Args:
        name: str. `auto` (multi-worker when TF_CONFIG lists several workers,
            mirrored when several GPUs or `devices` are given, else default),
            `default`, `mirrored`, `multiworker` or `hybrid` (RNN layers on
            devices, readout data-parallel: `keras_s2s.distribution.placement`).
            A strategy object is returned as is.
        devices: list[str] | None. Devices for `mirrored` (default: all GPUs,
            or the CPU; the same devices give the same strategy object) or
            `hybrid` (default: all GPUs when several, else the logical CPUs).
        time_chunks: int. `hybrid` only: pipelining pieces of each sequence.
    """
    if not is_tensorflow():  # JAX: keras.distribution behind the same surface
        from keras_s2s.distribution.jax_parallel import distribution_for

        return distribution_for(name, devices=devices)
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


def is_multiworker(strategy) -> bool:
    """Whether `strategy` trains in several processes (TensorFlow's multi-worker strategy, or JAX's
    distributed runtime)."""
    if is_tensorflow():
        return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    return getattr(strategy, "name", "") == "multiworker"


def describe_strategy(strategy) -> str:
    """`2 replica(s)`, or `hybrid over 2 device(s)`, for progress messages."""
    if isinstance(strategy, HybridParallel):
        return f"hybrid over {len(strategy.devices)} device(s)"
    if is_tensorflow() and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        workers = _count_workers(strategy.cluster_resolver.cluster_spec().as_dict()) or 1
        return f"{strategy.num_replicas_in_sync} replica(s) on {workers} worker(s)"
    if is_multiworker(strategy):  # JAX
        import jax

        return f"{strategy.num_replicas_in_sync} replica(s) on {jax.process_count()} worker(s)"
    return f"{strategy.num_replicas_in_sync} replica(s)"
