"""`run_layer_test`: the checks every registered layer passes (as keras-hub's `run_layer_test` does).

1. Every constructor argument given comes back in `get_config()`.
2. `from_config(get_config())` rebuilds the same config; Keras's registry names the class
   (`serialize_keras_object` -> `deserialize_keras_object`).
3. The rebuilt layer, given the original's weights, computes the same outputs.
"""

import keras
import numpy as np


def _as_list(outputs):
    if isinstance(outputs, (list, tuple)):
        return [o for item in outputs for o in _as_list(item)]
    if isinstance(outputs, dict):
        return [o for key in sorted(outputs) for o in _as_list(outputs[key])]
    return [keras.ops.convert_to_numpy(outputs)]


def run_layer_test(cls, init_kwargs: dict, call, expected_shapes: list | None = None):
    """Build `cls(**init_kwargs)`, run `call(layer)` (inference), and check the config round trip.

    Returns the outputs of `call` (as a list of arrays) for further checks.
    """
    layer = cls(**init_kwargs)
    outputs = _as_list(call(layer))
    if expected_shapes is not None:
        assert [tuple(o.shape) for o in outputs] == [tuple(s) for s in expected_shapes]
    config = layer.get_config()
    for key, value in init_kwargs.items():
        stored = config[key]
        assert (list(stored) if isinstance(stored, tuple) else stored) == (
            list(value) if isinstance(value, tuple) else value
        ), f"{cls.__name__}.get_config() lost {key}"
    clone = cls.from_config(config)
    assert clone.get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(revived) is cls and revived.get_config() == config
    call(clone)  # builds its weights
    clone.set_weights(layer.get_weights())
    for before, after in zip(outputs, _as_list(call(clone))):
        np.testing.assert_allclose(before, after, rtol=1e-5, atol=1e-6)
    return outputs
