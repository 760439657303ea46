"""The backend boundary: which Keras backend runs, and TensorFlow loaded only where it is used.

keras-s2s runs on Keras's TensorFlow backend (the CPU path: oneDNN, tf.data,
SavedModel, tf.distribute) and on its JAX backend (the accelerator path: the
GPU machine has no TensorFlow). The model core is written in `keras.ops`; the
TensorFlow speed levers (bit-drawing dropout, the hoisted LSTM/GRU
recurrence, the fused Adam kernel, the sparse CTC kernel) are taken only when
`is_tensorflow()`, falling back to Keras's own layers and ops elsewhere, the
way `keras.layers.LSTM` falls back from its cuDNN path.

`tf` is a lazy handle on the `tensorflow` module: modules of the model core
name it at the top (`from keras_s2s.backend import tf`) and TensorFlow is
imported the first time one of its attributes is used, i.e. only on a
TensorFlow code path. `tests/test_architecture.py` forbids a top-level
`import tensorflow` in the model core.

Example:
    >>> from keras_s2s import backend
    >>> backend.name()
    'jax'
    >>> backend.is_tensorflow(), backend.tensorflow_available()
    (False, False)
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys


def name() -> str:
    """The Keras backend in use: 'tensorflow', 'jax' or 'torch'."""
    import keras  # here, not at the top: the lazy packages import this module without starting Keras

    return keras.backend.backend()


def configured_name() -> str:
    """The backend Keras will start with (KERAS_BACKEND, else ~/.keras/keras.json, else tensorflow),
    read without importing Keras (which would start that backend)."""
    import json

    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    config = os.path.join(
        os.environ.get("KERAS_HOME", os.path.expanduser("~/.keras")), "keras.json"
    )
    try:
        with open(config, encoding="utf-8") as handle:
            return json.load(handle).get("backend", "tensorflow")
    except (OSError, ValueError):
        return "tensorflow"


def is_tensorflow() -> bool:
    """Whether Keras runs on TensorFlow (the TensorFlow fast paths apply)."""
    return name() == "tensorflow"


def is_jax() -> bool:
    """Whether Keras runs on JAX."""
    return name() == "jax"


def process_shard() -> tuple[int, int]:
    """(this process's index, the number of processes training together): which rows of each global
    batch this process reads. (0, 1) except on JAX's distributed runtime (`--workers` on JAX)."""
    if not is_jax():
        return 0, 1
    import jax

    return jax.process_index(), jax.process_count()


@contextlib.contextmanager
def outside_distribution():
    """No `keras.distribution` within: for what one process does alone while the others train.
    Saving weights builds a throwaway optimizer, and a variable made inside a JAX distribution that
    spans several processes waits for every process to make it too.

    Example:
        >>> with outside_distribution():
        ...     model.save_weights("best.weights.h5")   # the chief alone
    """
    import keras

    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(previous)


def tensorflow_available() -> bool:
    """Whether `import tensorflow` can work here (without importing it)."""
    if name() == "tensorflow":
        return True
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def import_tensorflow_quietly() -> None:
    """Import TensorFlow without its C++ start-up lines (oneDNN, CUDA probing, CPU features) and with its
    log level at errors only. Python errors still show; the user's own TF_CPP_MIN_LOG_LEVEL, or
    `--verbose`, leaves everything as TensorFlow prints it (the caller skips this)."""
    if "tensorflow" in sys.modules:
        return
    if configured_name() != "tensorflow":  # JAX: TensorFlow only where needed (maybe absent)
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)  # the lines come from C++ before TensorFlow reads its log level
        importlib.import_module("tensorflow")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def lazy_attributes(package: str, public: dict):
    """A package's `__getattr__` that imports its public names (name -> module) and submodules on first
    use, so importing the package starts no TensorFlow.

    Example:
        >>> __getattr__ = lazy_attributes(__name__, {"get_strategy": "keras_s2s.distribution.strategies"})
    """

    def __getattr__(name: str):
        if name in public:
            return getattr(importlib.import_module(public[name]), name)
        try:  # a submodule
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__


class _LazyTensorFlow:
    """`tensorflow`, imported on first attribute access."""

    _module = None

    def __getattr__(self, attribute):
        if _LazyTensorFlow._module is None:
            _LazyTensorFlow._module = importlib.import_module("tensorflow")
        return getattr(_LazyTensorFlow._module, attribute)

    def __repr__(self):
        loaded = "loaded" if _LazyTensorFlow._module is not None else "not loaded yet"
        return f"<lazy tensorflow, {loaded}>"


tf = _LazyTensorFlow()


def compile_with_weights(model, function, input_signature=None, static_argnames=()):
    """`function` (which reads `model`'s weights) compiled for this backend.

    TensorFlow: `tf.function(function, input_signature)`, one trace for every
    shape the signature allows. JAX: `jax.jit` of a stateless twin that gets
    the model's current weights as arguments at every call (through
    `keras.StatelessScope`, as keras-hub's samplers do), so the compiled
    function never decodes with stale weights; `static_argnames` (e.g. an
    output length that sizes the loop's buffers) are compile-time constants.
    Other backends run `function` as it is.

    Example:
        >>> decode = compile_with_weights(model, lambda ids: model.decode_ids(ids, ...))
    """
    if is_tensorflow():
        return tf.function(function, input_signature=input_signature)
    if not is_jax():
        return function
    import jax
    import keras

    def stateless(weights, *args, **kwargs):
        with keras.StatelessScope(state_mapping=list(zip(model.variables, weights))):
            return function(*args, **kwargs)

    compiled = jax.jit(stateless, static_argnames=tuple(static_argnames))

    def call(*args, **kwargs):
        return compiled([v.value for v in model.variables], *args, **kwargs)

    return call
