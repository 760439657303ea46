"""A strided 2-D convolution whose input gradient is fast on XLA:CPU (DeepSpeech2's front end).

XLA:CPU computes the input gradient of a strided convolution as a
convolution over the gradient dilated by the strides, a slow path: for
DeepSpeech2's second layer (11x21 kernel, strides (1, 2), 16 channels, a
batch of 32 x 300 frames) forward and both gradients took 1.11 s, 0.28 s
with the input gradient taken from the space-to-depth form of the same
convolution (`space_to_depth_conv`: the input's stride phases stacked as
channels, the kernel's taps regrouped alike, one stride-1 convolution;
measured on an AMD EPYC, 2 cores; oneDNN under TensorFlow took 0.68 s).

`Conv2D` is `keras.layers.Conv2D` (same arguments, weights and saved files);
on JAX on a CPU its strided, undilated, channels-last convolutions take that
gradient; everywhere else (TensorFlow, GPUs) it is Keras's convolution.

Example:
    >>> conv = Conv2D(16, (11, 21), strides=(1, 2), padding="same")
    >>> y = conv(x)          # [B, T, F / 2, 16], as keras.layers.Conv2D
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_s2s.backend import is_jax


def _pads(size: int, kernel: int, stride: int, padding: str) -> tuple[int, int]:
    """(left pad, output size) of one spatial axis, as Keras's "same"/"valid" define them."""
    if padding == "valid":
        return 0, (size - kernel) // stride + 1
    out = math.ceil(size / stride)
    return max((out - 1) * stride + kernel - size, 0) // 2, out


def space_to_depth_conv(x, kernel, strides, padding: str):
    """`ops.conv(x, kernel, strides, padding)` (channels last, no dilation) as one stride-1 convolution:
    output j of an axis with stride s reads padded inputs s*j + m; with m = s*a + r that is phase r's
    input j + a times tap (a, r), so the phases become channels and the taps a stride-1 kernel."""
    (sh, sw), (kh, kw, channels, filters) = strides, kernel.shape
    batch, height, width = ops.shape(x)[0], x.shape[1], x.shape[2]
    (top, out_h), (left, out_w) = _pads(height, kh, sh, padding), _pads(width, kw, sw, padding)
    taps_h, taps_w = math.ceil(kh / sh), math.ceil(kw / sw)
    padded_h, padded_w = sh * (out_h + taps_h - 1), sw * (out_w + taps_w - 1)
    # zeros past the input meet zero taps or stand for "same" padding; rows past padded_h are unread
    x = ops.pad(x, [[0, 0], [top, max(padded_h - height - top, 0)],
                    [left, max(padded_w - width - left, 0)], [0, 0]])[:, :padded_h, :padded_w]  # fmt: skip
    x = ops.reshape(x, (batch, padded_h // sh, sh, padded_w // sw, sw, channels))
    x = ops.reshape(ops.transpose(x, (0, 1, 3, 2, 4, 5)),
                    (batch, padded_h // sh, padded_w // sw, sh * sw * channels))  # fmt: skip
    kernel = ops.pad(kernel, [[0, taps_h * sh - kh], [0, taps_w * sw - kw], [0, 0], [0, 0]])
    kernel = ops.reshape(kernel, (taps_h, sh, taps_w, sw, channels, filters))
    kernel = ops.reshape(ops.transpose(kernel, (0, 2, 1, 3, 4, 5)),
                         (taps_h, taps_w, sh * sw * channels, filters))  # fmt: skip
    return ops.conv(x, kernel, strides=1, padding="valid")


def _conv_with_fast_input_gradient(x, kernel, strides, padding: str):
    """Keras's strided convolution, its input gradient from `space_to_depth_conv` (JAX only)."""
    import jax

    def forward(x, kernel):
        return ops.conv(x, kernel, strides=strides, padding=padding)

    @jax.custom_vjp
    def conv(x, kernel):
        return forward(x, kernel)

    def conv_forward(x, kernel):
        return forward(x, kernel), (x, kernel)

    def conv_backward(saved, upstream):
        x, kernel = saved
        _, input_vjp = jax.vjp(lambda x: space_to_depth_conv(x, kernel, strides, padding), x)
        _, kernel_vjp = jax.vjp(lambda kernel: forward(x, kernel), kernel)
        return input_vjp(upstream)[0], kernel_vjp(upstream)[0]

    conv.defvjp(conv_forward, conv_backward)
    return conv(x, kernel)


def fast_input_gradient_applies(layer) -> bool:
    """Whether `layer` (a Conv2D) takes `space_to_depth_conv`'s input gradient: JAX on a CPU, strides,
    no dilation or groups, channels last."""
    if not is_jax() or max(layer.strides) == 1:
        return False
    import jax

    return (
        jax.default_backend() == "cpu"
        and tuple(layer.dilation_rate) == (1, 1)
        and layer.groups == 1
        and layer.data_format == "channels_last"
    )


@keras.saving.register_keras_serializable(package="keras_s2s")
class Conv2D(keras.layers.Conv2D):
    """`keras.layers.Conv2D` whose strided input gradient is fast on XLA:CPU (see the module)."""

    def convolution_op(self, inputs, kernel):
        if not fast_input_gradient_applies(self):
            return super().convolution_op(inputs, kernel)
        kernel = ops.convert_to_tensor(kernel)  # a jax.custom_vjp takes arrays, not variables
        return _conv_with_fast_input_gradient(inputs, kernel, tuple(self.strides), self.padding)
