"""Hybrid data-model parallel training on two logical CPU devices (see keras_s2s/distribution/placement.py)."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from devices import cpu_devices
from tiny import tiny_gnmt

from keras_s2s import zoo
from keras_s2s.config import CardError
from keras_s2s.distribution.placement import HybridParallel, hybrid_loss
from keras_s2s.losses import SmoothedCrossEntropy

DEVICES = [tf.DeviceSpec.from_string(d).to_string() for d in cpu_devices()]


def _canonical(device):
    spec = tf.DeviceSpec.from_string(device)
    return f"{spec.device_type}:{spec.device_index}"


def placed_gnmt(time_chunks=1, **kwargs):
    keras.utils.set_random_seed(1)
    model = tiny_gnmt(vocab_size=50, num_layers=3, units=8, **kwargs)
    HybridParallel(DEVICES, time_chunks=time_chunks).place(model)
    model.build()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=SmoothedCrossEntropy(0.1))
    return model


def batch(size=5):
    rng = np.random.default_rng(0)
    source = rng.integers(1, 50, (size, 9)).astype("int32")
    source[2 % size, 5:] = 0
    source[-1, 3:] = 0
    target_in = rng.integers(1, 50, (size, 7)).astype("int32")
    labels = rng.integers(1, 50, (size, 7)).astype("int32")
    labels[1 % size, 4:] = 0
    target_in[1 % size, 5:] = 0
    return {"source": source, "target_in": target_in}, labels


def expected_devices(model):
    """Layer name -> device of the default plan: layer i on device i mod 2, embeddings with layer 0."""
    plan = {model.source_embedding.name: 0, model.target_embedding.name: 0}
    for stack in (model.encoder_layers, model.decoder_layers):
        plan.update({layer.name: i % 2 for i, layer in enumerate(stack)})
    return plan


def _layer_of(op, names):
    """The placed layer whose name scope (Keras adds _1, _2, ... per call) the op sits in, or None."""
    for part in op.name.split("/"):
        for name in names:
            if re.fullmatch(re.escape(name) + r"(_\d+)?", part):
                return name
    return None


def assert_ops_on_planned_devices(model, graph, time_chunks):
    """Forward and backward LSTM loops, matmuls and gathers of every placed layer, and each shard's
    readout ops, carry their planned device in the traced graph."""
    plan = expected_devices(model)
    checked = {name: 0 for name in plan}
    shards = [0, 0]
    for op in graph.get_operations():
        name = _layer_of(op, plan)
        if name and op.type in ("While", "StatelessWhile", "MatMul", "GatherV2"):
            assert op.device and _canonical(op.device) == f"CPU:{plan[name]}", (op.name, op.device)
            checked[name] += 1
        for index in (0, 1):
            if f"shard_{index}" in op.name.split("/") and op.type in (
                "MatMul",
                "BatchMatMulV2",
                "Softmax",
                "Sum",
            ):
                assert _canonical(op.device) == f"CPU:{index}", (op.name, op.device)
                shards[index] += 1
    assert all(checked.values()) and all(shards), (checked, shards)
    # gradient loops (backward through each LSTM and time chunk) run where their forward loops ran
    backward = [
        op
        for op in graph.get_operations()
        if op.type in ("While", "StatelessWhile") and op.name.startswith("gradients/")
    ]
    # bidirectional (2 loops), 2 encoder + 3 decoder LSTMs
    assert len(backward) == 2 + (2 + 3) * time_chunks
    for op in backward:
        assert _canonical(op.device) == f"CPU:{plan[_layer_of(op, plan)]}", (op.name, op.device)


@pytest.mark.parametrize("time_chunks, size", [(1, 5), (3, 1)])  # uneven shards; an empty shard
def test_placed_ops_loss_and_gradients_match_the_single_device_model(time_chunks, size):
    placed = placed_gnmt(time_chunks)
    single = tiny_gnmt(vocab_size=50, num_layers=3, units=8)
    single.build()
    single.compile(optimizer="sgd", loss=SmoothedCrossEntropy(0.1))
    single.set_weights(placed.get_weights())
    x, y = batch(size)

    @tf.function
    def hybrid():
        loss = hybrid_loss(placed, x, y, training=True)[0]
        return loss, tf.gradients(loss, [v.value for v in placed.trainable_variables])

    loss, grads = hybrid()
    assert_ops_on_planned_devices(placed, hybrid.get_concrete_function().graph, time_chunks)
    with tf.GradientTape() as tape:
        expected = single.compute_loss(x, y, single(x, training=True))
    expected_grads = tape.gradient(expected, single.trainable_variables)
    np.testing.assert_allclose(loss, expected, atol=1e-5)
    for got, want, variable in zip(grads, expected_grads, single.trainable_variables):
        np.testing.assert_allclose(
            tf.convert_to_tensor(got), tf.convert_to_tensor(want), atol=1e-5, err_msg=variable.path
        )


def assert_on_planned_devices(model):
    """Every variable on its planned device; every optimizer slot beside its variable."""
    plan = expected_devices(model)
    layers = {layer.name: layer for layer in model._flatten_layers(include_self=False)}
    for name in list(plan) + ["attention", "attention_combine", "output_projection"]:
        want = f"CPU:{plan.get(name, 0)}"  # the data-parallel readout keeps its weights on the first device
        for variable in layers[name].weights:
            assert _canonical(variable.value.device) == want, (variable.path, variable.value.device)
    # after iteration and learning_rate: (momentum, velocity) per variable
    slots = model.optimizer.variables[2:]
    assert len(slots) == 2 * len(model.trainable_variables)
    for index, variable in enumerate(model.trainable_variables):
        for slot in slots[2 * index : 2 * index + 2]:
            assert _canonical(slot.value.device) == _canonical(variable.value.device), (
                slot.path,
                variable.path,
            )


def test_a_training_step_matches_the_single_device_model():
    placed = placed_gnmt()
    single = tiny_gnmt(vocab_size=50, num_layers=3, units=8)
    single.build()
    single.compile(optimizer=keras.optimizers.Adam(0.01), loss=SmoothedCrossEntropy(0.1))
    single.set_weights(placed.get_weights())
    x, y = batch()
    logs = placed.train_on_batch(x, y, return_dict=True)
    assert_on_planned_devices(placed)
    expected = single.train_on_batch(x, y, return_dict=True)
    assert logs.keys() == expected.keys()
    for key in logs:
        assert logs[key] == pytest.approx(expected[key], abs=1e-5), key
    for got, want in zip(placed.get_weights(), single.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_accumulated_hybrid_updates_match_the_single_device_model_and_stay_beside_their_weights():
    from keras_s2s.optimizers import Adam

    placed = placed_gnmt()
    placed.compile(optimizer=Adam(0.01, accumulate_steps=2), loss=SmoothedCrossEntropy(0.1))
    single = tiny_gnmt(vocab_size=50, num_layers=3, units=8)
    single.build()
    single.compile(optimizer=Adam(0.01, accumulate_steps=2), loss=SmoothedCrossEntropy(0.1))
    single.set_weights(placed.get_weights())
    x, y = batch(6)
    for half in (slice(0, 3), slice(3, 6)):
        micro = {key: value[half] for key, value in x.items()}
        placed.train_on_batch(micro, y[half])
        single.train_on_batch(micro, y[half])
    assert int(placed.optimizer.iterations.numpy()) == 1
    for got, want in zip(placed.get_weights(), single.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)
    for accumulator, variable in zip(
        placed.optimizer.accumulated_gradients, placed.trainable_variables
    ):
        assert _canonical(accumulator.value.device) == _canonical(variable.value.device), (
            variable.path
        )


def test_hybrid_training_converges_on_the_demo_task(demo_data):
    keras.utils.set_random_seed(3)
    model = zoo.load(
        "gnmt",
        tokenizer=demo_data.tokenizer,
        num_layers=2,
        units=32,
        dropout=0.0,
        precision="float32",
        strategy="hybrid",
        learning_rate=0.005,
        schedule="constant",
        clipnorm=None,
    )
    assert model.placement.layers[model.decoder_layers[1].name].endswith("CPU:1")
    initial = np.log(demo_data.tokenizer.vocab_size)
    model.fit(demo_data.train.take(50), epochs=1, verbose=0)
    losses = [float(model.compute_loss(x, y, model(x))) for x, y in demo_data.valid.take(2)]
    assert np.mean(losses) < 0.8 * initial


def test_bad_placements_are_refused_clearly():
    with pytest.raises(ValueError, match="does not exist here"):
        HybridParallel(["/cpu:0", "/gpu:7"])
    with pytest.raises(ValueError, match="devices repeat"):
        HybridParallel(["/cpu:0", "/CPU:0"])
    built = tiny_gnmt()
    built.build()
    with pytest.raises(ValueError, match="before it is built"):
        HybridParallel(DEVICES).place(built)
    with pytest.raises(ValueError, match="placeable layers are"):
        HybridParallel(DEVICES, plan={"decoder_lstm_9": 1}).place(tiny_gnmt())
    with pytest.raises(ValueError, match="device index 2; there are 2 devices"):
        HybridParallel(DEVICES, plan={"decoder_lstm_1": 2}).place(tiny_gnmt())
    with pytest.raises(CardError, match="lacks encoder_layers"):
        zoo.load(
            "transformer",
            vocab_size=40,
            num_layers=1,
            d_model=8,
            num_heads=2,
            ffn_dim=8,
            strategy="hybrid",
        )
    with pytest.raises(CardError, match="jit_compile"):
        zoo.load("gnmt", vocab_size=40, num_layers=2, units=8, strategy="hybrid", jit_compile=True)


def test_a_custom_plan_moves_a_layer():
    model = tiny_gnmt(num_layers=2)
    plan = HybridParallel(DEVICES, plan={"decoder_lstm_0": 1}).place(model)
    model.build()
    assert _canonical(model.decoder_layers[0].cell.kernel.value.device) == "CPU:1"
    assert _canonical(model.target_embedding.embeddings.value.device) == "CPU:1", (
        "embeddings follow layer 0"
    )
    assert _canonical(model.source_embedding.embeddings.value.device) == "CPU:0"
    assert "decoder_lstm_0" in plan.describe()


def test_the_cost_model_counts_gnmts_parameters_and_bounds_its_speedups():
    from keras_s2s.distribution.cost_model import (
        HARDWARE,
        GNMTShape,
        parameter_counts,
        speedups,
        step_time,
    )

    shape = GNMTShape(layers=3, units=8, vocab=50, batch=64, source=20, target=20)
    model = tiny_gnmt(vocab_size=50, num_layers=3, units=8)
    model.build()
    assert sum(parameter_counts(shape).values()) == model.count_params()
    big = GNMTShape()  # the gnmt card: 4+4 layers x 1024, vocabulary 32000, batch 128
    for hardware in HARDWARE.values():
        for devices in (2, 4):
            gains = speedups(big, hardware, devices)
            assert 0 < gains["data"] <= devices and 0 < gains["hybrid"] <= devices, gains
            single = step_time(big, hardware, 1)
            hybrid = step_time(big, hardware, devices, "hybrid")
            # the busiest device does its share or more
            assert single.flops / devices <= hybrid.flops < single.flops
    fast, slow = HARDWARE["h200-nvlink"], HARDWARE["v100-pcie"]
    assert speedups(big, fast, 4)["hybrid"] > speedups(big, fast, 4)["data"], (
        "latency-bound LSTMs favour hybrid"
    )
    assert (
        step_time(big, slow, 4, "data").communication
        > step_time(big, fast, 4, "data").communication
    )
