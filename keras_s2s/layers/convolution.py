"""Weight-normalized dense and 1-D convolution layers (Salimans & Kingma 2016), for ConvS2S.

The effective kernel is w = g * v / |v| (norm over all axes but the output
axis). Both weights stay float32 (master weights); the norm is computed in
float32 and the matmul / convolution in the compute dtype.

Example:
    >>> conv = WeightNormConv1D(2 * 256, kernel_size=3, causal=True)
    >>> y = conv(x)                      # [B, T, 512], y[:, t] sees x[:, :t + 1] only
    >>> y_t = conv.step(window)          # window = the last 3 inputs [B, 3, C]
"""

from __future__ import annotations

import math

import keras
from keras import ops


class _WeightNorm(keras.layers.Layer):
    """Holds v, g and bias; `kernel()` is the normalized kernel in the compute dtype."""

    def __init__(self, units: int, dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dropout = dropout  # only sets the initial scale, as in fairseq

    def _make_weights(self, shape, fan_in: int, gain: float):
        std = math.sqrt(gain * (1.0 - self.dropout) / fan_in)
        self.v = self.add_weight(
            name="v",
            shape=shape,
            initializer=keras.initializers.RandomNormal(stddev=std),
            autocast=False,
        )
        initial_norm = ops.sqrt(ops.sum(ops.square(self.v), axis=tuple(range(len(shape) - 1))))
        self.g = self.add_weight(
            name="g",
            shape=(self.units,),
            initializer=lambda *a, **k: ops.convert_to_tensor(initial_norm),
            autocast=False,
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.units,), initializer="zeros", autocast=False
        )

    def kernel(self):
        v = ops.convert_to_tensor(self.v)
        norm = ops.sqrt(ops.sum(ops.square(v), axis=tuple(range(len(v.shape) - 1))))
        return ops.cast(v * (self.g / norm), self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "dropout": self.dropout}


@keras.saving.register_keras_serializable(package="keras_s2s")
class WeightNormDense(_WeightNorm):
    """Dense layer with weight normalization.

    Args:
        units: int. Output size.
        dropout: float. Dropout applied before this layer (scales the initialization).
    """

    def build(self, input_shape):
        self._make_weights((input_shape[-1], self.units), input_shape[-1], gain=1.0)

    def call(self, x):
        return ops.matmul(x, self.kernel()) + ops.cast(self.bias, self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_s2s")
class WeightNormConv1D(_WeightNorm):
    """1-D convolution with weight normalization; `causal=True` pads on the left only.

    Args:
        units: int. Output channels.
        kernel_size: int. Width of the window.
        causal: bool. Output t sees inputs up to t only (decoder); else centered (encoder).
        dropout: float. Dropout applied before this layer (scales the initialization).
    """

    def __init__(
        self, units: int, kernel_size: int, causal: bool = False, dropout: float = 0.0, **kwargs
    ):
        super().__init__(units, dropout, **kwargs)
        if not causal and kernel_size % 2 == 0:
            raise ValueError(f"a centered convolution needs an odd kernel_size, got {kernel_size}")
        self.kernel_size, self.causal = kernel_size, causal

    def build(self, input_shape):
        channels = input_shape[-1]
        self._make_weights(
            (self.kernel_size, channels, self.units), self.kernel_size * channels, gain=4.0
        )

    def call(self, x):
        left = self.kernel_size - 1 if self.causal else (self.kernel_size - 1) // 2
        right = 0 if self.causal else (self.kernel_size - 1) // 2
        x = ops.pad(x, [[0, 0], [left, right], [0, 0]])
        return ops.conv(x, self.kernel(), padding="valid") + ops.cast(self.bias, self.compute_dtype)

    def step(self, window):
        """Output [B, units] of one causal step from the last `kernel_size` inputs [B, k, C]."""
        return ops.einsum("bkc,kcd->bd", window, self.kernel()) + ops.cast(
            self.bias, self.compute_dtype
        )

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size, "causal": self.causal}
