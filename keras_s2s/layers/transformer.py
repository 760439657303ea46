"""Transformer blocks (Vaswani et al. 2017) with a key/value cache for decoding.

Why not keras-hub's TransformerEncoder/TransformerDecoder: they compute the
attention softmax in the compute dtype (bfloat16/float16 under mixed
precision) and do not return cross-attention weights, which the coverage
penalty and attention plots need. These blocks keep scores, softmax and
layer normalization in float32 and matmuls in the compute dtype. The
embeddings and positions do come from keras-hub (see `models/transformer.py`).

Example:
    >>> block = TransformerDecoderBlock(d_model=64, num_heads=4, ffn_dim=128)
    >>> y, weights = block(x, memory_kv=block.cross_attention.project_kv(memory), memory_mask=mask)
"""

from __future__ import annotations

import keras
from keras import ops

from keras_s2s.layers.attention import masked_softmax
from keras_s2s.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="keras_s2s")
class Float32LayerNorm(keras.layers.LayerNormalization):
    """Layer normalization computed in float32; returns the input's dtype."""

    def __init__(self, **kwargs):
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)

    def call(self, inputs):
        return ops.cast(super().call(ops.cast(inputs, "float32")), inputs.dtype)


@keras.saving.register_keras_serializable(package="keras_s2s")
class MultiHeadAttention(keras.layers.Layer):
    """Scaled dot-product attention with float32 softmax.

    Args:
        d_model: int. Model width (query/output size).
        num_heads: int. Heads; `d_model` must divide by it.
        dropout: float. Dropout on the attention weights.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.dropout = d_model, num_heads, dropout
        self.head_dim = d_model // num_heads
        dense = lambda name: keras.layers.Dense(d_model, dtype=self.dtype_policy, name=name)  # noqa: E731
        self.query_dense, self.key_dense, self.value_dense = (
            dense("query"),
            dense("key"),
            dense("value"),
        )
        self.output_dense = dense("output")
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)

    def _split(self, x):
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], shape[1], self.num_heads, self.head_dim))

    def project_kv(self, x):
        """Keys and values [B, L, H, Dh] of `x` [B, L, D]."""
        return self._split(self.key_dense(x)), self._split(self.value_dense(x))

    def call(self, query, keys, values, mask=None, training=False):
        """Output [B, T, D] and float32 weights averaged over heads [B, T, L].

        `keys`/`values` are projected ([B, L, H, Dh], from `project_kv`);
        `mask` [B, T, L] or broadcastable, True where attending is allowed.
        """
        q = self._split(self.query_dense(query)) * ops.cast(self.head_dim**-0.5, query.dtype)
        scores = ops.einsum("bthd,blhd->bhtl", q, keys)
        weights = masked_softmax(scores, None if mask is None else ops.expand_dims(mask, 1))
        dropped = self.dropout_layer(weights, training=training)
        context = ops.einsum("bhtl,blhd->bthd", ops.cast(dropped, values.dtype), values)
        shape = ops.shape(context)
        output = self.output_dense(ops.reshape(context, (shape[0], shape[1], self.d_model)))
        return output, ops.mean(weights, axis=1)

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "dropout": self.dropout,
        }


class _Block(keras.layers.Layer):
    """Shared parts: residual sublayers with pre- or post-normalization, the feed-forward net."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float = 0.1,
        normalize_first: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.d_model, self.num_heads, self.ffn_dim = d_model, num_heads, ffn_dim
        self.dropout, self.normalize_first = dropout, normalize_first
        policy = self.dtype_policy
        self.ffn_in = keras.layers.Dense(ffn_dim, activation="relu", dtype=policy, name="ffn_in")
        self.ffn_out = keras.layers.Dense(d_model, dtype=policy, name="ffn_out")
        self.dropout_layer = Dropout(dropout, dtype=policy)

    def _residual(self, x, norm, sublayer, training):
        """x + sublayer(norm(x)) (pre-norm) or norm(x + sublayer(x)) (post-norm)."""
        if self.normalize_first:
            return x + self.dropout_layer(sublayer(norm(x)), training=training)
        return norm(x + self.dropout_layer(sublayer(x), training=training))

    def _feed_forward(self, x, training):
        return self.ffn_out(self.dropout_layer(self.ffn_in(x), training=training))

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "ffn_dim": self.ffn_dim,
            "dropout": self.dropout,
            "normalize_first": self.normalize_first,
        }


@keras.saving.register_keras_serializable(package="keras_s2s")
class TransformerEncoderBlock(_Block):
    """Self-attention + feed-forward, each in a residual connection."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float = 0.1,
        normalize_first: bool = True,
        **kwargs,
    ):
        super().__init__(d_model, num_heads, ffn_dim, dropout, normalize_first, **kwargs)
        self.self_attention = MultiHeadAttention(
            d_model, num_heads, dropout, dtype=self.dtype_policy, name="self_attention"
        )
        self.attention_norm = Float32LayerNorm(epsilon=1e-6, name="attention_norm")
        self.ffn_norm = Float32LayerNorm(epsilon=1e-6, name="ffn_norm")

    def call(self, x, padding_mask=None, training=False):
        """x [B, S, D]; padding_mask [B, S] True at real tokens."""
        key_mask = None if padding_mask is None else ops.expand_dims(padding_mask, 1)

        def attend(h):
            keys, values = self.self_attention.project_kv(h)
            return self.self_attention(h, keys, values, key_mask, training=training)[0]

        x = self._residual(x, self.attention_norm, attend, training)
        return self._residual(x, self.ffn_norm, lambda h: self._feed_forward(h, training), training)


@keras.saving.register_keras_serializable(package="keras_s2s")
class TransformerDecoderBlock(_Block):
    """Causal self-attention, cross-attention and feed-forward, each in a residual connection.

    Training runs all steps at once (`call`); decoding runs one step at a
    time (`step`) with a key/value cache of the steps so far, so a step
    never recomputes the prefix.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float = 0.1,
        normalize_first: bool = True,
        **kwargs,
    ):
        super().__init__(d_model, num_heads, ffn_dim, dropout, normalize_first, **kwargs)
        policy = self.dtype_policy
        self.self_attention = MultiHeadAttention(
            d_model, num_heads, dropout, dtype=policy, name="self_attention"
        )
        self.cross_attention = MultiHeadAttention(
            d_model, num_heads, dropout, dtype=policy, name="cross_attention"
        )
        self.self_norm = Float32LayerNorm(epsilon=1e-6, name="self_attention_norm")
        self.cross_norm = Float32LayerNorm(epsilon=1e-6, name="cross_attention_norm")
        self.ffn_norm = Float32LayerNorm(epsilon=1e-6, name="ffn_norm")

    def _cross_and_ffn(self, x, memory_kv, memory_mask, training):
        weights = []

        def attend(h):
            out, w = self.cross_attention(
                h, *memory_kv, ops.expand_dims(memory_mask, 1), training=training
            )
            weights.append(w)
            return out

        x = self._residual(x, self.cross_norm, attend, training)
        x = self._residual(x, self.ffn_norm, lambda h: self._feed_forward(h, training), training)
        return x, weights[0]

    def call(self, x, memory_kv, memory_mask, training=False):
        """x [B, T, D] -> (output [B, T, D], cross-attention weights [B, T, S])."""
        steps = ops.shape(x)[1]
        causal = ops.expand_dims(ops.arange(steps)[:, None] >= ops.arange(steps)[None, :], 0)

        def attend(h):
            keys, values = self.self_attention.project_kv(h)
            return self.self_attention(h, keys, values, causal, training=training)[0]

        x = self._residual(x, self.self_norm, attend, training)
        return self._cross_and_ffn(x, memory_kv, memory_mask, training)

    def step(self, x, cache, position, memory_kv, memory_mask):
        """One decoding step.

        Args:
            x: [B, 1, D] input of this step.
            cache: (keys, values), each [B, L, H, Dh]: this block's cache.
            position: [B] int, index of this step (the same in every row).
            memory_kv, memory_mask: projected encoder output and its mask.
        Returns: output [B, 1, D], the updated cache, cross-attention weights [B, 1, S].
        """
        slots = ops.arange(ops.shape(cache[0])[1])[None, :]  # [1, L]
        # [B, L, 1, 1]
        is_now = ops.expand_dims(ops.expand_dims(slots == position[:, None], -1), -1)

        updated = []

        def attend(h):
            new_keys, new_values = self.self_attention.project_kv(h)  # [B, 1, H, Dh]
            keys = ops.where(is_now, new_keys, cache[0])
            values = ops.where(is_now, new_values, cache[1])
            updated.append((keys, values))
            visible = ops.expand_dims(slots <= position[:, None], 1)  # [B, 1, L]
            return self.self_attention(h, keys, values, visible)[0]

        x = self._residual(x, self.self_norm, attend, False)
        x, weights = self._cross_and_ffn(x, memory_kv, memory_mask, False)
        return x, updated[0], weights
