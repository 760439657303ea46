"""1-D convolution blocks of Wave2Letter+, Jasper and QuartzNet (OpenSeq2Seq; Li et al. 2019;
Kriman et al. 2020).

`ConvBlock`: `repeats` x (Conv1D -> BatchNorm -> ReLU -> Dropout), where the
last sub-block adds residual inputs (each through a 1x1 convolution and
batch norm) before its ReLU. Jasper uses one residual (the block input) or,
in the dense-residual variant, the outputs of all previous blocks;
Wave2Letter+ uses none. With `separable=True` each convolution is
QuartzNet's time-channel separable one: a depthwise convolution over time
(one kernel per channel) then a 1x1 convolution across channels
(`keras.layers.SeparableConv1D`), k + C weights per output channel instead
of k x C.

Example:
    >>> block = ConvBlock(256, kernel_size=11, repeats=5, dropout=0.2, num_residuals=1)
    >>> y = block(x, residuals=[x])
    >>> ConvBlock(256, kernel_size=33, repeats=5, num_residuals=1, separable=True)   # QuartzNet's
"""

from __future__ import annotations

import keras

from keras_s2s.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="keras_s2s")
class ConvBlock(keras.layers.Layer):
    """Args:
    filters, kernel_size: int. Convolution size.
    repeats: int. Conv-BN-ReLU-dropout sub-blocks.
    dropout: float.
    strides, dilation: int. Of the first convolution (a strided block's residual 1x1
        convolutions take the same stride, so residual and output frames line up).
    num_residuals: int. Residual inputs added in the last sub-block (0 = none).
    separable: bool. Time-channel separable convolutions (QuartzNet) instead of full ones.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: int,
        repeats: int = 1,
        dropout: float = 0.0,
        strides: int = 1,
        dilation: int = 1,
        num_residuals: int = 0,
        separable: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.filters, self.kernel_size, self.repeats, self.dropout = (
            filters,
            kernel_size,
            repeats,
            dropout,
        )
        self.strides, self.dilation, self.num_residuals = strides, dilation, num_residuals
        self.separable = separable
        policy = self.dtype_policy
        convolution = keras.layers.SeparableConv1D if separable else keras.layers.Conv1D
        self.convs = [
            convolution(
                filters,
                kernel_size,
                strides=strides if i == 0 else 1,
                dilation_rate=dilation,
                padding="same",
                use_bias=False,
                dtype=policy,
                name=f"conv_{i}",
            )
            for i in range(repeats)
        ]
        self.norms = [
            keras.layers.BatchNormalization(dtype=policy, name=f"norm_{i}") for i in range(repeats)
        ]
        self.residual_convs = [
            keras.layers.Conv1D(
                filters, 1, strides=strides, use_bias=False, dtype=policy, name=f"residual_{i}"
            )
            for i in range(num_residuals)
        ]
        self.residual_norms = [
            keras.layers.BatchNormalization(dtype=policy, name=f"residual_norm_{i}")
            for i in range(num_residuals)
        ]
        self.dropout_layer = Dropout(dropout, dtype=policy)

    def call(self, x, residuals=(), training=False, keep=None):
        """`keep` [B, T, 1]: 1 at real frames; padded frames are zeroed after every sub-block, so that
        batch norm's shift there never reaches real frames through the next convolution."""
        if len(residuals) != self.num_residuals:
            raise ValueError(
                f"{self.name} expects {self.num_residuals} residual input(s), got {len(residuals)}"
            )
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            x = norm(conv(x), training=training)
            if i == self.repeats - 1:
                for res, (res_conv, res_norm) in zip(
                    residuals, zip(self.residual_convs, self.residual_norms)
                ):
                    x = x + res_norm(res_conv(res), training=training)
            x = self.dropout_layer(keras.ops.relu(x), training=training)
            if keep is not None:
                x = x * keep
        return x

    def get_config(self):
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "repeats": self.repeats,
            "dropout": self.dropout,
            "strides": self.strides,
            "dilation": self.dilation,
            "num_residuals": self.num_residuals,
            "separable": self.separable,
        }
