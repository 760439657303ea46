"""Data parallelism on Keras's JAX backend with `keras.distribution`, behind the strategy surface the
zoo and the runner use (`scope()`, `num_replicas_in_sync`, `extended.should_checkpoint`).

`default` is one device; `mirrored` is `keras.distribution.DataParallel` over
every local device (each batch split along its first axis; XLA sums the
gradients); `auto` picks `mirrored` when there are several devices, and
`multiworker` when TF_CONFIG names several workers. `multiworker` joins the
job TF_CONFIG describes (what `--workers`/`--task-index` write) through JAX's
distributed runtime (`keras.distribution.initialize`; worker 0 coordinates;
Gloo collectives on CPUs) and is `DataParallel` over every device of every
process: each process reads its own rows of every global batch
(`backend.process_shard`). The hybrid RNN placement is TensorFlow's (per-layer device
scopes), and refused here.

Example:
    >>> distribution = distribution_for("mirrored", "gnmt.yaml")
    >>> with distribution.scope():
    ...     model = build()
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import types

import keras

from keras_s2s.config import STRATEGIES, CardError
from keras_s2s.distribution.placement import known_device_names

log = logging.getLogger("keras_s2s")


class KerasDistribution:
    """A `keras.distribution.Distribution` (or None: one device) with a tf.distribute-like surface."""

    def __init__(self, distribution=None, name: str = "default"):
        self.distribution, self.name = distribution, name
        devices = distribution.device_mesh.devices.size if distribution is not None else 1
        self.num_replicas_in_sync = int(devices)
        import jax

        self.extended = types.SimpleNamespace(should_checkpoint=jax.process_index() == 0)

    def scope(self):
        """The scope to build and train in (Keras's distribution scope, or nothing for one device)."""
        if self.distribution is None:
            return contextlib.nullcontext()
        return self.distribution.scope()

    def leave_job(self):
        """Leave JAX's distributed runtime, every process together once the chief has saved the
        model (a barrier): a process that left alone would wait at exit for the others, up to JAX's
        shutdown timeout, while the chief evaluates. Each computes on its own devices afterwards."""
        import jax

        if self.name == "multiworker" and jax.distributed.is_initialized():
            log.info("training over: leaving the job's distributed runtime")
            jax.distributed.shutdown()


def describe_distribution(distribution: KerasDistribution) -> str:
    """`2 replica(s)`, or `4 replica(s) on 2 worker(s)` for a multi-worker job."""
    replicas = f"{distribution.num_replicas_in_sync} replica(s)"
    if distribution.name != "multiworker":
        return replicas
    import jax

    return f"{replicas} on {jax.process_count()} worker(s)"


def _tf_config_workers() -> list[str]:
    return json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {}).get("worker", [])


def join_workers() -> int:
    """Join the job TF_CONFIG describes (once, before JAX computes anything); the process count."""
    import jax

    if not jax.distributed.is_initialized():
        config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        workers, index = _tf_config_workers(), config.get("task", {}).get("index")
        if len(workers) < 2 or index is None:
            raise ValueError(
                "strategy multiworker needs the job's workers: --workers host:port,host:port "
                "--task-index N (or TF_CONFIG)"
            )
        log.info(
            "joining %d workers as worker %d (coordinator %s)", len(workers), index, workers[0]
        )
        keras.distribution.initialize(",".join(workers), len(workers), int(index))
    return jax.process_count()


def _jax_device_name(device: str) -> str:
    """`/gpu:3`, `GPU:3`, `/job:localhost/replica:0/task:0/device:GPU:3` -> `gpu:3` (Keras's names)."""
    return device.rsplit("device:", 1)[-1].lstrip("/").lower()


def chosen_devices(devices: list[str]) -> list[str]:
    """Keras's names of `devices` (TensorFlow-style names accepted); a ValueError naming a device
    this process does not have, as TensorFlow's strategies refuse it (JAX would run elsewhere)."""
    names = [_jax_device_name(device) for device in devices]
    return known_device_names(devices, names, keras.distribution.list_devices())


def distribution_for(name, where="the card", devices: list[str] | None = None) -> KerasDistribution:
    """The `KerasDistribution` for a strategy name (`auto`, `default`, `mirrored`, `multiworker`);
    `devices` (e.g. `["/gpu:0", "/gpu:1"]`): `mirrored` (and `auto` given several) over those only,
    as on TensorFlow."""
    if isinstance(name, KerasDistribution):
        return name
    if name not in STRATEGIES:
        raise CardError(f"{where}: strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    if devices and (name == "mirrored" or (name == "auto" and len(devices) > 1)):
        names = chosen_devices(devices)
        log.info("strategy %s over %s", name, ", ".join(names))
        return KerasDistribution(keras.distribution.DataParallel(devices=names), "mirrored")
    if name == "multiworker" or (name == "auto" and len(_tf_config_workers()) > 1):
        processes = join_workers()
        devices = keras.distribution.list_devices()
        log.info("strategy multiworker: %d device(s) in %d processes", len(devices), processes)
        parallel = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)
        return KerasDistribution(parallel, "multiworker")
    devices = keras.distribution.list_devices()
    if name == "auto":
        name = "mirrored" if len(devices) > 1 else "default"
        log.info("strategy auto -> %s (%d JAX device(s))", name, len(devices))
    if name == "default":
        return KerasDistribution()
    if name == "mirrored":
        return KerasDistribution(keras.distribution.DataParallel(devices=devices), "mirrored")
    raise CardError(
        f"{where}: strategy {name!r} runs on Keras's TensorFlow backend only; on JAX use "
        "'mirrored' (every local device), 'multiworker' or 'default'"
    )
