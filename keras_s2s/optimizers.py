"""Optimizers and learning-rate schedules built from a card's `training` part.

Gradient accumulation (`accumulate_steps: k`, OpenSeq2Seq's `iter_size`,
`GradientAccumulation`): each update applies the mean of k batches'
gradients, which for equal-size batches is the gradient of one k-times larger
batch, under any strategy (one device, hybrid, MirroredStrategy,
multi-worker). The optimizer's `iterations` count updates, so Adam's bias
correction and the learning-rate schedule see one update where the larger
batch would make one.

Example:
    >>> opt = build_optimizer({"optimizer": "adam", "learning_rate": 1e-3}, "mixed_float16")
    >>> type(opt).__name__
    'LossScaleOptimizer'
"""

from __future__ import annotations

import keras
from keras import ops

from keras_s2s.backend import is_tensorflow, tf


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

    def __init__(
        self, learning_rate, warmup_steps=0, decay="exponential", decay_steps=1000, decay_rate=1.0
    ):
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
    """`schedule` evaluated at batch steps // `accumulate_steps`.

    Models saved before `GradientAccumulation` (when the optimizer counted
    batches, not updates) carry this schedule; it is kept so they load.
    """

    def __init__(self, schedule, accumulate_steps: int):
        if isinstance(schedule, dict):
            schedule = keras.saving.deserialize_keras_object(schedule)
        self.schedule, self.accumulate_steps = schedule, int(accumulate_steps)

    def __call__(self, step):
        return self.schedule(ops.floor_divide(step, self.accumulate_steps))

    def get_config(self):
        return {
            "schedule": keras.saving.serialize_keras_object(self.schedule),
            "accumulate_steps": self.accumulate_steps,
        }


class GradientAccumulation:
    """Optimizer mixin: update once per `accumulate_steps` batches with the mean of their gradients.

    Works under every strategy. Each batch's gradients are summed over the
    replicas (as every update is) and added to accumulators shaped, typed
    and placed like the (float32 master) weights; the k-th batch's call
    updates the weights with
    (sum of k batches) / k and zeroes the accumulators. Keras's loss already
    divides by the number of replicas, so the update is the gradient of the
    mean loss over all k x replicas shards: that of one k-times larger global
    batch. The decision to update is a `tf.cond` taken in cross-replica context
    (the way Keras's LossScaleOptimizer decides to skip a step), so the
    update's own cross-replica work runs under MirroredStrategy too; Keras's
    `gradient_accumulation_steps` takes it in replica context and fails there.
    `iterations` counts updates, not batches. Under loss scaling, a batch
    whose gradients overflow is skipped: it is neither added nor counted.

    Example:
        >>> optimizer = Adam(learning_rate=1e-3, accumulate_steps=4)
    """

    def __init__(self, *args, accumulate_steps: int = 1, **kwargs):
        if int(accumulate_steps) != accumulate_steps or accumulate_steps < 1:
            raise ValueError(
                f"accumulate_steps must be a whole number of at least 1, got {accumulate_steps!r}"
            )
        kwargs.pop("gradient_accumulation_steps", None)  # a config saved on JAX carries it
        if not is_tensorflow() and accumulate_steps > 1:
            # JAX: Keras's own accumulation, the same rule (`iterations` counts updates) without tf.distribute
            kwargs["gradient_accumulation_steps"] = int(accumulate_steps)
        super().__init__(*args, **kwargs)
        self.accumulate_steps = int(accumulate_steps)

    @property
    def _accumulates_here(self) -> bool:
        """Whether this mixin accumulates (TensorFlow); elsewhere Keras's `gradient_accumulation_steps` does."""
        return self.accumulate_steps > 1 and is_tensorflow()

    def build(self, variables):
        super().build(variables)
        if self._accumulates_here:
            self.accumulated_batches = self.add_variable(
                shape=(), dtype="int32", name="accumulated_batches"
            )
            self.accumulated_gradients = [
                self.add_variable_from_reference(v, name="accumulated") for v in variables
            ]
            self.accumulated_paths = tuple(v.path for v in variables)

    def apply(self, grads, trainable_variables=None):
        if not self._accumulates_here:
            return super().apply(grads, trainable_variables)
        if trainable_variables is None:
            raise ValueError("with accumulate_steps > 1, apply() needs the trainable_variables")
        variables = list(trainable_variables)
        if not self.built:
            self.build(variables)
        if tuple(v.path for v in variables) != self.accumulated_paths:
            raise ValueError(
                "apply() got other variables than the optimizer was built for: "
                "gradient accumulation keeps one accumulator per built variable"
            )
        present = [i for i, g in enumerate(grads) if g is not None]
        if not present:
            raise ValueError("no gradient for any variable: nothing to accumulate")
        context = tf.distribute.get_replica_context()
        summed = context.all_reduce(
            tf.distribute.ReduceOp.SUM, [tf.convert_to_tensor(grads[i]) for i in present]
        )
        context.merge_call(self._accumulate_or_update, args=(variables, present, summed))

    def _accumulate_or_update(self, strategy, variables, present, summed):
        """In cross-replica context: add `summed` to the accumulators; on the k-th batch, update and zero them."""
        for i, gradient in zip(present, summed):
            strategy.extended.update(
                self.accumulated_gradients[i].value,
                lambda a, g: a.assign_add(tf.cast(g, a.dtype)),
                args=(gradient,),
                group=False,
            )
        self.accumulated_batches.assign_add(1)
        divisor = float(self.accumulate_steps * strategy.num_replicas_in_sync)

        def replica_update():
            # each replica passes its share of the mean: the inner update sums the shares over the replicas
            shares = [
                self.accumulated_gradients[i].value / divisor if i in present else None
                for i in range(len(variables))
            ]
            super(GradientAccumulation, self).apply(shares, variables)

        def update():
            strategy.extended.call_for_each_replica(replica_update)
            for accumulator in self.accumulated_gradients:
                accumulator.assign(ops.zeros_like(accumulator.value))
            self.accumulated_batches.assign(0)

        ops.cond(self.accumulated_batches >= self.accumulate_steps, update, lambda: None)

    def get_config(self):
        config = {**super().get_config(), "accumulate_steps": self.accumulate_steps}
        config.pop("gradient_accumulation_steps", None)
        return config


class FusedAdamUpdate:
    """Adam mixin: each variable's update as one kernel (`tf.raw_ops.ResourceApplyAdam`).

    Keras's Adam updates a variable with about ten element-wise kernels,
    each a pass over the variable's size in memory; TensorFlow's fused
    kernel reads the gradient, the weight and both moments once and writes
    them once, with the same formula (bias correction folded into the step
    size, epsilon added to the root of the second moment). The moments are
    created in the order and with the names Keras's Adam gives them, so
    models saved before load and resume unchanged.

    A sparse gradient (`tf.IndexedSlices`, an embedding's) is made dense
    first: that sums the rows of a token seen twice in a batch (or on two
    replicas) before they are squared, so a sparse update equals a dense one.
    (Keras 3's own sparse path squares slice by slice: a token seen twice got
    (g1^2 + g2^2) in its second moment instead of (g1 + g2)^2, a step of 0.13
    instead of 0.1 at learning rate 0.1.) Keras's Adam already made the
    first moment's update dense, so this costs no extra memory traffic.

    On other backends the mixin steps aside: Keras's Adam runs (under `jax.jit`
    XLA fuses its element-wise update itself).

    Example:
        >>> optimizer = Adam(learning_rate=1e-3)  # the zoo's Adam has this mixin
    """

    def build(self, variables):
        if not is_tensorflow():  # the fused kernel is TensorFlow's: Keras's Adam elsewhere
            return super().build(variables)
        if self.built:
            return
        # the base build: Adam's own makes private slots
        keras.optimizers.Optimizer.build(self, variables)
        updated = [v for v in variables if not getattr(v, "overwrite_with_gradient", False)]
        # Keras's order: momentum and velocity per variable, then (amsgrad) every velocity_hat
        moments = [
            [self.add_variable_from_reference(v, name=name) for name in ("momentum", "velocity")]
            for v in updated
        ]
        if self.amsgrad:
            moments = [
                pair + [self.add_variable_from_reference(v, name="velocity_hat")]
                for v, pair in zip(updated, moments)
            ]
        # the update sees one replica's copy of a mirrored variable: key every copy
        local_copies = tf.distribute.get_strategy().experimental_local_results
        self.adam_slots = {}
        for variable, slots in zip(updated, moments):
            for weight, *slot_copies in zip(*(local_copies(v.value) for v in [variable, *slots])):
                self.adam_slots[weight.ref()] = slot_copies

    def update_step(self, gradient, variable, learning_rate):
        if not is_tensorflow():
            return super().update_step(gradient, variable, learning_rate)
        if isinstance(variable, keras.Variable):
            variable = variable.value
        slots = self.adam_slots.get(variable.ref())
        if slots is None:
            raise ValueError(
                f"Adam was not built for variable {variable.name}: build() it with every variable it updates"
            )
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        arguments = dict(
            var=variable.handle,
            m=slots[0].handle,
            v=slots[1].handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        )
        if self.amsgrad:
            tf.raw_ops.ResourceApplyAdamWithAmsgrad(vhat=slots[2].handle, **arguments)
        else:
            tf.raw_ops.ResourceApplyAdam(**arguments)


@keras.saving.register_keras_serializable(package="keras_s2s")
class Adam(GradientAccumulation, FusedAdamUpdate, keras.optimizers.Adam):
    """`keras.optimizers.Adam` with one fused kernel per update and sparse updates equal to dense ones."""


@keras.saving.register_keras_serializable(package="keras_s2s")
class AdamW(GradientAccumulation, FusedAdamUpdate, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` (weight decay as Keras applies it) with `FusedAdamUpdate`."""


@keras.saving.register_keras_serializable(package="keras_s2s")
class SGD(GradientAccumulation, keras.optimizers.SGD):
    """`keras.optimizers.SGD` with `GradientAccumulation`."""


def build_schedule(training: dict):
    """The learning rate (a float or a schedule) described by `training`."""
    rate = float(training.get("learning_rate", 1e-3))
    kind = training.get("schedule", "constant")
    # deadline: a float rate that DeadlineLearningRate sets every batch
    if kind in (
        "constant",
        "deadline",
    ):
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
    from keras_s2s.precision.loss_scale import build_loss_scale_optimizer

    name = training.get("optimizer", "adam")
    schedule = build_schedule(training)
    accumulate = int(training.get("accumulate_steps", 1))
    if accumulate < 1:
        raise ValueError(f"accumulate_steps must be at least 1, got {accumulate}")
    kwargs = {"learning_rate": schedule, "accumulate_steps": accumulate}
    if training.get("clipnorm"):
        kwargs["global_clipnorm"] = float(training["clipnorm"])
    optimizer = {"adam": Adam, "adamw": AdamW, "sgd": SGD}[name](**kwargs)
    if policy == "mixed_float16":
        optimizer = build_loss_scale_optimizer(optimizer, training.get("loss_scale", {}))
    return optimizer
