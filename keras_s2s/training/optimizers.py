"""Optimizers and learning-rate schedules built from a card's `training` part.

Gradient accumulation (`accumulate_steps: k`, OpenSeq2Seq's `iter_size`)
uses Keras's `gradient_accumulation_steps`: each update applies the mean of
k batches' gradients, which for equal-size batches is the gradient of one
k-times larger batch. Adam's bias correction already counts updates; the
learning-rate schedule is made to count updates too (`PerUpdateSchedule`),
so one update with accumulation is the same as one update on the larger batch.

Example:
    >>> opt = build_optimizer({"optimizer": "adam", "learning_rate": 1e-3}, "mixed_float16")
    >>> type(opt).__name__
    'LossScaleOptimizer'
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="keras_s2s")
class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `learning_rate`, then exponential or inverse-sqrt decay.

    Args:
        learning_rate: float. Peak rate, reached after `warmup_steps`.
        warmup_steps: int. Steps of linear warmup (0 for none).
        decay: str. `exponential` (rate * decay_rate ** (step / decay_steps)
            after warmup) or `inverse_sqrt` (rate * sqrt(warmup / step)).
        decay_steps: int. Steps per `decay_rate` factor (exponential only).
        decay_rate: float. Factor per `decay_steps` (exponential only).
    """

    def __init__(self, learning_rate, warmup_steps=0, decay="exponential", decay_steps=1000, decay_rate=1.0):
        self.learning_rate = float(learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.decay = decay
        self.decay_steps = int(decay_steps)
        self.decay_rate = float(decay_rate)

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        warmup = float(max(self.warmup_steps, 1))
        ramp = ops.minimum(step / warmup, 1.0)
        after = ops.maximum(step - self.warmup_steps, 0.0)
        if self.decay == "inverse_sqrt":
            decayed = ops.sqrt(warmup / ops.maximum(step, warmup))
        else:
            decayed = ops.power(self.decay_rate, after / float(self.decay_steps))
        return self.learning_rate * ramp * decayed

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "warmup_steps": self.warmup_steps,
            "decay": self.decay,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
        }


@keras.saving.register_keras_serializable(package="keras_s2s")
class PerUpdateSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`schedule` evaluated at the update count (batch steps // `accumulate_steps`)."""

    def __init__(self, schedule, accumulate_steps: int):
        if isinstance(schedule, dict):
            schedule = keras.saving.deserialize_keras_object(schedule)
        self.schedule, self.accumulate_steps = schedule, int(accumulate_steps)

    def __call__(self, step):
        return self.schedule(ops.floor_divide(step, self.accumulate_steps))

    def get_config(self):
        return {"schedule": keras.saving.serialize_keras_object(self.schedule),
                "accumulate_steps": self.accumulate_steps}


def sum_duplicate_rows(gradient):
    """A sparse gradient (`tf.IndexedSlices`, e.g. of an embedding) with the rows of repeated indices summed.

    Keras 3's Adam squares a sparse gradient slice by slice, so a token that
    occurs twice in a batch gets (g1^2 + g2^2) in its second moment instead of
    (g1 + g2)^2 and a larger step than dense Adam would take (measured: 0.13
    instead of 0.1 on the first step, learning rate 0.1). With unique rows, sparse and dense
    updates agree.
    """
    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    rows, positions = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, positions, tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, gradient.dense_shape)


class SummedSparseGradients:
    """Optimizer mixin: `sum_duplicate_rows` on every gradient before the update."""

    def apply(self, grads, trainable_variables=None):
        return super().apply([sum_duplicate_rows(g) for g in grads], trainable_variables)


@keras.saving.register_keras_serializable(package="keras_s2s")
class Adam(SummedSparseGradients, keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose sparse updates equal dense ones (see `sum_duplicate_rows`)."""


@keras.saving.register_keras_serializable(package="keras_s2s")
class AdamW(SummedSparseGradients, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` whose sparse updates equal dense ones (see `sum_duplicate_rows`)."""


def build_schedule(training: dict):
    """The learning rate (a float or a schedule) described by `training`."""
    rate = float(training.get("learning_rate", 1e-3))
    kind = training.get("schedule", "constant")
    if kind == "constant":
        return rate
    if kind == "exponential":
        return keras.optimizers.schedules.ExponentialDecay(
            rate, training.get("decay_steps", 1000), training.get("decay_rate", 0.5)
        )
    decay = "inverse_sqrt" if kind == "inverse_sqrt" else "exponential"
    return WarmupSchedule(
        rate,
        warmup_steps=training.get("warmup_steps", 1000),
        decay=decay,
        decay_steps=training.get("decay_steps", 1000),
        decay_rate=training.get("decay_rate", 0.5),
    )


def build_optimizer(training: dict, policy: str):
    """The optimizer for `training`; wrapped for loss scaling under float16 (`training.loss_scale`:
    algorithm dynamic | static | logmax, see `loss_scale.py`)."""
    from keras_s2s.training.loss_scale import build_loss_scale_optimizer

    name = training.get("optimizer", "adam")
    schedule = build_schedule(training)
    accumulate = int(training.get("accumulate_steps", 1))
    if accumulate < 1:
        raise ValueError(f"accumulate_steps must be at least 1, got {accumulate}")
    kwargs = {"learning_rate": schedule}
    if accumulate > 1:
        kwargs["gradient_accumulation_steps"] = accumulate
        if not isinstance(schedule, float):
            kwargs["learning_rate"] = PerUpdateSchedule(schedule, accumulate)
    if training.get("clipnorm"):
        kwargs["global_clipnorm"] = float(training["clipnorm"])
    optimizer = {"adam": Adam, "adamw": AdamW, "sgd": keras.optimizers.SGD}[name](**kwargs)
    if policy == "mixed_float16":
        optimizer = build_loss_scale_optimizer(optimizer, training.get("loss_scale", {}))
    return optimizer
