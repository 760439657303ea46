"""The speed layers: 16-bit-draw dropout, LSTM/GRU with the input projection hoisted out of the loop."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_s2s.layers import recurrent
from keras_s2s.layers.dropout import Dropout, drop
from keras_s2s.layers.recurrent import GRU, LSTM

MASK = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5], bool)  # right-padded rows


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_dropout_keeps_the_right_fraction_and_scales(rate):
    x = tf.ones([200, 500])
    y = Dropout(rate, seed=3)(x, training=True).numpy()
    kept = y != 0
    # 100,000 draws: 5 standard deviations ~ 0.0075 at 0.5
    assert abs(kept.mean() - (1 - rate)) < 0.005
    np.testing.assert_allclose(y[kept], 1 / (1 - rate), rtol=1e-6)


def test_dropout_is_identity_at_inference_and_draws_new_masks():
    layer = Dropout(0.3, seed=1)
    x = tf.random.normal([64, 64])
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())
    first, second = (layer(x, training=True).numpy() != 0 for _ in range(2))
    assert (first != second).mean() > 0.2  # a fresh mask per call


def test_dropout_gradient_is_the_scaled_mask():
    x = tf.random.normal([32, 48])
    seed = tf.constant([5, 6], tf.int32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = drop(x, 0.25, seed)
    gradient = tape.gradient(y, x).numpy()
    expected = np.where(y.numpy() != 0, 1 / 0.75, 0.0)
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def test_dropout_bfloat16_odd_sizes_noise_shape_and_config():
    x = tf.cast(tf.ones([3, 5, 7]), tf.bfloat16)  # an odd element count
    y = Dropout(0.5, seed=2, dtype="mixed_bfloat16")(x, training=True)
    assert y.dtype == tf.bfloat16 and y.shape == x.shape
    shared = Dropout(0.5, noise_shape=(3, 1, 7), seed=2)(tf.ones([3, 5, 7]), training=True).numpy()
    assert (shared == shared[:, :1, :]).all()  # Keras's implementation, noise shared along axis 1
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(Dropout(0.2, seed=4))
    )
    assert isinstance(restored, Dropout) and restored.rate == 0.2


def _loss(layer, x, mask):
    out = layer(x, mask=mask)
    out = out[0] if isinstance(out, (list, tuple)) else out
    return tf.reduce_sum(
        tf.cast(out, tf.float32) * tf.cast(tf.range(1, out.shape[-1] + 1), tf.float32)
    )


def _pair(keras_class, ours, x, **kwargs):
    reference, fast = keras_class(4, **kwargs), ours(4, **kwargs)
    reference(x, mask=MASK), fast(x, mask=MASK)
    fast.set_weights(reference.get_weights())
    return reference, fast


@pytest.mark.parametrize("keras_class, ours", [(keras.layers.LSTM, LSTM), (keras.layers.GRU, GRU)])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"return_sequences": True},
        {"return_sequences": True, "go_backwards": True},
        {"return_state": True},
        {"return_sequences": True, "return_state": True, "zero_output_for_mask": True},
    ],
)
def test_hoisted_rnn_equals_keras(keras_class, ours, kwargs):
    x = np.random.default_rng(0).normal(size=(3, 7, 5)).astype("float32")
    reference, fast = _pair(keras_class, ours, x, **kwargs)
    expected, got = reference(x, mask=MASK), fast(x, mask=MASK)
    for a, b in zip(tf.nest.flatten(expected), tf.nest.flatten(got)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-6)
    gradients = []
    for layer in (reference, fast):
        with tf.GradientTape() as tape:
            loss = _loss(layer, x, MASK)
        gradients.append(tape.gradient(loss, layer.trainable_weights))
    for a, b in zip(*gradients):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=2e-5)


def test_hoisted_lstm_in_bfloat16_and_bidirectional():
    x = np.random.default_rng(1).normal(size=(3, 7, 5)).astype("float32")
    pair = [
        keras.layers.Bidirectional(
            cls(4, return_sequences=True, dtype="mixed_bfloat16"), dtype="mixed_bfloat16"
        )
        for cls in (keras.layers.LSTM, LSTM)
    ]
    pair[0](x, mask=MASK), pair[1](x, mask=MASK)
    pair[1].set_weights(pair[0].get_weights())
    expected, got = (layer(x, mask=MASK) for layer in pair)
    assert got.dtype == "bfloat16"
    # bfloat16 rounding
    np.testing.assert_allclose(np.float32(got), np.float32(expected), atol=2e-2)
    copy = keras.layers.Bidirectional.from_config(pair[1].get_config())
    assert isinstance(copy.forward_layer, LSTM) and isinstance(copy.backward_layer, LSTM)
    assert [w.path.split("/")[-2:] for w in pair[1].weights] == [
        w.path.split("/")[-2:] for w in pair[0].weights
    ]


def test_hoisting_is_skipped_where_keras_must_run(monkeypatch):
    dropped = LSTM(4, recurrent_dropout=0.2)
    assert not recurrent._hoisting_applies(dropped, training=True)
    assert recurrent._hoisting_applies(dropped, training=False)  # no dropout at inference
    assert not recurrent._hoisting_applies(LSTM(4, unroll=True), training=False)
    x = np.ones((2, 3, 5), "float32")
    assert GRU(4, reset_after=False)(x).shape == (2, 4)  # the reset-before form runs Keras's loop
    monkeypatch.setattr(
        tf.config, "list_logical_devices", lambda kind=None: ["GPU:0"] if kind == "GPU" else []
    )
    assert not recurrent._hoisting_applies(LSTM(4), training=False)  # cuDNN's turn
