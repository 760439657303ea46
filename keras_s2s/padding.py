"""Padding lengths to a multiple of 8, the sizes that tensor cores and oneDNN's bfloat16 kernels run fastest at.

Example:
    >>> round_up(61), round_up(64), round_up(5, 4)
    (64, 64, 8)
    >>> pad_multiple_for("mixed_bfloat16"), pad_multiple_for("float32")
    (8, 1)
"""

from __future__ import annotations

PAD_MULTIPLE = 8


def round_up(length: int, multiple: int = PAD_MULTIPLE) -> int:
    """The smallest multiple of `multiple` that is at least `length`."""
    return -(-int(length) // multiple) * multiple


def pad_multiple_for(policy: str) -> int:
    """What a batch's time axis is padded to under a precision policy: 8 for 16-bit compute, else 1 (none)."""
    return PAD_MULTIPLE if policy != "float32" else 1


def pad_time_to_multiple(tensor, multiple: int = PAD_MULTIPLE):
    """`tensor` [B, T, ...] with zeros appended along T up to a multiple of `multiple`."""
    import tensorflow as tf

    length = tf.shape(tensor)[1]
    paddings = [[0, 0], [0, (-length) % multiple]] + [[0, 0]] * (len(tensor.shape) - 2)
    return tf.pad(tensor, paddings)
