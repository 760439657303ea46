"""The devices tests run on, and which test files run under both backends.

conftest.py splits the CPU into two logical devices (TensorFlow) or asks XLA for two host devices
(JAX) before any test runs; `cpu_devices()` names them.

Example:
    >>> strategy = get_strategy("mirrored", devices=cpu_devices())
"""

# the test files that run under both backends (the JAX pass runs only these)
JAX_PASS = ("test_backends.py", "test_architecture.py", "test_encoded_corpus.py")
# XLA's CPU backend compiles 35-40% faster without LLVM's optimizations, and the tests' tiny shapes
# run as fast either way: compiling is most of the JAX pass, the backend twin and the JAX workers.
# conftest.py puts it in XLA_FLAGS for every process the suite starts.
FAST_XLA_COMPILE = "--xla_backend_optimization_level=0"


def cpu_devices() -> list[str]:
    """The two logical CPU devices (TensorFlow's names, or JAX's host devices)."""
    import keras

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return [device.name for device in tf.config.list_logical_devices("CPU")]
    return [str(device) for device in keras.distribution.list_devices()]
