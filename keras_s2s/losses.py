"""Token-level cross-entropy with label smoothing that ignores padding (id 0).

With smoothing eps the target distribution is (1 - eps) on the label plus
eps spread uniformly over the vocabulary (Szegedy et al. 2016; Vaswani et
al. 2017 use eps = 0.1). Computed in float32; padded positions are left
out of the mean, as `SparseCategoricalCrossentropy(ignore_class=0)` does: the
loss is the mean over real tokens (`token_losses` gives them one by one).

Example:
    >>> model.compile(optimizer="adam", loss=SmoothedCrossEntropy(label_smoothing=0.1))
"""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_s2s")
class SmoothedCrossEntropy(keras.losses.Loss):
    """Cross-entropy of logits [B, T, V] against ids [B, T], label-smoothed, padding ignored.

    Args:
        label_smoothing: float in [0, 1). 0 = plain cross-entropy.
    """

    def __init__(
        self, label_smoothing: float = 0.0, name: str = "smoothed_cross_entropy", **kwargs
    ):
        super().__init__(name=name, **kwargs)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        self.label_smoothing = float(label_smoothing)

    def token_losses(self, y_true, y_pred):
        """Per-token losses [B, T], 0 at padding (the hybrid strategy sums them shard by shard)."""
        y_true = ops.cast(y_true, "int32")
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)
        nll = -ops.squeeze(ops.take_along_axis(log_probs, ops.expand_dims(y_true, -1), axis=-1), -1)
        loss = nll
        if self.label_smoothing:
            loss = (1.0 - self.label_smoothing) * nll - self.label_smoothing * ops.mean(
                log_probs, axis=-1
            )
        return ops.where(ops.not_equal(y_true, 0), loss, 0.0)

    def call(self, y_true, y_pred):
        """The mean over real (non-padding) tokens, shaped [1]: Keras's reduction keeps the one value and,
        under a distribution strategy, divides it by the replicas (it skips both for a scalar)."""
        real = ops.sum(ops.cast(ops.not_equal(y_true, 0), "float32"))
        mean = ops.sum(self.token_losses(y_true, y_pred)) / ops.maximum(real, 1.0)
        return ops.reshape(mean, (1,))

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


def guided_attention_loss(alignment, text, mel_lengths, reduction_factor: int, width: float):
    """Tacotron 2's attention mass off the diagonal band, per real decoder step: the mean over steps
    t < T of sum_n a[t, n] * (1 - exp(-(n/N - t/T)^2 / 2g^2)), in [0, 1) (Tachibana et al. 2018),
    for alignments [B, steps, L] of character ids `text` [B, L] (0 = padding), mel frames
    `mel_lengths` [B], `reduction_factor` frames a step and g = `width`."""
    steps, length = ops.shape(alignment)[1], ops.shape(alignment)[2]
    text_lengths = ops.cast(ops.sum(ops.cast(ops.not_equal(text, 0), "int32"), axis=1), "float32")
    step_lengths = ops.cast((mel_lengths + reduction_factor - 1) // reduction_factor, "float32")
    t = ops.cast(ops.arange(steps), "float32")[None, :, None] / step_lengths[:, None, None]
    n = ops.cast(ops.arange(length), "float32")[None, None, :] / text_lengths[:, None, None]
    g = width
    penalty = 1.0 - ops.exp(-ops.square(n - t) / (2.0 * g * g))
    real = ops.cast((t < 1.0) & (n < 1.0), "float32")
    real_steps = ops.sum(ops.cast(t[..., 0] < 1.0, "float32"))
    return ops.sum(ops.cast(alignment, "float32") * penalty * real) / ops.maximum(real_steps, 1.0)
