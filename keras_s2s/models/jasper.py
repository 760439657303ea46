"""Jasper (Li et al. 2019) and Wave2Letter+ (OpenSeq2Seq): 1-D convolutional CTC models.

Both are a strided prologue convolution, a stack of `ConvBlock`s and an
epilogue (a dilated convolution, a 1x1 convolution, then a 1x1 convolution to
the characters). Jasper's blocks repeat their sub-block `repeats` times with
a residual connection from the block input or, with `dense_residual`, from
every previous block's output (Jasper DR); Wave2Letter+ is the same stack
with one convolution per block and no residuals.

Example:
    >>> model = Jasper(vocab_size=29, num_features=64, channels=[64, 64], kernels=[11, 13], dropouts=[0.1, 0.1])
    >>> logits = model({"features": x, "feature_lengths": lengths})     # [B, ceil(T / 2), 29] float32
"""

from __future__ import annotations

import keras
from keras import ops

from keras_s2s.layers.conv_asr import ConvBlock
from keras_s2s.models.speech_to_text import SpeechToText

JASPER_CHANNELS = [256, 256, 384, 384, 512, 512, 640, 640, 768, 768]
JASPER_KERNELS = [11, 11, 13, 13, 17, 17, 21, 21, 25, 25]
JASPER_DROPOUTS = [0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3, 0.3, 0.4, 0.4]


@keras.saving.register_keras_serializable(package="keras_s2s")
class Jasper(SpeechToText):
    """Jasper B x R (default 10x5, dense residual).

    Args:
        vocab_size, num_features, vocabulary, extractor: see `SpeechToText`.
        prologue_channels, prologue_kernel, stride: the first convolution (stride = time reduction).
        channels, kernels, dropouts: list. One entry per block.
        repeats: int. Sub-blocks per block (R).
        residual: str. `dense` (Jasper DR), `block` (from the block input), or `none`.
        epilogue_channels: list. Channels of the dilated and the 1x1 epilogue convolutions.
        epilogue_kernel, epilogue_dilation, epilogue_dropout: of the epilogue.
    """

    def __init__(
        self,
        vocab_size: int = 29,
        num_features: int = 64,
        prologue_channels: int = 256,
        prologue_kernel: int = 11,
        stride: int = 2,
        prologue_dropout: float = 0.2,
        channels: list = JASPER_CHANNELS,
        kernels: list = JASPER_KERNELS,
        dropouts: list = JASPER_DROPOUTS,
        repeats: int = 5,
        residual: str = "dense",
        epilogue_channels: list = [896, 1024],  # noqa: B006
        epilogue_kernel: int = 29,
        epilogue_dilation: int = 2,
        epilogue_dropout: float = 0.4,
        vocabulary=None,
        extractor=None,
        **kwargs,
    ):
        super().__init__(
            vocab_size=vocab_size,
            num_features=num_features,
            vocabulary=vocabulary,
            extractor=extractor,
            **kwargs,
        )
        if not len(channels) == len(kernels) == len(dropouts):
            raise ValueError(
                f"channels, kernels and dropouts need one entry per block; got {len(channels)}, "
                f"{len(kernels)}, {len(dropouts)}"
            )
        if residual not in ("dense", "block", "none"):
            raise ValueError(f"residual must be 'dense', 'block' or 'none', got {residual!r}")
        if len(epilogue_channels) != 2:
            raise ValueError(
                f"epilogue_channels needs 2 entries (dilated conv, 1x1 conv), got {epilogue_channels}"
            )
        self.args = dict(
            prologue_channels=prologue_channels,
            prologue_kernel=prologue_kernel,
            stride=stride,
            prologue_dropout=prologue_dropout,
            channels=list(channels),
            kernels=list(kernels),
            dropouts=list(dropouts),
            repeats=repeats,
            residual=residual,
            epilogue_channels=list(epilogue_channels),
            epilogue_kernel=epilogue_kernel,
            epilogue_dilation=epilogue_dilation,
            epilogue_dropout=epilogue_dropout,
        )
        self.time_reduction = stride
        policy = self.dtype_policy
        self.prologue = ConvBlock(
            prologue_channels,
            prologue_kernel,
            strides=stride,
            dropout=prologue_dropout,
            dtype=policy,
            name="prologue",
        )
        residuals = {"dense": lambda i: i + 1, "block": lambda i: 1, "none": lambda i: 0}[residual]
        self.blocks = [
            ConvBlock(
                c,
                k,
                repeats=repeats,
                dropout=d,
                num_residuals=residuals(i),
                dtype=policy,
                name=f"block_{i}",
            )
            for i, (c, k, d) in enumerate(zip(channels, kernels, dropouts))
        ]
        self.epilogue = [
            ConvBlock(
                epilogue_channels[0],
                epilogue_kernel,
                dilation=epilogue_dilation,
                dropout=epilogue_dropout,
                dtype=policy,
                name="epilogue_0",
            ),
            ConvBlock(
                epilogue_channels[1], 1, dropout=epilogue_dropout, dtype=policy, name="epilogue_1"
            ),
        ]
        self.output_conv = keras.layers.Conv1D(vocab_size, 1, dtype=policy, name="output")

    def call(self, inputs, training=False):
        x = self.prologue(inputs["features"], training=training)
        # padded frames are zeroed after every sub-block: batch norm shifts them away from zero, and the
        # next convolution would carry them into real frames, making outputs depend on the padding
        keep = self.frame_mask(inputs["feature_lengths"], ops.shape(x)[1], x.dtype)
        outputs = [x * keep]  # the prologue output, then each block's
        for block in self.blocks:
            residual = {"dense": outputs, "block": outputs[-1:], "none": []}[self.args["residual"]]
            outputs.append(block(outputs[-1], residuals=residual, training=training, keep=keep))
        x = outputs[-1]
        for layer in self.epilogue:
            x = layer(x, training=training, keep=keep)
        return ops.cast(self.output_conv(x), "float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                key: list(value) if isinstance(value, (list, tuple)) else value
                for key, value in self.args.items()
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_s2s")
class Wave2Letter(Jasper):
    """Wave2Letter+ (OpenSeq2Seq `w2l_plus_large`): 15 convolutions of growing width and kernel, no residuals."""

    def __init__(
        self,
        vocab_size: int = 29,
        num_features: int = 64,
        prologue_channels: int = 256,
        prologue_kernel: int = 11,
        stride: int = 2,
        prologue_dropout: float = 0.2,
        channels: list = [256] * 3 + [384] * 3 + [512] * 3 + [640] * 3 + [768] * 3,  # noqa: B006
        kernels: list = [11] * 3 + [13] * 3 + [17] * 3 + [21] * 3 + [25] * 3,  # noqa: B006
        dropouts: list = [0.2] * 6 + [0.3] * 6 + [0.4] * 3,  # noqa: B006
        repeats: int = 1,
        residual: str = "none",
        epilogue_channels: list = [896, 1024],  # noqa: B006
        epilogue_kernel: int = 29,
        epilogue_dilation: int = 2,
        epilogue_dropout: float = 0.4,
        vocabulary=None,
        extractor=None,
        **kwargs,
    ):
        super().__init__(
            vocab_size,
            num_features,
            prologue_channels,
            prologue_kernel,
            stride,
            prologue_dropout,
            channels,
            kernels,
            dropouts,
            repeats,
            residual,
            epilogue_channels,
            epilogue_kernel,
            epilogue_dilation,
            epilogue_dropout,
            vocabulary,
            extractor,
            **kwargs,
        )
