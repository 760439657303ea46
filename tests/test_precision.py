import keras
import numpy as np
import pytest

from keras_s2s import zoo
from keras_s2s.precision import policy as precision
from keras_s2s.precision.policy import choose_precision, resolve_precision


@pytest.mark.parametrize(
    "gpus, flags, expected",
    [
        ([(8, 0)], set(), "mixed_float16"),
        ([(7, 0), (9, 0)], {"amx_bf16"}, "mixed_float16"),
        ([(6, 1)], {"avx512_bf16"}, "float32"),
        ([], {"avx512_bf16"}, "mixed_bfloat16"),
        ([], {"amx_bf16", "avx2"}, "mixed_bfloat16"),
        ([], {"avx2", "avx512f"}, "float32"),
    ],
)
def test_auto_choice(gpus, flags, expected):
    assert choose_precision(gpus, flags)[0] == expected


@pytest.mark.parametrize(
    "gpus, expected, reason",
    [
        ([], "float32", "XLA:CPU runs bfloat16 slower than float32"),
        ([(9, 0)], "mixed_bfloat16", "compute capability 9.0 (bfloat16 tensor cores)"),
        ([(8, 0), (7, 5)], "mixed_float16", "7.5"),
        ([(6, 1)], "float32", "6.1"),
    ],
)
def test_auto_choice_on_jax(gpus, expected, reason):
    """On JAX: float32 on a CPU (pointing to the TensorFlow backend there), bfloat16 from compute
    capability 8.0, float16 with loss scaling on 7.x, float32 below."""
    chosen, why = choose_precision(gpus, {"avx512_bf16", "amx_bf16"}, backend="jax")
    assert chosen == expected and reason in why
    if not gpus:
        assert "TensorFlow backend" in why


def test_auto_logs_its_choice(monkeypatch, caplog):
    monkeypatch.setattr(precision, "gpu_compute_capabilities", lambda: [])
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"amx_bf16"})
    with caplog.at_level("INFO", logger="keras_s2s"):
        assert resolve_precision("auto") == "mixed_bfloat16"
    assert "precision auto -> mixed_bfloat16 (CPU has amx_bf16)" in caplog.text
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("half")


def test_cpu_flags_reads_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx512_bf16 amx_tile\n")
    assert {"avx512_bf16", "amx_tile"} <= precision.cpu_flags(str(info))
    assert precision.cpu_flags(str(tmp_path / "missing")) == set()


@pytest.mark.parametrize(
    "policy, compute",
    [("float32", "float32"), ("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")],
)
def test_dtypes_under_each_policy(policy, compute):
    model = zoo.load(
        "gnmt", vocab_size=40, num_layers=3, units=8, precision=policy, strategy="default"
    )
    assert all(v.dtype == "float32" for v in model.weights), "master weights stay float32"
    assert model.source_embedding.compute_dtype == compute
    assert model.decoder_layers[0].compute_dtype == compute
    x = {"source": np.full((2, 8), 5, "int32"), "target_in": np.full((2, 8), 6, "int32")}
    logits = model(x)
    assert logits.dtype == "float32"
    encoded = model.encode(x["source"])
    _, weights = model.attention(encoded["memory"][:, :2], encoded["memory"], encoded["mask"])
    assert weights.dtype == "float32", "attention softmax computes in float32"
    assert np.allclose(np.sum(weights, -1), 1.0, atol=1e-5)
    is_scaled = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert is_scaled == (policy == "mixed_float16")


def test_loss_scale_settings_come_from_the_card():
    model = zoo.load(
        "gnmt",
        vocab_size=40,
        num_layers=2,
        units=8,
        precision="mixed_float16",
        strategy="default",
        **{"training.loss_scale.initial_scale": 256.0, "training.loss_scale.growth_interval": 7},
    )
    assert model.optimizer.initial_scale == 256.0
    assert model.optimizer.dynamic_growth_steps == 7


def test_overflowing_step_changes_no_weight_and_lowers_the_scale():
    model = zoo.load(
        "gnmt",
        vocab_size=40,
        num_layers=2,
        units=8,
        precision="mixed_float16",
        strategy="default",
        **{"training.loss_scale.initial_scale": 1e30},
    )
    x = {"source": np.full((2, 8), 5, "int32"), "target_in": np.full((2, 8), 6, "int32")}
    y = np.full((2, 8), 7, "int32")
    before = [v.numpy().copy() for v in model.trainable_weights]
    model.train_on_batch(x, y)
    after = [v.numpy() for v in model.trainable_weights]
    assert all(np.array_equal(a, b) for a, b in zip(before, after)), (
        "a non-finite step must skip the update"
    )
    assert float(model.optimizer.dynamic_scale) < 1e30
    # a sane scale afterwards trains normally
    model.optimizer.dynamic_scale.assign(1024.0)
    model.train_on_batch(x, y)
    assert any(not np.array_equal(a, v.numpy()) for a, v in zip(after, model.trainable_weights))


def _losses(policy, demo_data, steps=36):
    keras.utils.set_random_seed(3)
    model = zoo.load(
        "gnmt",
        tokenizer=demo_data.tokenizer,
        num_layers=2,
        units=32,
        dropout=0.0,
        precision=policy,
        strategy="default",
        learning_rate=0.01,
        schedule="constant",
        clipnorm=None,
    )
    history = model.fit(
        demo_data.train.take(steps),
        epochs=1,
        verbose=0,
        callbacks=[keras.callbacks.LambdaCallback()],
    )
    losses = [
        float(model.compute_loss(inputs, labels, model(inputs)))
        for inputs, labels in demo_data.valid.take(2)
    ]
    return history.history["loss"][-1], float(np.mean(losses))


@pytest.mark.slow
def test_mixed_precision_loss_tracks_float32(demo_data):
    initial = np.log(demo_data.tokenizer.vocab_size)
    f32_train, f32_valid = _losses("float32", demo_data)
    bf16_train, bf16_valid = _losses("mixed_bfloat16", demo_data)
    f16_train, f16_valid = _losses("mixed_float16", demo_data)
    assert f32_valid < 0.85 * initial, "float32 run must learn"
    for valid in (bf16_valid, f16_valid):
        assert abs(valid - f32_valid) < 0.1 * f32_valid, (f32_valid, bf16_valid, f16_valid)
