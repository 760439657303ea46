"""Shared layers."""

from keras_s2s.layers.attention import NormalizedBahdanauAttention

__all__ = ["NormalizedBahdanauAttention"]
