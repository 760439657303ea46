"""Every layer keras_s2s registers round-trips through `get_config` (tests/layer_testing.py)."""

import keras
import numpy as np
import pytest
from layer_testing import run_layer_test

from keras_s2s.layers.attention import NormalizedBahdanauAttention
from keras_s2s.layers.conv_asr import ConvBlock
from keras_s2s.layers.convolution import WeightNormConv1D, WeightNormDense
from keras_s2s.layers.dropout import Dropout
from keras_s2s.layers.recurrent import GRU, LSTM
from keras_s2s.layers.strided_conv import Conv2D
from keras_s2s.layers.tacotron import ConvStack, LocationSensitiveAttention, Prenet
from keras_s2s.layers.transformer import (
    Float32LayerNorm,
    MultiHeadAttention,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)

rng = np.random.default_rng(0)
x = rng.normal(size=(2, 5, 8)).astype("float32")
memory = rng.normal(size=(2, 6, 8)).astype("float32")
memory_mask = np.array([[True] * 6, [True] * 4 + [False] * 2])


def _location_attention(layer):
    if not layer.built:
        layer.build(8, 8)
    weights = np.full((2, 6), 1 / 6, "float32")
    return layer(x[:, 0], layer.keys(memory), memory, weights, weights, memory_mask)


def _decoder_block(layer):
    return layer(x, layer.cross_attention.project_kv(memory), memory_mask, training=False)


CASES = {
    NormalizedBahdanauAttention: ({"units": 4}, lambda layer: layer(x, memory, memory_mask)),
    ConvBlock: (
        {"filters": 4, "kernel_size": 3, "repeats": 2, "dropout": 0.1, "num_residuals": 1},
        lambda layer: layer(x, residuals=(x,), training=False),
    ),
    WeightNormConv1D: ({"units": 6, "kernel_size": 3, "causal": True}, lambda layer: layer(x)),
    WeightNormDense: ({"units": 3}, lambda layer: layer(x)),
    Dropout: ({"rate": 0.3}, lambda layer: layer(x, training=False)),
    Conv2D: (
        {"filters": 3, "kernel_size": (3, 5), "strides": (1, 2), "padding": "same"},
        lambda layer: layer(x[..., None]),
    ),
    LSTM: ({"units": 4, "return_sequences": True}, lambda layer: layer(x)),
    GRU: ({"units": 4, "return_sequences": True}, lambda layer: layer(x)),
    ConvStack: (
        {"channels": 4, "kernel_size": 3, "layers": 2},
        lambda layer: layer(x, training=False),
    ),
    Prenet: (
        {"units": (6, 4), "dropout": 0.5, "always_dropout": False},
        lambda layer: layer(x, training=False),
    ),
    LocationSensitiveAttention: ({"units": 4, "filters": 2, "kernel_size": 3}, _location_attention),
    Float32LayerNorm: ({"epsilon": 1e-6}, lambda layer: layer(x)),
    MultiHeadAttention: (
        {"d_model": 8, "num_heads": 2},
        lambda layer: layer(x, *layer.project_kv(memory), memory_mask[:, None, :]),
    ),
    TransformerEncoderBlock: (
        {"d_model": 8, "num_heads": 2, "ffn_dim": 12, "dropout": 0.0},
        lambda layer: layer(x, padding_mask=np.ones((2, 5), bool), training=False),
    ),
    TransformerDecoderBlock: (
        {"d_model": 8, "num_heads": 2, "ffn_dim": 12, "dropout": 0.0},
        _decoder_block,
    ),
}


@pytest.mark.parametrize("cls", list(CASES), ids=lambda cls: cls.__name__)
def test_layer_round_trips_through_its_config(cls):
    keras.utils.set_random_seed(0)
    init_kwargs, call = CASES[cls]
    outputs = run_layer_test(cls, init_kwargs, call)
    assert all(np.isfinite(o).all() for o in outputs)


def test_every_registered_layer_has_a_case():
    import keras_s2s.models  # noqa: F401  registers every layer the zoo uses

    registered = {
        cls
        for name, cls in keras.saving.get_custom_objects().items()
        if name.startswith("keras_s2s>")
        and issubclass(cls, keras.layers.Layer)
        and not issubclass(cls, keras.Model)
    }
    assert registered == set(CASES), f"add a round-trip case for {registered - set(CASES)}"
