"""The runtime of a run: where and in what precision a model is built, trained and resumed.

One `Runtime` is made per run from the card's strategy, `--devices`, `--workers` (TF_CONFIG)
and precision; it sets the precision policy and owns what differs between Keras's backends:
the scopes to build, train and set weights in, the chief, the replica count, the pad multiple,
whether training is compiled, what `fit` takes as validation data and what happens when a
multi-worker job ends. `TensorFlowRuntime` (tf.distribute strategies, the hybrid placement)
and `JaxRuntime` (`keras.distribution`) are the two implementations; `runtime_class` is the one
place that picks between them.

Example:
    >>> runtime = make_runtime("mirrored", devices=["/cpu:0", "/cpu:1"], precision="float32")
    >>> runtime.replicas, runtime.chief, runtime.describe()
    (2, True, '2 replica(s)')
    >>> with runtime.build_scope():
    ...     model = build()
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from pathlib import Path

import keras

from keras_s2s.backend import is_tensorflow, outside_distribution, tensorflow_available
from keras_s2s.padding import pad_multiple_for
from keras_s2s.precision import set_precision

log = logging.getLogger("keras_s2s")


class Runtime:
    """A strategy (a `tf.distribute.Strategy`, a `HybridParallel` or a JAX `KerasDistribution`) and
    the precision policy set for it. Subclasses say what their backend does differently."""

    def __init__(self, strategy, policy: str, inherited: bool = False):
        self.strategy, self.policy = strategy, policy
        self.inherited = inherited  # the caller's own strategy scope is open: build right there

    # what each backend's runtime says (TensorFlowRuntime, JaxRuntime)
    @staticmethod
    def strategy_for(name, devices=None, time_chunks: int = 1, where: str = "the card"):
        """The strategy object of a strategy name (see `get_strategy`)."""
        raise NotImplementedError

    @staticmethod
    def is_multiworker(strategy) -> bool:
        """Whether `strategy` trains in several processes."""
        raise NotImplementedError

    @staticmethod
    def describe_strategy(strategy) -> str:
        """`2 replica(s)`, ... for progress messages."""
        raise NotImplementedError

    @classmethod
    def current(cls, policy: str) -> Runtime | None:
        """The runtime of a strategy scope the caller has open, if any."""
        raise NotImplementedError

    def fit_scope(self):
        """Where `fit` runs."""
        raise NotImplementedError

    def weights_scope(self, model):
        """Where weights are set (restored from a backup, copied from a preset)."""
        raise NotImplementedError

    def jit_compile(self, card) -> bool:
        """Whether the training step is compiled (`model.compile(jit_compile=...)`)."""
        raise NotImplementedError

    def validation_arguments(self, valid) -> dict:
        """`fit`'s validation keywords for the dev split's batches."""
        raise NotImplementedError

    def finish_fit(self, model, out: Path):
        """The model to save and evaluate once `fit` has returned (after a job's end)."""
        raise NotImplementedError

    @property
    def replicas(self) -> int:
        """Devices each global batch is split over."""
        return int(self.strategy.num_replicas_in_sync)

    @property
    def chief(self) -> bool:
        """Whether this process writes checkpoints, logs and exports (all but multi-worker non-chiefs)."""
        return is_chief(self.strategy)

    @property
    def multiworker(self) -> bool:
        """Whether the run trains in several processes."""
        return self.is_multiworker(self.strategy)

    @property
    def pad_multiple(self) -> int:
        """What a batch's time axis is padded to: 8 under 16-bit compute, else 1."""
        return pad_multiple_for(self.policy)

    def build_scope(self):
        """Where the model and its optimizer are built."""
        return contextlib.nullcontext() if self.inherited else self.strategy.scope()

    def describe(self) -> str:
        """`2 replica(s)`, `hybrid over 2 device(s)`, ... for progress messages."""
        return self.describe_strategy(self.strategy)

    def tensorboard(self, folder: Path) -> list:
        """The TensorBoard callback writing to `folder`."""
        return [keras.callbacks.TensorBoard(str(folder))]

    def accelerator_memory(self) -> tuple[int, str] | None:
        """(bytes free, where) on an accelerator each replica trains on; None on a CPU."""
        return None

    @classmethod
    def require_saved_model(cls) -> None:
        """Nothing where a SavedModel can be exported; a ValueError naming the way out elsewhere."""


class TensorFlowRuntime(Runtime):
    """tf.distribute: a model built in the strategy's scope keeps it (`fit` enters it itself);
    input is `tf.data`; training is compiled where the card says (XLA is a CPU trade-off)."""

    @staticmethod
    def strategy_for(name, devices=None, time_chunks: int = 1, where: str = "the card"):
        from keras_s2s.distribution.strategies import tensorflow_strategy

        return tensorflow_strategy(name, devices=devices, time_chunks=time_chunks)

    @staticmethod
    def is_multiworker(strategy) -> bool:
        from keras_s2s.distribution.strategies import is_multiworker_strategy

        return is_multiworker_strategy(strategy)

    @staticmethod
    def describe_strategy(strategy) -> str:
        from keras_s2s.distribution.strategies import describe_tensorflow_strategy

        return describe_tensorflow_strategy(strategy)

    @classmethod
    def current(cls, policy: str) -> TensorFlowRuntime | None:
        from keras_s2s.backend import tf

        if not tf.distribute.has_strategy():
            return None
        return cls(tf.distribute.get_strategy(), policy, inherited=True)

    def fit_scope(self):
        return contextlib.nullcontext()

    def weights_scope(self, model):
        """Where weights are set: the scope the model was built in (fit builds its slots there)."""
        return model.distribute_strategy.scope()

    def jit_compile(self, card) -> bool:
        return bool(card.training.get("jit_compile", False))

    def validation_arguments(self, valid) -> dict:
        # repeated, and one pass long: a distributed iterator is kept from epoch to epoch and must
        # not run dry
        return dict(validation_data=valid.repeat(), validation_steps=sum(1 for _ in valid))

    def finish_fit(self, model, out: Path):
        return model


class JaxRuntime(Runtime):
    """keras.distribution: `fit` runs inside the distribution's scope (it splits the batches among
    the devices there); input is a `PyDataset`; every step is compiled."""

    @staticmethod
    def strategy_for(name, devices=None, time_chunks: int = 1, where: str = "the card"):
        from keras_s2s.distribution.jax_parallel import distribution_for

        return distribution_for(name, where, devices=devices)

    @staticmethod
    def is_multiworker(strategy) -> bool:
        return getattr(strategy, "name", "") == "multiworker"

    @staticmethod
    def describe_strategy(strategy) -> str:
        from keras_s2s.distribution.jax_parallel import describe_distribution

        return describe_distribution(strategy)

    @classmethod
    def current(cls, policy: str) -> None:
        return None  # a JAX distribution is always the runtime's own

    def fit_scope(self):
        return self.strategy.scope()

    def weights_scope(self, model):
        return self.strategy.scope()

    def jit_compile(self, card) -> bool:
        if not card.training.get("jit_compile", False):
            log.info(
                "%s: training.jit_compile is a TensorFlow setting; on JAX every step runs compiled",
                card.name,
            )
        return True

    def validation_arguments(self, valid) -> dict:
        return dict(validation_data=valid)  # a PyDataset: one pass each epoch

    def tensorboard(self, folder: Path) -> list:
        """The TensorBoard callback where TensorFlow is installed to write its logs (JAX runs
        without it: on the GPU machine it is absent)."""
        if tensorflow_available():
            return super().tensorboard(folder)
        log.info(
            "TensorBoard logs need TensorFlow, which is not installed here: the run's logs are "
            "history.json and fit.json"
        )
        return []

    def finish_fit(self, model, out: Path):
        """After a multi-worker job: every worker leaves JAX's distributed runtime at once (none waits
        at exit while the chief evaluates), and the chief goes on with a one-process copy of the
        model (the job's arrays span every worker; computing on them would wait for those gone)."""
        if not self.multiworker:
            return model
        self.strategy.leave_job()
        if not self.chief:
            return model
        with tempfile.TemporaryDirectory(dir=out) as scratch, outside_distribution():
            model.save(Path(scratch) / "model.keras")
            return keras.saving.load_model(Path(scratch) / "model.keras")

    @classmethod
    def require_saved_model(cls) -> None:
        raise ValueError(
            "--format saved_model needs Keras's TensorFlow backend (this runs on 'jax'): run the "
            "export with KERAS_BACKEND=tensorflow where TensorFlow is installed (the run's weights "
            "load there), or use --format keras"
        )

    def accelerator_memory(self) -> tuple[int, str] | None:
        import jax

        device = jax.devices()[0]
        if device.platform == "cpu":
            return None
        stats = device.memory_stats() or {}
        if "bytes_limit" not in stats:
            return None
        return stats["bytes_limit"] - stats.get("bytes_in_use", 0), f"on {device.device_kind}"


def is_chief(strategy) -> bool:
    """Whether this process writes checkpoints, logs and exports (always, except multi-worker non-chiefs)."""
    extended = getattr(strategy, "extended", None)
    return bool(getattr(extended, "should_checkpoint", True))


def runtime_class() -> type[Runtime]:
    """The runtime of the Keras backend in use: the one place that chooses by backend."""
    return TensorFlowRuntime if is_tensorflow() else JaxRuntime


def get_strategy(name="auto", devices: list[str] | None = None, time_chunks: int = 1):
    """The strategy named `name` on this backend: a `tf.distribute.Strategy` or `HybridParallel` on
    TensorFlow, a `KerasDistribution` on JAX; a strategy object is returned as is.

    Args:
        name: `auto` (multi-worker when TF_CONFIG lists several workers, mirrored when several
            GPUs or `devices` are given, else default), `default`, `mirrored`, `multiworker` or
            `hybrid` (TensorFlow: RNN layers on devices, the readout data-parallel).
        devices: list[str] | None. Devices for `mirrored` or `hybrid` (default: all of them).
        time_chunks: int. `hybrid` only: pipelining pieces of each sequence.

    Example:
        >>> get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"]).num_replicas_in_sync
        2
    """
    return runtime_class().strategy_for(name, devices=devices, time_chunks=time_chunks)


def is_multiworker(strategy) -> bool:
    """Whether `strategy` trains in several processes."""
    return runtime_class().is_multiworker(strategy)


def describe_strategy(strategy) -> str:
    """`2 replica(s)`, or `hybrid over 2 device(s)`, for progress messages."""
    return runtime_class().describe_strategy(strategy)


def make_runtime(
    strategy="auto",
    devices: list[str] | None = None,
    precision: str = "auto",
    time_chunks: int = 1,
    where: str = "the card",
    policy: str | None = None,
    fallback: str = "auto",
) -> Runtime:
    """The runtime of a strategy (a name or an object; None: the caller's open strategy scope if
    any, else `fallback`) over `devices`, with `precision` resolved and set as Keras's policy (or
    `policy`, already resolved and set by the caller).

    Example:
        >>> make_runtime("default", precision="mixed_bfloat16").pad_multiple
        8
    """
    kind = runtime_class()
    policy = policy or set_precision(precision)
    if strategy is None:
        current = kind.current(policy)
        if current is not None:
            return current
        strategy = fallback
    strategy = kind.strategy_for(strategy, devices=devices, time_chunks=time_chunks, where=where)
    return kind(strategy, policy)


def runtime_of_card(card, strategy=None, devices: list[str] | None = None, policy=None) -> Runtime:
    """The runtime a card asks for: its `training.strategy` (or `strategy`: a name, an object, or a
    `Runtime` returned as is), its precision (or `policy`, already set), its `time_chunks`."""
    if isinstance(strategy, Runtime):
        return strategy
    training = card.training
    return make_runtime(
        strategy,
        devices=devices,
        precision=training.get("precision", "auto"),
        time_chunks=training.get("time_chunks", 1),
        where=str(card.path),
        policy=policy,
        fallback=training.get("strategy", "auto"),
    )
