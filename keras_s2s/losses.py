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
