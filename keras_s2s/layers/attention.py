"""Normalized Bahdanau (additive) attention, as used by GNMT.

score(q, k) = g * (v / |v|) . tanh(W_q q + W_k k + b). Scores, the mask and
the softmax compute in float32 under every precision policy.

Example:
    >>> attention = NormalizedBahdanauAttention(units=64)
    >>> context, weights = attention(query, memory, memory_mask)  # [B,T,D], [B,T,S]
"""

from __future__ import annotations

import math

import keras
from keras import ops


def masked_softmax(scores, mask=None):
    """Softmax over the last axis, in float32 under every precision policy, of `scores` where `mask`
    (broadcastable, True = attend) allows; masked places get weight 0.

    Example:
        >>> masked_softmax(ops.zeros((1, 3)), ops.array([[True, True, False]]))   # [[0.5, 0.5, 0.0]]
    """
    scores = ops.cast(scores, "float32")
    if mask is not None:
        scores = ops.where(mask, scores, -1e9)
    return ops.softmax(scores, axis=-1)


@keras.saving.register_keras_serializable(package="keras_s2s")
class NormalizedBahdanauAttention(keras.layers.Layer):
    """Additive attention of every query step over a memory.

    Args:
        units: int. Size of the attention hidden layer.
    """

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.query_dense = keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name="query"
        )
        self.memory_dense = keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name="memory"
        )

    def build(self, query_shape, memory_shape=None, memory_mask_shape=None):
        self.query_dense.build(query_shape)
        if memory_shape is not None and not self.memory_dense.built:
            self.memory_dense.build(memory_shape)
        self.v = self.add_weight(name="v", shape=(self.units,), initializer="glorot_uniform")
        self.g = self.add_weight(
            name="g", shape=(), initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units))
        )
        self.b = self.add_weight(name="b", shape=(self.units,), initializer="zeros")

    def project_memory(self, memory):
        """Keys W_k k, computed once per source sentence."""
        return self.memory_dense(memory)

    def call(self, query, memory, memory_mask=None, keys=None):
        """Context [B,T,D] and float32 weights [B,T,S] for query [B,T,Q], memory [B,S,D]."""
        if keys is None:
            keys = self.project_memory(memory)
        projected = self.query_dense(query)
        hidden = ops.tanh(
            ops.expand_dims(projected, 2) + ops.expand_dims(keys, 1) + ops.cast(self.b, keys.dtype)
        )
        normed_v = self.g * self.v / ops.sqrt(ops.sum(ops.square(self.v)))
        scores = ops.einsum("btsa,a->bts", hidden, ops.cast(normed_v, hidden.dtype))
        weights = masked_softmax(
            scores, None if memory_mask is None else ops.expand_dims(memory_mask, 1)
        )
        context = ops.einsum("bts,bsd->btd", ops.cast(weights, memory.dtype), memory)
        return context, weights

    def compute_output_spec(self, query, memory, memory_mask=None, keys=None):
        batch, steps = query.shape[0], query.shape[1]
        return (
            keras.KerasTensor((batch, steps, memory.shape[-1]), dtype=self.compute_dtype),
            keras.KerasTensor((batch, steps, memory.shape[1]), dtype="float32"),
        )

    def get_config(self):
        return {**super().get_config(), "units": self.units}
