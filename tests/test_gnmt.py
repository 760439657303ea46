import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny import tiny_gnmt

from keras_s2s.models import GNMT
from keras_s2s.text.tokenizer import SubwordTokenizer


def batch(vocab=64, seed=0):
    rng = np.random.default_rng(seed)
    source = rng.integers(4, vocab, (3, 9)).astype("int32")
    source[1, 6:] = 0
    target = rng.integers(4, vocab, (3, 7)).astype("int32")
    target[:, 0] = 2
    return {"source": source, "target_in": target}


def test_shapes_and_structure():
    model = tiny_gnmt(num_layers=4)
    logits = model(batch())
    assert logits.shape == (3, 7, 64) and logits.dtype == "float32"
    assert isinstance(model.encoder_layers[0], keras.layers.Bidirectional)
    assert len(model.encoder_layers) == 4 and len(model.decoder_layers) == 4
    # bidirectional first layer doubles the width; the second layer brings it back to `units`
    assert model.encoder_layers[1].cell.kernel.shape == (32, 64)


def test_residual_connections_from_the_third_layer():
    model = tiny_gnmt(num_layers=3)
    x = tf.random.normal((2, 5, 16))
    outputs = {}
    original = [layer.call for layer in model.decoder_layers]
    for i, layer in enumerate(model.decoder_layers):
        layer.call = (lambda f, i: lambda *a, **k: outputs.setdefault(i, f(*a, **k)))(  # noqa: B023
            original[i], i
        )
    y = model._stack(model.decoder_layers, x, training=False)
    # LSTMs return (out, h, c)
    np.testing.assert_allclose(y, outputs[2][0] + outputs[1][0], atol=1e-6)


def test_config_and_keras_file_round_trip(tmp_path):
    tokenizer = SubwordTokenizer.train(
        [f"word{i} and word{i + 1}" for i in range(300)], vocab_size=60
    )
    model = GNMT(
        vocab_size=tokenizer.vocab_size, num_layers=2, units=8, tokenizer=tokenizer, dropout=0.0
    )
    model.build()
    config = model.get_config()
    clone = GNMT.from_config(config)
    assert clone.get_config() == config
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    path = tmp_path / "m.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    inputs = batch(vocab=tokenizer.vocab_size)
    np.testing.assert_allclose(restored(inputs), model(inputs), atol=1e-6)
    assert restored.tokenizer.proto == tokenizer.proto
    assert restored.translate(["word3 and word4"]) == model.translate(["word3 and word4"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_layers >= 2"):
        GNMT(vocab_size=10, num_layers=1)
    tokenizer = SubwordTokenizer.train([f"w{i}" for i in range(50)], vocab_size=30)
    with pytest.raises(ValueError, match="does not match the tokenizer"):
        GNMT(vocab_size=tokenizer.vocab_size + 1, tokenizer=tokenizer)
    with pytest.raises(ValueError, match="no tokenizer"):
        tiny_gnmt().translate(["x"])
