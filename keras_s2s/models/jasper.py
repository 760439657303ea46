"""Jasper (Li et al. 2019), Wave2Letter+ (OpenSeq2Seq) and QuartzNet (Kriman et al. 2020): 1-D
convolutional CTC models.

All three are a strided prologue convolution, a stack of `ConvBlock`s and an
epilogue (a dilated convolution, a 1x1 convolution, then a 1x1 convolution to
the characters). Jasper's blocks repeat their sub-block `repeats` times with
a residual connection from the block input or, with `dense_residual`, from
every previous block's output (Jasper DR); Wave2Letter+ is the same stack
with one convolution per block and no residuals; QuartzNet is Jasper with
time-channel separable convolutions (`separable`), residuals from the block
input and much longer kernels for a fraction of the weights and FLOPs.
`block_strides` reduce time further inside the stack (Citrinet's 4x-8x), so
every later block costs a half or a quarter as much.

Example:
    >>> model = Jasper(vocab_size=29, num_features=64, channels=[64, 64], kernels=[11, 13], dropouts=[0.1, 0.1])
    >>> logits = model({"features": x, "feature_lengths": lengths})     # [B, ceil(T / 2), 29] float32
    >>> QuartzNet(channels=[256] * 5, kernels=[33, 39, 51, 63, 75], dropouts=[0.0] * 5,
    ...           block_strides=[2, 1, 1, 1, 1])                          # [B, ceil(T / 4), 29]
"""

from __future__ import annotations

import math

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
        separable: bool. Time-channel separable convolutions in the prologue, the blocks and the
            dilated epilogue convolution (QuartzNet).
        block_strides: list. Each block's stride over time (empty: none); the model's time
            reduction is `stride` times their product. Not with dense residuals (every earlier
            block's output would need its own stride).
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
        separable: bool = False,
        block_strides: list = [],  # noqa: B006
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
        block_strides = list(block_strides) or [1] * len(channels)
        if len(block_strides) != len(channels) or not all(
            isinstance(s, int) and s >= 1 for s in block_strides
        ):
            raise ValueError(
                f"block_strides needs one stride >= 1 per block ({len(channels)}), got {block_strides}"
            )
        if residual == "dense" and max(block_strides) > 1:
            raise ValueError(
                "block_strides > 1 need residual 'block' or 'none': dense residuals add every earlier "
                "block's output, which a stride leaves longer"
            )
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
            separable=separable,
            block_strides=block_strides,
        )
        # the input frames each stage's one frame stands for: the prologue's, then each block's
        self.reductions = [stride * math.prod(block_strides[:i]) for i in range(len(channels) + 1)]
        self.time_reduction = stride * math.prod(block_strides)
        policy = self.dtype_policy
        self.prologue = ConvBlock(
            prologue_channels,
            prologue_kernel,
            strides=stride,
            dropout=prologue_dropout,
            separable=separable,
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
                strides=s,
                num_residuals=residuals(i),
                separable=separable,
                dtype=policy,
                name=f"block_{i}",
            )
            for i, (c, k, d, s) in enumerate(zip(channels, kernels, dropouts, block_strides))
        ]
        self.epilogue = [
            ConvBlock(
                epilogue_channels[0],
                epilogue_kernel,
                dilation=epilogue_dilation,
                dropout=epilogue_dropout,
                separable=separable,
                dtype=policy,
                name="epilogue_0",
            ),
            ConvBlock(
                epilogue_channels[1], 1, dropout=epilogue_dropout, dtype=policy, name="epilogue_1"
            ),
        ]
        self.output_conv = keras.layers.Conv1D(vocab_size, 1, dtype=policy, name="output")

    def call(self, inputs, training=False):
        lengths = inputs["feature_lengths"]
        x = self.prologue(inputs["features"], training=training)
        # padded frames are zeroed after every sub-block: batch norm shifts them away from zero, and the
        # next convolution would carry them into real frames, making outputs depend on the padding
        keep = self.frame_mask(lengths, ops.shape(x)[1], x.dtype, self.reductions[0])
        outputs = [x * keep]  # the prologue output, then each block's
        for block, reduction in zip(self.blocks, self.reductions[1:]):
            residual = {"dense": outputs, "block": outputs[-1:], "none": []}[self.args["residual"]]
            if block.strides > 1:
                frames = (ops.shape(outputs[-1])[1] + block.strides - 1) // block.strides
                keep = self.frame_mask(lengths, frames, x.dtype, reduction)
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
            vocabulary=vocabulary,
            extractor=extractor,
            **kwargs,
        )


QUARTZNET_CHANNELS = [256] * 6 + [512] * 9
QUARTZNET_KERNELS = [33] * 3 + [39] * 3 + [51] * 3 + [63] * 3 + [75] * 3


@keras.saving.register_keras_serializable(package="keras_s2s")
class QuartzNet(Jasper):
    """QuartzNet B x R (Kriman et al. 2020; default 15x5, 18.9 M weights): Jasper's block stack with
    time-channel separable convolutions, a residual from each block's input, kernels of 33-87.

    Args: as `Jasper`'s; `separable` is always on, `residual` is `block` (or `none`).
    """

    def __init__(
        self,
        vocab_size: int = 29,
        num_features: int = 64,
        prologue_channels: int = 256,
        prologue_kernel: int = 33,
        stride: int = 2,
        prologue_dropout: float = 0.0,
        channels: list = QUARTZNET_CHANNELS,
        kernels: list = QUARTZNET_KERNELS,
        dropouts: list = [0.0] * 15,  # noqa: B006
        repeats: int = 5,
        residual: str = "block",
        epilogue_channels: list = [512, 1024],  # noqa: B006
        epilogue_kernel: int = 87,
        epilogue_dilation: int = 2,
        epilogue_dropout: float = 0.0,
        block_strides: list = [],  # noqa: B006
        vocabulary=None,
        extractor=None,
        **kwargs,
    ):
        kwargs.pop("separable", None)  # from get_config: always on
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
            separable=True,
            block_strides=block_strides,
            vocabulary=vocabulary,
            extractor=extractor,
            **kwargs,
        )
