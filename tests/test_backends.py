"""Every zoo architecture on both Keras backends: this file runs in the TensorFlow pass and in the JAX
pass (TensorFlow blocked, see conftest.py), and the TensorFlow pass also checks that JAX computes
the same losses, outputs and decoded ids from the same weights."""

import math
import os
import subprocess
import sys
from pathlib import Path

import backend_twin as twin
import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()
ROOT = Path(__file__).resolve().parents[1]


def _equal_outputs(first: dict, second: dict, atol: float = 1e-4):
    assert set(first) == set(second)
    for key in first:
        a, b = np.asarray(first[key]), np.asarray(second[key])
        if a.dtype.kind in "iuUSO":
            np.testing.assert_array_equal(a, b, err_msg=key)
        else:
            np.testing.assert_allclose(a, b, atol=atol, rtol=1e-5, err_msg=key)


@pytest.mark.parametrize("architecture", list(twin.ARCHITECTURES))
def test_every_architecture_trains_reloads_and_decodes(architecture, tmp_path):
    model = twin.build(architecture)
    inputs, labels = twin.batch(architecture, model)
    losses = model.fit(inputs, labels, epochs=4, verbose=0).history["loss"]
    assert all(math.isfinite(loss) for loss in losses), losses
    assert losses[-1] < losses[0], losses
    model.save_weights(tmp_path / "tiny.weights.h5")
    reloaded = twin.build(architecture)
    reloaded.load_weights(tmp_path / "tiny.weights.h5")
    _equal_outputs(
        twin.outputs(architecture, model, inputs, labels),
        twin.outputs(architecture, reloaded, inputs, labels),
        atol=1e-6,
    )
    if architecture == "tacotron2":
        (spoken,) = model.infer(["a tiny test"], max_decoder_steps=5)
        assert spoken["mel"].shape[1] == model.num_mels and 0 < len(spoken["mel"]) <= 5 * 3
        assert spoken["alignment"].shape[1] == len(model.vocabulary.encode("a tiny test"))


@pytest.mark.skipif(BACKEND != "tensorflow", reason="compares TensorFlow with a JAX subprocess")
def test_jax_computes_what_tensorflow_computes_from_the_same_weights(tmp_path):
    pytest.importorskip("jax")
    expected = {}
    for architecture in twin.ARCHITECTURES:
        model = twin.build(architecture)
        inputs, labels = twin.batch(architecture, model)
        model.fit(inputs, labels, epochs=3, verbose=0)  # weights away from their initial values
        model.save_weights(tmp_path / f"{architecture}.weights.h5")
        np.savez(
            tmp_path / f"{architecture}.batch.npz",
            labels=labels,
            **{f"in_{key}": value for key, value in inputs.items()},
        )
        expected[architecture] = twin.outputs(architecture, model, inputs, labels)
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests/no_tensorflow.py"), str(ROOT / "tests/backend_twin.py")]
        + [str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for architecture, tensorflow_outputs in expected.items():
        jax_outputs = dict(np.load(tmp_path / f"{architecture}.jax.npz"))
        _equal_outputs(tensorflow_outputs, jax_outputs)


def _apply(optimizer, grads, variables):
    """One update as `fit` makes it on this backend: stateful on TensorFlow, stateless under jit on JAX."""
    if BACKEND != "jax":
        optimizer.apply(grads, variables)
        return
    import jax

    step = jax.jit(optimizer.stateless_apply)
    new_variables, new_state = step(
        [v.value for v in optimizer.variables], grads, [v.value for v in variables]
    )
    for variable, value in zip([*variables, *optimizer.variables], [*new_variables, *new_state]):
        variable.assign(value)


def _expected_scales(algorithm: str, gradients: list, scale: float, settings: dict) -> list:
    """The loss scale after each step, by each rule's definition (NumPy)."""
    scales, good = [], 0
    mean = square = count = 0.0
    for gradient in gradients:
        finite = bool(np.isfinite(gradient).all())
        if algorithm == "dynamic":
            if not finite:
                scale, good = scale / 2, 0
            elif good == settings["growth_interval"] - 1:
                scale, good = scale * 2, 0
            else:
                good += 1
        elif algorithm == "logmax":
            log_max = 15.0
            x = np.log2(np.abs(np.asarray(gradient) / scale).max()) if finite else log_max
            count += 1
            mean = 0.99 * mean + 0.01 * x
            square = 0.999 * square + 0.001 * x * x
            m, s = mean / (1 - 0.99**count), square / (1 - 0.999**count)
            deviation = math.sqrt(max(s - m * m, 0.0))
            scale = 2.0 ** min(max(log_max - m - 3.09 * deviation, 0.0), 24.0)
        scales.append(scale)
    return scales


@pytest.mark.parametrize("algorithm", ["dynamic", "static", "logmax"])
def test_each_loss_scale_rule_moves_the_scale_by_its_definition(algorithm):
    from keras_s2s.precision.loss_scale import build_loss_scale_optimizer

    settings = {"algorithm": algorithm, "initial_scale": 1024.0}
    if algorithm == "dynamic":
        settings["growth_interval"] = 2
    weights = keras.Variable(np.ones(3, "float32"))
    optimizer = build_loss_scale_optimizer(keras.optimizers.SGD(0.5), dict(settings))
    optimizer.build([weights])
    gradients = [
        np.array([512.0, -256.0, 1024.0], "float32"),
        np.array([np.inf, 1.0, 1.0], "float32"),
        np.array([300.0, 2.0, -8.0], "float32"),
        np.array([64.0, 64.0, 64.0], "float32"),
        np.array([np.nan, 0.0, 0.0], "float32"),
        np.array([2048.0, 1.0, 1.0], "float32"),
    ]
    expected_weights = np.ones(3)
    scales, scale = [], 1024.0
    expected = _expected_scales(algorithm, gradients, 1024.0, settings)
    for gradient in gradients:
        before = float(keras.ops.convert_to_numpy(optimizer.dynamic_scale))
        _apply(optimizer, [keras.ops.convert_to_tensor(gradient)], [weights])
        if np.isfinite(gradient).all():
            expected_weights = expected_weights - 0.5 * gradient / before
        scale = float(keras.ops.convert_to_numpy(optimizer.dynamic_scale))
        scales.append(scale)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(weights), expected_weights, rtol=1e-5)
    np.testing.assert_allclose(scales, expected, rtol=1e-4)
    if algorithm == "static":
        assert set(scales) == {1024.0}
    else:
        assert len(set(scales)) > 1  # the rule moved the scale


def test_bucketed_pairs_serve_every_pair_once_a_pass_in_one_shape_per_bucket():
    from keras_s2s.data.pipeline import BucketedPairs

    rng = np.random.default_rng(0)
    pairs = [
        (
            list(rng.integers(4, 50, rng.integers(1, 30))) + [3],
            list(rng.integers(4, 50, rng.integers(1, 30))),
        )
        for _ in range(200)
    ]
    batches = BucketedPairs(pairs, [16, 16, 8, 8], bucket_width=8, shuffle=True, seed=1)
    seen = []
    for index in range(len(batches)):
        inputs, labels = batches[index]
        width = inputs["source"].shape[1]
        assert (
            width % 8 == 0 and inputs["target_in"].shape == labels.shape == inputs["source"].shape
        )
        assert (inputs["target_in"][:, 0] == 2).all()  # BOS
        for source, target_in in zip(inputs["source"], inputs["target_in"]):
            seen.append((tuple(source[source > 0]), tuple(target_in[1:][target_in[1:] > 0])))
    assert sorted(seen) == sorted((tuple(s), tuple(t)) for s, t in pairs)
    widths = {(size, width) for size, width in batches.shapes()}
    assert len({width for _, width in widths}) <= 4  # one padded width per bucket
    endless = BucketedPairs(pairs, [16, 16, 8, 8], drop_remainder=True, repeat=True, seed=1)
    assert endless.num_batches is None
    first = [endless[i][0]["source"].shape for i in range(len(endless))]
    assert all(shape[0] in (16, 8) for shape in first)
    assert len({endless[i][0]["source"].shape for i in range(3 * len(endless))}) <= 4


@pytest.mark.skipif(BACKEND == "tensorflow", reason="tests/test_cli.py covers TensorFlow")
def test_the_command_line_trains_evaluates_and_translates_without_tensorflow(tmp_path, capsys):
    import sys as system

    from keras_s2s import cli

    run = tmp_path / "run"
    tiny = dict(units=16, num_layers=2, num_train=200, num_valid=16, num_test=8, vocab_size=200)
    tiny.update(batch_size=16, max_length=40, decode_max_length=16, epochs=1, steps_per_epoch=4)
    flags = [item for key, value in tiny.items() for item in ("--set", f"{key}={value}")]
    assert cli.main(["train", "gnmt_demo", "--data", "demo", "--out", str(run), *flags]) == 0
    assert "held-out BLEU" in capsys.readouterr().out
    assert {"model.keras", "history.json", "fit.json", "eval.json", "preset"} <= {
        p.name for p in run.iterdir()
    }
    assert "tensorflow" not in system.modules
    (tmp_path / "in.txt").write_text("the dog sees a cat\n")
    assert (
        cli.main(
            [
                "translate",
                "--model",
                str(run),
                "--input",
                str(tmp_path / "in.txt"),
                "--beam-width",
                "2",
            ]
        )
        == 0
    )
    assert len(capsys.readouterr().out.strip().splitlines()) == 1
    assert cli.main(["export", "--model", str(run), "--out", str(tmp_path / "served")]) == 2
    assert "needs Keras's TensorFlow backend" in capsys.readouterr().err
    assert not (tmp_path / "served").exists()
