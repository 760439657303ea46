"""Optimizers and learning-rate schedules built from a card's `training` part.

Example:
    >>> opt = build_optimizer({"optimizer": "adam", "learning_rate": 1e-3}, "mixed_float16")
    >>> type(opt).__name__
    'LossScaleOptimizer'
"""

from __future__ import annotations

import keras
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
    """The optimizer for `training`; wrapped for dynamic loss scaling under float16."""
    name = training.get("optimizer", "adam")
    kwargs = {"learning_rate": build_schedule(training)}
    if training.get("clipnorm"):
        kwargs["global_clipnorm"] = float(training["clipnorm"])
    optimizer = {
        "adam": keras.optimizers.Adam,
        "adamw": keras.optimizers.AdamW,
        "sgd": keras.optimizers.SGD,
    }[name](**kwargs)
    if policy == "mixed_float16":
        scale = training.get("loss_scale", {})
        optimizer = keras.optimizers.LossScaleOptimizer(
            optimizer,
            initial_scale=float(scale.get("initial_scale", 2.0**15)),
            dynamic_growth_steps=int(scale.get("growth_interval", 2000)),
        )
    return optimizer
