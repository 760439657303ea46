"""The native engine at another compute type: float32, bfloat16 or Keras's int8 weight quantization.

A run's model keeps the precision it trained in (mixed_bfloat16 on CPUs with
AVX512-BF16); `with_compute_type` gives a copy that decodes in float32 or
bfloat16, or with int8 weights (`keras.Model.quantize("int8")`: the Dense and
embedding layers store int8 weights and quantize their inputs per call;
normalization, recurrent and convolution layers keep their float weights).

Example:
    >>> model = with_compute_type(keras.saving.load_model("runs/transformer_demo/model.keras"), "int8")
    >>> model.translate(["the dog sees a cat"], beam_width=4)
"""

from __future__ import annotations

import contextlib
import gc
import warnings

import keras

# compute type -> (policy the copy runs in, whether its weights are quantized to int8)
NATIVE_COMPUTE_TYPES = {
    "default": (None, False),
    "float32": ("float32", False),
    "bfloat16": ("mixed_bfloat16", False),
    "float16": ("mixed_float16", False),
    "int8": ("float32", True),
}
# not offered: int8 weights under mixed_bfloat16 (Keras 3.15's quantized ReversibleEmbedding returns
# float32 in a bfloat16 model, and the Transformer's full-sequence call fails on the dtype mismatch)


def check_compute_type(compute_type: str) -> tuple[str | None, bool]:
    """(policy, quantize) of a native compute type; a ValueError naming the choices for another."""
    if compute_type not in NATIVE_COMPUTE_TYPES:
        raise ValueError(
            f"compute type {compute_type!r} is not one of the native engine's: "
            f"{', '.join(NATIVE_COMPUTE_TYPES)}"
        )
    return NATIVE_COMPUTE_TYPES[compute_type]


def with_compute_type(model: keras.Model, compute_type: str = "default") -> keras.Model:
    """`model` itself for `default`, else a copy with the same weights at `compute_type`
    (one of `NATIVE_COMPUTE_TYPES`; `int8` quantizes the copy's weights, activations in float32)."""
    policy, quantize = check_compute_type(compute_type)
    if policy is None:
        return model
    if policy != model.dtype_policy.name or quantize:  # quantize changes a model in place: a copy
        config = {**model.get_config(), "dtype": policy}
        copy = model.__class__.from_config(config)
        copy.build()
        copy.set_weights(model.get_weights())
        # a preset's search (not in the config)
        copy.default_decoding = dict(model.default_decoding)
        model = copy
    if quantize:
        with warnings.catch_warnings(), _collecting_once():
            # "Layer X does not have a `quantize` method": kept in float
            warnings.filterwarnings("ignore", message=".*does not have a `quantize` method")
            model.quantize("int8")
    return model


@contextlib.contextmanager
def _collecting_once():
    """One garbage collection after the block instead of one per variable removed in it.

    Keras's `Layer.__delattr__` runs a full `gc.collect()` for every float kernel that
    `quantize` replaces (to free device buffers at once): 33 in a tiny Transformer, 0.6 s each
    in a fresh process and several seconds each in one holding many objects (the test suite's:
    100-200 s for one quantize). Collecting once at the end frees the same memory.
    """
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        yield
    finally:
        gc.collect = collect
        gc.collect()
