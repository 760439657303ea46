"""Gradient accumulation and the three loss-scaling rules (dynamic, static, LogMax)."""

import keras
import numpy as np
import pytest

from keras_s2s import zoo
from keras_s2s.config import CardError
from keras_s2s.optimizers import PerUpdateSchedule, build_optimizer
from keras_s2s.precision.loss_scale import LogMaxLossScaleOptimizer, StaticLossScaleOptimizer

TINY_GNMT = dict(
    vocab_size=40, num_layers=2, units=8, dropout=0.0, strategy="default", clipnorm=None
)


def batches(count, size, seed=0):
    """`count` micro-batches of `size` full-length sentences (no padding: every token counts alike)."""
    rng = np.random.default_rng(seed)
    source = rng.integers(3, 40, (count * size, 7)).astype("int32")
    target_in = rng.integers(3, 40, (count * size, 6)).astype("int32")
    labels = rng.integers(3, 40, (count * size, 6)).astype("int32")
    split = [
        ({"source": s, "target_in": t}, y)
        for s, t, y in zip(
            np.split(source, count), np.split(target_in, count), np.split(labels, count)
        )
    ]
    return split, ({"source": source, "target_in": target_in}, labels)


def twin_models(precision="float32", **settings):
    models = []
    for accumulate in (1, settings.pop("accumulate_steps", 3)):
        keras.utils.set_random_seed(0)
        models.append(
            zoo.load(
                "gnmt",
                precision=precision,
                accumulate_steps=accumulate,
                **{**TINY_GNMT, **settings},
            )
        )
    models[1].set_weights(models[0].get_weights())
    return models


def test_k_micro_batches_make_the_same_updates_as_one_k_times_larger_batch():
    whole, accumulated = twin_models(
        optimizer="adam", schedule="warmup_exponential", warmup_steps=3, learning_rate=0.01
    )
    # two updates: Adam's moments and the schedule must count updates, not batches
    for seed in range(2):
        micro, big = batches(3, 4, seed)
        whole.train_on_batch(*big)
        for x, y in micro:
            accumulated.train_on_batch(x, y)
    assert int(whole.optimizer.iterations) == int(accumulated.optimizer.iterations) == 2
    for a, b in zip(whole.trainable_weights, accumulated.trainable_weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-6, rtol=1e-5)
    assert not np.allclose(
        whole.trainable_weights[0].numpy(), twin_models()[0].trainable_weights[0].numpy()
    )


def test_accumulation_with_mixed_float16_loss_scaling():
    whole, accumulated = twin_models(
        "mixed_float16", accumulate_steps=2, optimizer="sgd", learning_rate=0.5, schedule="constant"
    )
    assert isinstance(accumulated.optimizer, keras.optimizers.LossScaleOptimizer)
    assert accumulated.optimizer.inner_optimizer.accumulate_steps == 2
    micro, big = batches(2, 4)
    start = [w.numpy().copy() for w in whole.trainable_weights]
    whole.train_on_batch(*big)
    accumulated.optimizer.build(accumulated.trainable_variables)
    scale = float(accumulated.optimizer.dynamic_scale)
    # this batch overflows: skipped, neither added nor counted
    accumulated.optimizer.dynamic_scale.assign(1e30)
    accumulated.train_on_batch(*micro[0])
    assert int(accumulated.optimizer.inner_optimizer.accumulated_batches) == 0
    assert not any(
        np.any(a.numpy()) for a in accumulated.optimizer.inner_optimizer.accumulated_gradients
    )
    accumulated.optimizer.dynamic_scale.assign(scale)
    accumulated.train_on_batch(*micro[0])
    assert all(
        np.array_equal(a, b.numpy()) for a, b in zip(start, accumulated.trainable_weights)
    ), "nothing changes before the k-th micro-batch"
    accumulated.train_on_batch(*micro[1])
    moved = np.sqrt(
        sum(np.sum((a.numpy() - s) ** 2) for a, s in zip(whole.trainable_weights, start))
    )
    apart = np.sqrt(
        sum(
            np.sum((a.numpy() - b.numpy()) ** 2)
            for a, b in zip(whole.trainable_weights, accumulated.trainable_weights)
        )
    )
    # the same update up to float16 round-off
    assert moved > 1e-3 and apart < 0.01 * moved, (
        moved,
        apart,
    )


def test_accumulation_settings_are_checked_and_the_schedule_counts_updates():
    with pytest.raises(ValueError, match="accumulate_steps must be at least 1"):
        build_optimizer({"accumulate_steps": 0}, "float32")
    with pytest.raises(CardError, match="accumulate_steps' must be a whole number of at least 1"):
        zoo.get_card("gnmt", accumulate_steps="two")
    schedule = PerUpdateSchedule(keras.optimizers.schedules.ExponentialDecay(1.0, 1, 0.5), 4)
    assert [float(schedule(step)) for step in (0, 3, 4, 9)] == [1.0, 1.0, 0.5, 0.25]
    restored = PerUpdateSchedule.from_config(schedule.get_config())
    assert float(restored(9)) == 0.25


def overflowing_step(model):
    """Train one batch whose scaled gradients overflow float16 (loss scale 1e30)."""
    x, y = batches(1, 2)[0][0]
    model.optimizer.dynamic_scale.assign(1e30)
    before = [v.numpy().copy() for v in model.trainable_weights]
    model.train_on_batch(x, y)
    unchanged = all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.trainable_weights))
    return unchanged, float(model.optimizer.dynamic_scale)


def test_static_loss_scale_stays_put_and_skips_overflowing_steps():
    model = zoo.load(
        "gnmt",
        precision="mixed_float16",
        **TINY_GNMT,
        **{"training.loss_scale.algorithm": "static", "training.loss_scale.initial_scale": 128.0},
    )
    assert isinstance(model.optimizer, StaticLossScaleOptimizer)
    x, y = batches(1, 2)[0][0]
    for _ in range(3):
        model.train_on_batch(x, y)
    assert float(model.optimizer.dynamic_scale) == 128.0 and int(model.optimizer.iterations) == 3
    skipped, scale = overflowing_step(model)
    assert skipped and scale == pytest.approx(1e30), "static: the scale never moves"
    assert int(model.optimizer.iterations) == 3


def test_logmax_scale_follows_the_gradient_magnitude_and_backs_off_on_overflow():
    model = zoo.load(
        "gnmt",
        precision="mixed_float16",
        **TINY_GNMT,
        **{"training.loss_scale.algorithm": "logmax", "training.loss_scale.initial_scale": 4.0},
    )
    optimizer = model.optimizer
    assert isinstance(optimizer, LogMaxLossScaleOptimizer)
    x, y = batches(1, 2)[0][0]
    for _ in range(3):
        model.train_on_batch(x, y)
    # after finite steps: scale = 2^(15 - mean - 3.09 std) of log2(max |grad|), far above the initial 4
    mean = float(optimizer.log_max_mean) / (1 - 0.99**3)
    square = float(optimizer.log_max_square_mean) / (1 - 0.999**3)
    expected = 2 ** np.clip(15 - mean - 3.09 * np.sqrt(max(square - mean**2, 0)), 0, 24)
    # float32 variance round-off
    assert float(optimizer.dynamic_scale) == pytest.approx(expected, rel=0.05)
    assert float(optimizer.dynamic_scale) > 4.0 and -20 < mean < 4
    skipped, scale_after = overflowing_step(model)
    assert skipped and scale_after < expected, (
        "an overflow counts as log2(max) = log_max and pulls the scale down"
    )
    model.train_on_batch(x, y)  # and training goes on with finite steps
    assert np.isfinite(float(optimizer.dynamic_scale)) and int(optimizer.iterations) == 4


def test_loss_scale_settings_are_checked():
    with pytest.raises(CardError, match="'training.loss_scale.algorithm' must be one of"):
        zoo.get_card("gnmt", **{"training.loss_scale.algorithm": "magic"})
    with pytest.raises(ValueError, match="log_max apply to algorithm 'logmax' only"):
        zoo.load(
            "gnmt",
            precision="mixed_float16",
            **TINY_GNMT,
            **{"training.loss_scale.algorithm": "static", "training.loss_scale.log_max": 15.0},
        )


def test_logmax_optimizer_round_trips_through_its_config():
    optimizer = LogMaxLossScaleOptimizer(
        keras.optimizers.Adam(), initial_scale=8.0, log_max=15.0, beta1=0.9
    )
    restored = LogMaxLossScaleOptimizer.from_config(optimizer.get_config())
    assert (restored.log_max, restored.beta1, restored.initial_scale) == (15.0, 0.9, 8.0)
    static = StaticLossScaleOptimizer.from_config(
        StaticLossScaleOptimizer(keras.optimizers.SGD(), 64.0).get_config()
    )
    assert static.initial_scale == 64.0


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_sparse_embedding_updates_equal_dense_ones_with_repeated_tokens(name):
    import tensorflow as tf

    embedding = keras.layers.Embedding(5, 2)
    embedding.build((None,))
    dense = keras.Variable(embedding.embeddings.numpy())
    sparse_optimizer, dense_optimizer = (
        build_optimizer({"optimizer": name, "learning_rate": 0.1}, "float32") for _ in range(2)
    )
    for step in range(3):
        with tf.GradientTape() as tape:
            tokens = tf.constant([1, 1, 2, step])  # token 1 twice in the batch
            loss = tf.reduce_sum(
                embedding(tokens) * tf.reshape(tf.range(8, dtype="float32"), (4, 2))
            )
        gradient = tape.gradient(loss, embedding.embeddings)
        assert isinstance(gradient, tf.IndexedSlices)
        sparse_optimizer.apply([gradient], [embedding.embeddings])
        dense_optimizer.apply([tf.convert_to_tensor(gradient)], [dense])
    np.testing.assert_allclose(embedding.embeddings.numpy(), dense.numpy(), atol=1e-6)


@pytest.mark.parametrize("settings", [{}, {"amsgrad": True}, {"weight_decay": 0.1}])
def test_fused_adam_makes_keras_adams_updates_in_one_kernel_per_variable(settings):
    import tensorflow as tf

    from keras_s2s.optimizers import Adam, AdamW

    rng = np.random.default_rng(0)
    start = [rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(4,)).astype("float32")]
    ours, theirs = (
        [keras.Variable(w, name=f"w{i}") for i, w in enumerate(start)] for _ in range(2)
    )
    kind = (
        (AdamW, keras.optimizers.AdamW)
        if "weight_decay" in settings
        else (Adam, keras.optimizers.Adam)
    )
    fused, reference = (cls(learning_rate=0.05, **settings) for cls in kind)
    for _ in range(4):
        grads = [tf.constant(rng.normal(size=w.shape).astype("float32")) for w in start]
        fused.apply(grads, ours)
        reference.apply(grads, theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # same slot names in the same order as Keras's Adam: checkpoints of either load into the other
    assert [v.name for v in fused.variables] == [v.name for v in reference.variables]

    graph = tf.function(lambda: fused.apply(grads, ours)).get_concrete_function().graph
    kernels = [op.type for op in graph.get_operations()]
    fused_kernel = (
        "ResourceApplyAdamWithAmsgrad" if settings.get("amsgrad") else "ResourceApplyAdam"
    )
    assert kernels.count(fused_kernel) == 2 and "Sqrt" not in kernels


def test_fused_adam_refuses_a_variable_it_was_not_built_for():
    import tensorflow as tf

    from keras_s2s.optimizers import Adam

    optimizer = Adam()
    optimizer.build([keras.Variable(np.zeros(2, "float32"))])
    with pytest.raises(ValueError, match="not built for variable"):
        optimizer.update_step(tf.ones(3), keras.Variable(np.zeros(3, "float32")), 0.1)


def test_a_loss_scale_rule_trains_under_a_mirrored_strategy():
    from devices import cpu_devices

    from keras_s2s.distribution import get_strategy

    settings = {**TINY_GNMT, "strategy": get_strategy("mirrored", devices=cpu_devices())}
    model = zoo.load(
        "gnmt",
        precision="mixed_float16",
        **settings,
        **{"training.loss_scale.algorithm": "logmax", "training.loss_scale.initial_scale": 8.0},
    )
    micro, _ = batches(3, 4)
    for x, y in micro:
        model.train_on_batch(x, y)
    # a step may overflow while LogMax learns the gradients' range: it is skipped, never applied
    assert int(model.optimizer.iterations.numpy()) >= 2 and np.isfinite(
        float(model.optimizer.dynamic_scale.numpy())
    )
    assert all(np.all(np.isfinite(w.numpy())) for w in model.trainable_weights)


def mirrored_twins(precision, **settings):
    """One model without and one with accumulation under a MirroredStrategy over the 2 logical CPUs, equal weights."""
    from devices import cpu_devices

    from keras_s2s.distribution import get_strategy

    return twin_models(
        precision, **settings, strategy=get_strategy("mirrored", devices=cpu_devices())
    )


def distance(a, b):
    return np.sqrt(
        sum(
            np.sum((x.numpy() - y.numpy()) ** 2)
            for x, y in zip(a.trainable_weights, b.trainable_weights)
        )
    )


@pytest.mark.parametrize("precision", ["float32", "mixed_float16"])
def test_accumulation_under_a_mirrored_strategy_equals_one_k_times_larger_global_batch(precision):
    settings = dict(
        optimizer="adam", schedule="warmup_exponential", warmup_steps=3, learning_rate=0.01
    )
    whole, accumulated = mirrored_twins(precision, accumulate_steps=2, **settings)
    # one device, the same global batches
    single = zoo.load("gnmt", precision=precision, **TINY_GNMT, **settings)
    if precision == "mixed_float16":
        assert isinstance(accumulated.optimizer, keras.optimizers.LossScaleOptimizer)
    start = [w.numpy().copy() for w in whole.trainable_weights]
    single.set_weights(start)
    # two updates of a global batch 8, each from 2 micro-batches of 4 (2 per replica)
    for seed in range(2):
        micro, big = batches(2, 4, seed)
        whole.train_on_batch(*big)
        single.train_on_batch(*big)
        for step, (x, y) in enumerate(micro):
            accumulated.train_on_batch(x, y)
            if seed == 0 and step == 0:
                assert all(
                    np.array_equal(s, w.numpy())
                    for s, w in zip(start, accumulated.trainable_weights)
                ), "nothing changes before the k-th micro-batch"
    assert (
        int(whole.optimizer.iterations.numpy())
        == int(accumulated.optimizer.iterations.numpy())
        == 2
    )
    moved = np.sqrt(
        sum(np.sum((w.numpy() - s) ** 2) for w, s in zip(whole.trainable_weights, start))
    )
    # float16: round-off of different summation orders
    tolerance = 1e-5 if precision == "float32" else 0.01
    assert moved > 1e-3
    assert distance(whole, accumulated) < tolerance * moved, (moved, distance(whole, accumulated))
    assert distance(single, accumulated) < tolerance * moved, (moved, distance(single, accumulated))
    # and without accumulation the replicas' embedding rows (sparse, the same tokens on both) equal one device's
    assert distance(single, whole) < tolerance * moved, (moved, distance(single, whole))


@pytest.mark.parametrize("algorithm", ["dynamic", "static", "logmax"])
def test_an_overflow_on_one_replica_makes_the_step_non_finite_on_all(algorithm):
    import tensorflow as tf
    from devices import cpu_devices

    from keras_s2s.distribution import get_strategy
    from keras_s2s.precision.loss_scale import build_loss_scale_optimizer

    strategy = get_strategy("mirrored", devices=cpu_devices())
    with strategy.scope():
        optimizer = build_loss_scale_optimizer(keras.optimizers.SGD(), {"algorithm": algorithm})

    def verdict():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        gradient = tf.where(tf.equal(replica, 1), float("inf"), 1.0) * tf.ones((3,))
        return optimizer.check_finite([gradient])

    verdicts = strategy.experimental_local_results(tf.function(lambda: strategy.run(verdict))())
    assert [bool(v) for v in verdicts] == [False, False]


def test_the_private_loss_scale_hooks_still_exist_in_keras():
    """The documented exception to "public Keras API only" (keras_s2s/precision/loss_scale.py)."""
    from keras_s2s.precision.loss_scale import PRIVATE_HOOKS

    missing = [
        name
        for name in PRIVATE_HOOKS
        if not callable(getattr(keras.optimizers.LossScaleOptimizer, name, None))
    ]
    assert not missing, f"Keras {keras.__version__} lacks {missing}: port the loss-scale rules"
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD())
    variable = keras.Variable([1.0])
    optimizer.build([variable])
    assert hasattr(optimizer, "_trainable_variables")
