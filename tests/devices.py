"""The devices tests run on, and which test files run under both backends.

conftest.py splits the CPU into two logical devices (TensorFlow) or asks XLA for two host devices
(JAX) before any test runs; `cpu_devices()` names them.

Example:
    >>> strategy = get_strategy("mirrored", devices=cpu_devices())
"""

# the test files that run under both backends (the JAX pass runs only these)
JAX_PASS = ("test_backends.py", "test_architecture.py", "test_encoded_corpus.py")


def cpu_devices() -> list[str]:
    """The two logical CPU devices (TensorFlow's names, or JAX's host devices)."""
    import keras

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return [device.name for device in tf.config.list_logical_devices("CPU")]
    return [str(device) for device in keras.distribution.list_devices()]
