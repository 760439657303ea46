"""Test setup: two logical CPU devices (for multi-replica tests) and a clean dtype policy."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)
CPU_DEVICES = [d.name for d in tf.config.list_logical_devices("CPU")]


@pytest.fixture(autouse=True)
def float32_policy():
    """Every test starts and ends with the float32 policy."""
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def demo_data():
    """A small demo task shared by the tests (tokenizer training is the slow part)."""
    from keras_s2s.data import load_parallel_data

    return load_parallel_data(
        "demo",
        num_train=1500,
        num_valid=64,
        num_test=32,
        vocab_size=600,
        batch_size=32,
        max_length=48,
        repeat=True,
    )


def tiny_gnmt(vocab_size=64, **kwargs):
    from keras_s2s.models import GNMT

    args = dict(vocab_size=vocab_size, num_layers=3, units=16, dropout=0.0)
    args.update(kwargs)
    return GNMT(**args)
