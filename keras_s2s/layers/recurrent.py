"""LSTM and GRU layers whose input projection runs outside the recurrence.

Keras's LSTM/GRU run the whole cell at every time step on a CPU: the
input-to-hidden matmul `x_t @ W` (and, under mixed precision, a cast of
every weight) inside the loop, T small matmuls forward and T more for the
kernel's gradient. These subclasses compute `x @ W + b` for all steps as one
large matmul before the loop and keep only `h @ U` and the gates inside
it. The LSTM casts U once and computes its gradient after the loop in one
matmul, sum_t h_{t-1}^T dz_t (accumulated in float32 inside the matmul);
the GRU, whose gates make dz_t unavailable outside the loop, takes U into
the loop in float32 and casts it there, so its gradient is summed over the
steps in float32, as Keras sums it. The same math, with the same masking,
`go_backwards` and state semantics as Keras's loop (outputs of padded
steps are zero or repeat the last real one, states carry through padding).

They take the fast path on CPUs when the layer has no dropout, no
recurrent dropout and is not unrolled; on GPUs they defer to Keras, which
takes the cuDNN kernel where it can. Weights, config and saved files are
those of `keras.layers.LSTM` / `GRU` (same weight names and shapes).

Example:
    >>> layer = LSTM(256, return_sequences=True)
    >>> y = layer(x, mask=mask)    # [B, T, 256], equal to keras.layers.LSTM's output
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops


def _hoisting_applies(layer, training) -> bool:
    cell = layer.cell
    dropout = training and (cell.dropout or cell.recurrent_dropout)
    return not (dropout or layer.unroll or tf.config.list_logical_devices("GPU"))


def loop_weight(weight):
    """A weight used at every step of a loop, as a float32 tensor read once before it.

    Cast it to the compute dtype inside the loop: the gradient of a tensor a
    loop captures is summed over the steps in that tensor's dtype, and a
    float32 sum keeps what a bfloat16 sum of many steps would round away.
    """
    return ops.cast(weight, "float32")


def _time_major(x):
    return tf.transpose(x, [1, 0] + list(range(2, len(x.shape))))


def _with_recurrent_gradient(inputs, kernel, holder):
    """`inputs` (time-major pre-activations x_t @ W + b) unchanged; their gradient also gives `kernel`'s.

    z_t = inputs_t + h_{t-1} @ U, so dL/dU = sum_t h_{t-1}^T dL/dz_t and
    dL/dz_t = dL/dinputs_t: one large matmul after the loop (accumulated in
    float32 by the matmul) instead of T small ones and T casts inside it.
    `holder["previous_h"]` [T, B, U] is filled by the loop before any gradient is taken.
    """

    @tf.custom_gradient
    def identity(x, u):
        def gradient(upstream):
            previous_h = tf.reshape(holder["previous_h"], [-1, u.shape[0]])
            return upstream, tf.matmul(previous_h, tf.reshape(upstream, [-1, u.shape[1]]), transpose_a=True)

        return tf.identity(x), gradient

    return identity(inputs, kernel)


def run_recurrence(step, projected, initial_state, mask, go_backwards: bool, zero_output_for_mask: bool,
                   recurrent_kernel=None):
    """Run `step(projected_t, states) -> (output, states)` over time, Keras `backend.rnn` style.

    projected: [B, T, G] batch-major inputs of every step (already projected).
    recurrent_kernel: U [H, G] when `step` adds `states[0] @ tf.stop_gradient(U)`
        to its input: U's gradient is then computed after the loop in one matmul.
    Returns (last output [B, U], outputs [B, T, U] in processing order, final states).
    """
    inputs = _time_major(projected)
    masks = None if mask is None else _time_major(tf.cast(mask, tf.bool))
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
        masks = None if masks is None else tf.reverse(masks, [0])
    holder = {}
    if recurrent_kernel is not None:
        inputs = _with_recurrent_gradient(inputs, recurrent_kernel, holder)
    steps = tf.shape(inputs)[0]
    input_ta = tf.TensorArray(inputs.dtype, size=steps).unstack(inputs)
    mask_ta = None if masks is None else tf.TensorArray(tf.bool, size=steps).unstack(masks)
    output_ta = tf.TensorArray(inputs.dtype, size=steps)
    previous_ta = tf.TensorArray(initial_state[0].dtype, size=steps)  # the h each step starts from
    zero_output = tf.zeros_like(initial_state[0])

    def body(time, outputs, previous_h, previous, *states):
        previous_h = previous_h.write(time, states[0])
        output, new_states = step(input_ta.read(time), list(states))
        if mask_ta is not None:
            keep = mask_ta.read(time)[:, None]
            output = tf.where(keep, output, zero_output if zero_output_for_mask else previous)
            new_states = [tf.where(keep, new, old) for new, old in zip(new_states, states)]
        return (time + 1, outputs.write(time, output), previous_h, output, *new_states)

    final = tf.while_loop(lambda time, *_: time < steps, body,
                          (tf.constant(0), output_ta, previous_ta, zero_output, *initial_state),
                          parallel_iterations=32, swap_memory=True)
    if recurrent_kernel is not None:
        holder["previous_h"] = tf.stop_gradient(final[2].stack())
    outputs = _time_major(final[1].stack())
    return final[3], outputs, list(final[4:])


def lstm_gates(cell, z, c):
    """New (h, c) of an LSTM cell from its pre-activations z [B, 4U] (i, f, g, o as Keras orders them)."""
    i, f, g, o = tf.split(z, 4, axis=-1)
    c = cell.recurrent_activation(f) * c + cell.recurrent_activation(i) * cell.activation(g)
    return cell.recurrent_activation(o) * cell.activation(c), c


@keras.saving.register_keras_serializable(package="keras_s2s")
class LSTM(keras.layers.LSTM):
    """`keras.layers.LSTM` (same arguments and weights) with the input projection hoisted out of the loop."""

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if not _hoisting_applies(self, training):
            return super().inner_loop(sequences, initial_state, mask, training=training)
        cell, dtype = self.cell, self.cell.compute_dtype
        projected = ops.matmul(sequences, ops.cast(cell.kernel, dtype))
        if cell.use_bias:
            projected = projected + ops.cast(cell.bias, dtype)
        recurrent_kernel = ops.cast(cell.recurrent_kernel, dtype)  # cast once; its gradient: after the loop
        frozen = tf.stop_gradient(recurrent_kernel)

        def step(z, states):
            h, c = lstm_gates(cell, z + tf.matmul(states[0], frozen), states[1])
            return h, [h, c]

        mask = mask[0] if isinstance(mask, (list, tuple)) else mask
        return run_recurrence(step, projected, list(initial_state), mask, self.go_backwards,
                              self.zero_output_for_mask, recurrent_kernel=recurrent_kernel)


@keras.saving.register_keras_serializable(package="keras_s2s")
class GRU(keras.layers.GRU):
    """`keras.layers.GRU` (same arguments and weights) with the input projection hoisted out of the loop.

    Only the default `reset_after=True` form is hoisted; `reset_after=False` runs Keras's loop.
    """

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if not (_hoisting_applies(self, training) and self.cell.reset_after):
            return super().inner_loop(sequences, initial_state, mask, training=training)
        cell, dtype = self.cell, self.cell.compute_dtype
        projected = ops.matmul(sequences, ops.cast(cell.kernel, dtype))
        recurrent_bias = None
        if cell.use_bias:
            projected = projected + ops.cast(cell.bias[0], dtype)
            recurrent_bias = loop_weight(cell.bias[1])
        recurrent_kernel = loop_weight(cell.recurrent_kernel)

        def step(x, states):
            h = states[0]
            inner = tf.matmul(h, tf.cast(recurrent_kernel, dtype))
            if recurrent_bias is not None:
                inner = inner + tf.cast(recurrent_bias, dtype)
            x_z, x_r, x_h = tf.split(x, 3, axis=-1)
            h_z, h_r, h_h = tf.split(inner, 3, axis=-1)
            z = cell.recurrent_activation(x_z + h_z)
            r = cell.recurrent_activation(x_r + h_r)
            candidate = cell.activation(x_h + r * h_h)
            h = z * h + (1 - z) * candidate
            return h, [h]

        mask = mask[0] if isinstance(mask, (list, tuple)) else mask
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        return run_recurrence(step, projected, states, mask, self.go_backwards, self.zero_output_for_mask)
