"""Data parallelism on Keras's JAX backend with `keras.distribution`, behind the strategy surface the
zoo and the runner use (`scope()`, `num_replicas_in_sync`, `extended.should_checkpoint`).

`default` is one device; `mirrored` is `keras.distribution.DataParallel` over
every local device (each batch split along its first axis; XLA sums the
gradients); `auto` picks `mirrored` when there are several devices. The hybrid
RNN placement is TensorFlow's (per-layer device scopes), and refused here.

Example:
    >>> distribution = distribution_for("mirrored", "gnmt.yaml")
    >>> with distribution.scope():
    ...     model = build()
"""

from __future__ import annotations

import contextlib
import logging
import types

import keras

from keras_s2s.config import STRATEGIES, CardError

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


def distribution_for(name, where="the card") -> KerasDistribution:
    """The `KerasDistribution` for a strategy name (`auto`, `default`, `mirrored`)."""
    if isinstance(name, KerasDistribution):
        return name
    if name not in STRATEGIES:
        raise CardError(f"{where}: strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
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
        "'mirrored' (every local device) or 'default'"
    )
