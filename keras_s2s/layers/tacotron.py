"""Building blocks of Tacotron 2 (Shen et al. 2018): conv stacks, pre-net, location-sensitive attention.

Example:
    >>> attention = LocationSensitiveAttention(units=128, filters=32, kernel_size=31)
    >>> keys = attention.keys(memory)                       # once per utterance
    >>> context, weights = attention(query, keys, memory, weights, cumulative, mask)
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from keras_s2s.layers.attention import masked_softmax
from keras_s2s.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="keras_s2s")
class ConvStack(keras.layers.Layer):
    """`layers` x (Conv1D 'same' -> BatchNorm -> activation -> Dropout); the last layer's
    channels and activation may differ (the post-net ends linear with `num_mels` channels).

    `keep` [B, T, 1] zeroes padded positions of the input and after every
    layer, so real positions never see padding through a convolution.
    """

    def __init__(
        self,
        channels: int,
        kernel_size: int = 5,
        layers: int = 3,
        activation: str = "relu",
        dropout: float = 0.5,
        last_channels: int | None = None,
        last_activation: str | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.channels, self.kernel_size, self.layers, self.activation = (
            channels,
            kernel_size,
            layers,
            activation,
        )
        self.dropout, self.last_channels, self.last_activation = (
            dropout,
            last_channels,
            last_activation,
        )
        policy = self.dtype_policy
        sizes = [channels] * (layers - 1) + [last_channels or channels]
        self.convs = [
            keras.layers.Conv1D(size, kernel_size, padding="same", dtype=policy, name=f"conv_{i}")
            for i, size in enumerate(sizes)
        ]
        self.norms = [
            keras.layers.BatchNormalization(dtype=policy, name=f"norm_{i}") for i in range(layers)
        ]
        self.dropout_layer = Dropout(dropout, dtype=policy)

    def build(self, input_shape):
        for conv, norm, channels in zip(
            self.convs, self.norms, [input_shape[-1]] + [c.filters for c in self.convs]
        ):
            conv.build((None, None, channels))
            norm.build((None, None, conv.filters))
        self.built = True

    def call(self, x, training=False, keep=None):
        if keep is not None:
            x = x * ops.cast(keep, x.dtype)
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            last = i == self.layers - 1
            x = norm(conv(x), training=training)
            activation = (
                self.last_activation if last and self.last_channels else self.activation
            ) or "linear"
            x = self.dropout_layer(keras.activations.get(activation)(x), training=training)
            if keep is not None:
                x = x * ops.cast(keep, x.dtype)
        return x

    def get_config(self):
        return {
            **super().get_config(),
            "channels": self.channels,
            "kernel_size": self.kernel_size,
            "layers": self.layers,
            "activation": self.activation,
            "dropout": self.dropout,
            "last_channels": self.last_channels,
            "last_activation": self.last_activation,
        }


@keras.saving.register_keras_serializable(package="keras_s2s")
class Prenet(keras.layers.Layer):
    """Fully connected ReLU layers with dropout that stays on at inference (`always_dropout`),
    which Tacotron 2 needs as its only source of output variation."""

    def __init__(
        self, units=(256, 256), dropout: float = 0.5, always_dropout: bool = True, **kwargs
    ):
        super().__init__(**kwargs)
        self.units, self.dropout, self.always_dropout = list(units), dropout, always_dropout
        self.dense = [
            keras.layers.Dense(u, activation="relu", dtype=self.dtype_policy, name=f"dense_{i}")
            for i, u in enumerate(self.units)
        ]
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        size = input_shape[-1]
        for layer in self.dense:
            layer.build((None, size))
            size = layer.units
        self.built = True

    def call(self, x, training=False, masks=None):
        """`masks`: one dropout mask per layer (0 or 1 / (1 - dropout), drawn by the caller, e.g.
        before a compiled loop); default this layer's own draws."""
        for index, layer in enumerate(self.dense):
            if masks is not None:
                x = layer(x) * masks[index]
            else:
                x = self.dropout_layer(layer(x), training=training or self.always_dropout)
        return x

    def draw_masks(self, leading_shape, rng) -> list:
        """NumPy dropout masks [*leading_shape, units] for each layer (ones without dropout)."""
        keep = 1.0 - self.dropout
        masks = []
        for units in self.units:
            shape = (*leading_shape, units)
            if self.dropout <= 0:
                masks.append(np.ones(shape, np.float32))
            else:
                masks.append((rng.random(shape) < keep).astype(np.float32) / keep)
        return masks

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "dropout": self.dropout,
            "always_dropout": self.always_dropout,
        }


@keras.saving.register_keras_serializable(package="keras_s2s")
class LocationSensitiveAttention(keras.layers.Layer):
    """Additive attention whose energies also see the previous and cumulative weights
    (Chorowski et al. 2015), through `filters` convolution kernels of `kernel_size`.

    e_j = v . tanh(W q + V h_j + U f_j),  f = conv([w_prev, w_cumulative]);
    the softmax is taken in float32 over unmasked inputs.
    """

    def __init__(self, units: int = 128, filters: int = 32, kernel_size: int = 31, **kwargs):
        super().__init__(**kwargs)
        self.units, self.filters, self.kernel_size = units, filters, kernel_size
        policy = self.dtype_policy
        self.query_layer = keras.layers.Dense(units, use_bias=False, dtype=policy, name="query")
        self.memory_layer = keras.layers.Dense(units, use_bias=False, dtype=policy, name="memory")
        self.location_conv = keras.layers.Conv1D(
            filters, kernel_size, padding="same", use_bias=False, dtype=policy, name="location_conv"
        )
        self.location_layer = keras.layers.Dense(
            units, use_bias=False, dtype=policy, name="location"
        )
        self.energy_layer = keras.layers.Dense(1, dtype=policy, name="energy")

    def build(self, query_size: int, memory_size: int):
        self.query_layer.build((None, query_size))
        self.memory_layer.build((None, None, memory_size))
        self.location_conv.build((None, None, 2))
        self.location_layer.build((None, None, self.filters))
        self.energy_layer.build((None, None, self.units))
        self.built = True

    def keys(self, memory):
        """V h: the memory's part of the energies, computed once per utterance."""
        return self.memory_layer(memory)

    def call(self, query, keys, memory, weights, cumulative, mask):
        """Context [B, D] and float32 weights [B, L] for `query` [B, Q]; `mask` [B, L] marks real inputs."""
        location = self.location_layer(
            self.location_conv(ops.cast(ops.stack([weights, cumulative], -1), keys.dtype))
        )
        energies = self.energy_layer(
            ops.tanh(self.query_layer(query)[:, None, :] + keys + location)
        )[..., 0]
        weights = masked_softmax(energies, mask)
        context = ops.einsum("bl,bld->bd", ops.cast(weights, memory.dtype), memory)
        return context, weights

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "filters": self.filters,
            "kernel_size": self.kernel_size,
        }
