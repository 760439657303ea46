"""`run_model_test`: the checks every zoo architecture passes, on either Keras backend (as keras-hub's
`run_task_test`, `run_preset_test` and `run_precision_test` do for its models).

1. Config: `from_config(get_config())` rebuilds the same config, and Keras's registry names the class
   (`serialize_keras_object` -> `deserialize_keras_object`).
2. Training: a few epochs of `fit` on one batch give finite losses that fall.
3. Saving: a `.keras` file, loaded again, computes the same outputs and decodes the same.
4. bfloat16: built under `mixed_bfloat16`, the model computes in bfloat16, keeps float32 weights and
   its outputs are finite (training under mixed precision is tests/test_precision.py's).

Example:
    >>> run_model_test(lambda **s: zoo.load("gnmt_demo", units=16, **s), make_batch,
    ...                lambda model, inputs, labels: {"ids": model.generate(inputs["source"])},
    ...                tmp_path)
"""

from __future__ import annotations

import math

import keras
import numpy as np


def assert_same_outputs(first: dict, second: dict, atol: float = 1e-4) -> None:
    """Equal arrays (ids, strings) and close ones (floats), key by key."""
    assert set(first) == set(second)
    for key in first:
        a, b = np.asarray(first[key]), np.asarray(second[key])
        if a.dtype.kind in "iuUSO":
            np.testing.assert_array_equal(a, b, err_msg=key)
        else:
            np.testing.assert_allclose(a, b, atol=atol, rtol=1e-5, err_msg=key)


def check_config_round_trip(model: keras.Model) -> None:
    """The config rebuilds an equal config, through the class and through Keras's registry."""
    config = model.get_config()
    cls = type(model)
    assert cls.from_config(config).get_config() == config, f"{cls.__name__}: config changed"
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    assert type(revived) is cls and revived.get_config() == config


def run_model_test(build, make_batch, outputs, tmp_path, epochs: int = 4, atol: float = 1e-4):
    """Run the model-level checks on the model `build()` makes; returns it, trained.

    Args:
        build: callable(**settings) -> compiled model; `build(precision="mixed_bfloat16")` too.
        make_batch: callable(model) -> (inputs, labels), one batch the model trains on.
        outputs: callable(model, inputs, labels) -> dict of arrays: what the model computes and
            decodes, compared after the `.keras` round trip.
        tmp_path: a folder for the `.keras` file.
    """
    model = build()
    inputs, labels = make_batch(model)
    check_config_round_trip(model)
    losses = model.fit(inputs, labels, epochs=epochs, verbose=0).history["loss"]
    assert all(math.isfinite(loss) for loss in losses), losses
    assert losses[-1] < losses[0], losses
    check_config_round_trip(model)  # built and trained: the same config
    path = tmp_path / f"{model.name}.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert type(reloaded) is type(model)
    assert_same_outputs(outputs(model, inputs, labels), outputs(reloaded, inputs, labels), atol)
    half = build(precision="mixed_bfloat16")
    assert half.dtype_policy.compute_dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in half.trainable_weights)
    for output in keras.tree.flatten(half(inputs, training=False)):
        assert np.isfinite(keras.ops.convert_to_numpy(output).astype("float32")).all()
    keras.mixed_precision.set_global_policy("float32")
    return model
