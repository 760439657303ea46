import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from devices import cpu_devices

from keras_s2s import zoo
from keras_s2s.distribution import get_strategy
from keras_s2s.distribution.strategies import _tf_config_workers


def test_named_strategies(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert get_strategy("default") is tf.distribute.get_strategy()
    assert get_strategy("auto").num_replicas_in_sync == 1
    mirrored = get_strategy("mirrored", devices=cpu_devices())
    assert (
        isinstance(mirrored, tf.distribute.MirroredStrategy) and mirrored.num_replicas_in_sync == 2
    )
    assert get_strategy(mirrored) is mirrored
    assert get_strategy("mirrored", devices=cpu_devices()) is mirrored, (
        "one strategy per device set"
    )
    assert isinstance(get_strategy("auto", devices=cpu_devices()), tf.distribute.MirroredStrategy)
    with pytest.raises(ValueError, match="strategy must be one of"):
        get_strategy("parallel")


def test_auto_detects_multiple_workers_from_tf_config(monkeypatch):
    cluster = {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster))
    assert _tf_config_workers() == 2
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        _tf_config_workers()


def test_load_builds_inside_a_given_strategy_and_inside_the_users_scope():
    strategy = get_strategy("mirrored", devices=cpu_devices())
    model = zoo.load(
        "gnmt", vocab_size=30, num_layers=2, units=8, precision="float32", strategy=strategy
    )
    assert model.distribute_strategy is strategy
    assert isinstance(model.weights[0].value, tf.distribute.DistributedValues)
    with strategy.scope():
        inside = zoo.load("gnmt", vocab_size=30, num_layers=2, units=8, precision="float32")
    assert inside.distribute_strategy is strategy
    assert isinstance(inside.weights[0].value, tf.distribute.DistributedValues)


def _train(strategy, batches, steps=4):
    keras.utils.set_random_seed(11)
    model = zoo.load(
        "gnmt",
        vocab_size=50,
        num_layers=2,
        units=16,
        dropout=0.0,
        precision="float32",
        strategy=strategy,
        learning_rate=0.01,
        schedule="constant",
    )
    ds = tf.data.Dataset.from_tensor_slices(batches).batch(16)  # global batch 16 = 8 per replica
    history = model.fit(ds.take(steps), epochs=1, verbose=0, shuffle=False)
    return history.history["loss"][-1], [w.numpy() for w in model.weights]


def test_mirrored_over_two_devices_matches_one_device():
    rng = np.random.default_rng(0)
    n, length = 64, 8
    source = rng.integers(4, 50, (n, length)).astype("int32")
    target = rng.integers(4, 50, (n, length)).astype("int32")
    batches = ({"source": source, "target_in": target}, target)
    loss_one, weights_one = _train(get_strategy("default"), batches)
    loss_two, weights_two = _train(get_strategy("mirrored", devices=cpu_devices()), batches)
    assert loss_two == pytest.approx(loss_one, rel=1e-4)
    for a, b in zip(weights_one, weights_two):
        np.testing.assert_allclose(a, b, atol=1e-4)
