"""Test setup: two logical CPU devices (for multi-replica tests) and a clean dtype policy.

Two passes run the suite (`.ci/run`): the TensorFlow backend runs every test;
`KERAS_BACKEND=jax` runs the files in `JAX_PASS` with `import tensorflow`
blocked (tests/no_tensorflow.py), as on the GPU machine, on two host devices.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from devices import FAST_XLA_COMPILE, JAX_PASS  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if FAST_XLA_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_XLA_COMPILE}".strip()
BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")

if BACKEND == "jax":
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    )
    import no_tensorflow  # noqa: E402, F401  (blocks TensorFlow before Keras loads)

import keras  # noqa: E402
import pytest  # noqa: E402

if BACKEND == "tensorflow":
    import tensorflow as tf

    _cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )


def pytest_ignore_collect(collection_path, config):
    """Under JAX, collect only the files that run under both backends."""
    if BACKEND != "tensorflow" and collection_path.suffix == ".py":
        return collection_path.name.startswith("test_") and collection_path.name not in JAX_PASS
    return None


# the files that take longest, longest first (seconds of one worker on an AMD EPYC Zen 3, float32,
# beside a training, 2026-12-07), scheduled before the rest: xdist hands out whole files in
# collection order (`--no-loadscope-reorder` in setup.cfg; by default it sends the files with the
# most tests first, which left the one-test JAX pass and backend twin to run alone at the end for
# 10 minutes). The JAX pass is two files (tests/jax_pass.py) with their own timeout.
SLOWEST_FIRST = (
    "test_multiworker.py",  # 832
    "test_backend_twin.py",  # 591
    "test_cli.py",  # 580
    "test_fault_tolerance.py",  # 540
    "test_serving.py",  # 473
    "test_seq2seq_models.py",  # 389
    "test_notebooks.py",  # 376
    "test_jax_pass.py",  # about 370 (709 for both halves)
    "test_jax_pass_rest.py",  # about 340
    "test_backends.py",  # 328
    "test_export.py",  # 303
    "test_accumulation_and_loss_scale.py",  # 279
    "test_gpu_suite.py",  # 278
    "test_tts.py",  # 202
    "test_english_speech.py",  # 200
    "test_presets.py",  # 199
    "test_placement.py",  # 195
    "test_benchmarks.py",  # 187
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = item.path.name
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file and among the others is kept


@pytest.fixture(autouse=True)
def float32_policy():
    """Every test starts and ends with the float32 policy."""
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def demo_data():
    """A small demo task shared by the tests (tokenizer training is the slow part)."""
    from keras_s2s.data import Batching, load_parallel_data

    return load_parallel_data(
        "demo",
        num_train=1500,
        num_valid=64,
        num_test=32,
        vocab_size=600,
        max_length=48,
        batching=Batching(batch_size=32, repeat=True),
    )
