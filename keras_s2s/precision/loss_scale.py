"""Loss scaling for float16 training: Keras's dynamic rule, a static scale, and OpenSeq2Seq's LogMax.

All three wrap the optimizer the same way (`keras.optimizers.LossScaleOptimizer`:
the loss is multiplied by the scale, gradients divided by it, a step whose
gradients are not finite is skipped) and differ in how the scale moves:

- `dynamic` (Keras's rule): halve on overflow, double after `growth_interval` good steps.
- `static`: never moves; overflowing steps are skipped.
- `logmax` (OpenSeq2Seq's LogMaxScaler): keeps running means (bias-corrected,
  decays `beta1`, `beta2`) of x = log2(max |gradient|) and of x^2, and sets
  scale = 2^(log_max - mean(x) - overflow_std_dev * std(x)), clipped to
  [scale_min, scale_max], so that the scaled gradients' largest magnitude
  stays `overflow_std_dev` deviations below 2^log_max. An overflow counts as
  an observation x = log_max, which pulls the scale down.

Private Keras API, the project's one exception (ARCHITECTURE.md): Keras's
`LossScaleOptimizer` has no public hook for the rule that moves the scale, so
the static and LogMax rules override its `_stateful_handle_finite_grads` and
`_stateful_handle_non_finite_grads` (TensorFlow's path) and their `_stateless_`
twins (JAX's path: `fit` applies gradients statelessly under `jax.jit`), reading
`_overwrite_variable_with_gradient` and `_trainable_variables`, and `AllReplicasFinite` overrides `check_finite`.
`PRIVATE_HOOKS` lists them; a test checks that Keras still has each, so an
upgrade that renames one fails by name instead of training wrongly.

Example:
    >>> optimizer = build_loss_scale_optimizer(keras.optimizers.Adam(), {"algorithm": "logmax"})
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_s2s.backend import is_tensorflow, tf

ALGORITHMS = ("dynamic", "static", "logmax")
# the private methods of keras.optimizers.LossScaleOptimizer that the rules rely on
PRIVATE_HOOKS = (
    "check_finite",
    "_stateful_handle_finite_grads",
    "_stateful_handle_non_finite_grads",
    "_stateless_handle_finite_grads",
    "_stateless_handle_non_finite_grads",
    "_overwrite_variable_with_gradient",
)
LOSS_SCALE_KEYS = (
    "algorithm",
    "initial_scale",
    "growth_interval",
    "log_max",
    "beta1",
    "beta2",
    "overflow_std_dev",
    "scale_min",
    "scale_max",
)


class AllReplicasFinite:
    """Loss-scale optimizer mixin: a step counts as finite only if every replica's gradients are.

    Keras's LossScaleOptimizer takes the first replica's verdict, assuming the
    gradients were already summed over the replicas, but Keras 3 sums them
    later, in the update: an overflow on another replica would be applied.
    """

    def check_finite(self, grads):
        finite = super().check_finite(grads)
        if (
            not is_tensorflow()
        ):  # JAX: gradients are global arrays already (one program over the devices)
            return finite
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return finite
        overflowed = context.all_reduce(
            tf.distribute.ReduceOp.SUM, ops.cast(ops.logical_not(finite), "float32")
        )
        return ops.equal(overflowed, 0.0)


@keras.saving.register_keras_serializable(package="keras_s2s")
class DynamicLossScaleOptimizer(AllReplicasFinite, keras.optimizers.LossScaleOptimizer):
    """Keras's dynamic rule (halve on overflow, double after `dynamic_growth_steps` good steps), every
    replica's gradients checked."""


class _RuleLossScaleOptimizer(AllReplicasFinite, keras.optimizers.LossScaleOptimizer):
    """Keras's loss-scale optimizer with the scale update left to `after_finite` and `after_overflow`."""

    def __init__(self, inner_optimizer, initial_scale: float = 2.0**15, name=None, **kwargs):
        super().__init__(inner_optimizer, initial_scale=initial_scale, name=name, **kwargs)

    def _stateful_handle_finite_grads(self, grads, trainable_variables):
        unscaled = self._unscaled(grads, trainable_variables or self._trainable_variables)
        self.inner_optimizer.apply(unscaled, trainable_variables=trainable_variables)
        self.after_finite([g for g in unscaled if g is not None])

    def _stateful_handle_non_finite_grads(self):
        self.after_overflow()

    def _unscaled(self, grads, variables):
        return [
            g
            if g is None or self._overwrite_variable_with_gradient(v)
            else ops.divide(g, self.dynamic_scale)
            for g, v in zip(grads, variables)
        ]

    def _stateless_handle_finite_grads(self, optimizer_variables, grads, trainable_variables):
        # JAX: the same rule as the stateful path, on the values `fit` passes in
        mapping = list(zip(self.variables, optimizer_variables))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            unscaled = self._unscaled(grads, self._trainable_variables)
            new_trainable, new_inner = self.inner_optimizer.stateless_apply(
                self.inner_optimizer.variables, unscaled, trainable_variables
            )
            self.after_finite([g for g in unscaled if g is not None])
        own = [scope.get_current_value(v) for v in self._variables]
        return new_trainable, own + list(new_inner)

    def _stateless_handle_non_finite_grads(self, optimizer_variables, trainable_variables):
        mapping = list(zip(self.variables, optimizer_variables))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            self.after_overflow()
        return trainable_variables, [scope.get_current_value(v) for v in self.variables]

    def after_finite(self, grads):
        """Update the scale after a step with finite (unscaled) `grads`."""

    def after_overflow(self):
        """Update the scale after a skipped step."""

    def get_config(self):
        config = super().get_config()
        config.pop("dynamic_growth_steps")
        return config


@keras.saving.register_keras_serializable(package="keras_s2s")
class StaticLossScaleOptimizer(_RuleLossScaleOptimizer):
    """A fixed loss scale; a step whose gradients overflow is skipped and the scale stays."""


@keras.saving.register_keras_serializable(package="keras_s2s")
class LogMaxLossScaleOptimizer(_RuleLossScaleOptimizer):
    """OpenSeq2Seq's LogMax rule (see the module docstring).

    Args:
        log_max: float. log2 of the largest scaled gradient magnitude aimed for. OpenSeq2Seq used 16, but
            float16's largest value is 65504 < 2^16, so with a steady gradient (no deviation yet) 16 lands
            right on the overflow; 15 keeps one bit of headroom.
        beta1, beta2: float. Decays of the running mean of x and of x^2.
        overflow_std_dev: float. Safety margin in standard deviations of x.
        scale_min, scale_max: float. Bounds of the scale.
    """

    def __init__(
        self,
        inner_optimizer,
        initial_scale: float = 2.0**15,
        log_max: float = 15.0,
        beta1: float = 0.99,
        beta2: float = 0.999,
        overflow_std_dev: float = 3.09,
        scale_min: float = 1.0,
        scale_max: float = 2.0**24,
        name=None,
        **kwargs,
    ):
        super().__init__(inner_optimizer, initial_scale=initial_scale, name=name, **kwargs)
        self.log_max, self.beta1, self.beta2 = float(log_max), float(beta1), float(beta2)
        self.overflow_std_dev, self.scale_min, self.scale_max = (
            float(overflow_std_dev),
            float(scale_min),
            float(scale_max),
        )

    def build(self, var_list):
        super().build(var_list)
        statistics = dict(log_max_mean=0.0, log_max_square_mean=0.0, log_max_count=0.0)
        for name, value in statistics.items():
            setattr(
                self,
                name,
                self.add_variable(
                    shape=(),
                    dtype="float32",
                    aggregation="none",
                    name=name,
                    initializer=keras.initializers.Constant(value),
                ),
            )

    def after_finite(self, grads):
        largest = ops.max(ops.stack([ops.max(ops.abs(ops.cast(g, "float32"))) for g in grads]))
        self._observe(ops.log2(ops.maximum(largest, 1e-30)))

    def after_overflow(self):
        self._observe(ops.convert_to_tensor(self.log_max, "float32"))

    def _observe(self, x):
        self.log_max_count.assign_add(1.0)
        self.log_max_mean.assign(self.beta1 * self.log_max_mean + (1 - self.beta1) * x)
        self.log_max_square_mean.assign(
            self.beta2 * self.log_max_square_mean + (1 - self.beta2) * x * x
        )
        mean = self.log_max_mean / (1 - ops.power(self.beta1, self.log_max_count))
        square = self.log_max_square_mean / (1 - ops.power(self.beta2, self.log_max_count))
        deviation = ops.sqrt(ops.maximum(square - mean * mean, 0.0))
        log_scale = ops.clip(
            self.log_max - mean - self.overflow_std_dev * deviation,
            math.log2(self.scale_min),
            math.log2(self.scale_max),
        )
        self.dynamic_scale.assign(ops.power(2.0, log_scale))

    def get_config(self):
        return {
            **super().get_config(),
            "log_max": self.log_max,
            "beta1": self.beta1,
            "beta2": self.beta2,
            "overflow_std_dev": self.overflow_std_dev,
            "scale_min": self.scale_min,
            "scale_max": self.scale_max,
        }


def build_loss_scale_optimizer(inner, settings: dict) -> keras.optimizers.LossScaleOptimizer:
    """Wrap `inner` for float16 training as the card's `training.loss_scale` section says."""
    settings = dict(settings or {})
    algorithm = settings.pop("algorithm", "dynamic")
    initial_scale = float(settings.pop("initial_scale", 2.0**15))
    growth_interval = int(settings.pop("growth_interval", 2000))
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"loss_scale.algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}"
        )
    if algorithm == "logmax":
        return LogMaxLossScaleOptimizer(inner, initial_scale=initial_scale, **settings)
    if settings:
        raise ValueError(
            f"loss_scale settings {', '.join(sorted(settings))} apply to algorithm 'logmax' only, "
            f"not {algorithm!r}"
        )
    if algorithm == "static":
        return StaticLossScaleOptimizer(inner, initial_scale=initial_scale)
    return DynamicLossScaleOptimizer(
        inner, initial_scale=initial_scale, dynamic_growth_steps=growth_interval
    )
