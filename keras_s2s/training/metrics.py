"""Metrics that ignore padding (id 0)."""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_s2s")
class MaskedAccuracy(keras.metrics.Mean):
    """Token accuracy over non-padding labels.

    Example:
        >>> model.compile(..., metrics=[MaskedAccuracy()])
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        correct = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), y_true), "float32")
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, "float32")
        return super().update_state(correct, sample_weight=mask)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
