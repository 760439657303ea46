"""LSTM and GRU layers whose input projection runs outside the recurrence.

Keras's LSTM/GRU run the whole cell at every time step on a CPU: the
input-to-hidden matmul `x_t @ W` (and, under mixed precision, a cast of
every weight) inside the loop, T small matmuls forward and T more for the
kernel's gradient. These subclasses compute `x @ W + b` for all steps as one
large matmul before the loop and keep only `h @ U` and the gates inside
it. The recurrent weights U (and the GRU's recurrent bias) are cast once
and get their gradient after the loop, as one matmul sum_t h_{t-1}^T
d inner_t (accumulated in float32 inside the matmul; see
`RecurrentWeights`), instead of T small matmuls and casts in the backward
loop. The same math, with the same masking,
`go_backwards` and state semantics as Keras's loop (outputs of padded
steps are zero or repeat the last real one, states carry through padding).

They take the fast path on TensorFlow on CPUs when the layer has no dropout, no
recurrent dropout and is not unrolled; on GPUs they defer to Keras, which
takes the cuDNN kernel where it can; on JAX they are Keras's layers. Weights, config and saved files are
those of `keras.layers.LSTM` / `GRU` (same weight names and shapes).

Example:
    >>> layer = LSTM(256, return_sequences=True)
    >>> y = layer(x, mask=mask)    # [B, T, 256], equal to keras.layers.LSTM's output
"""

from __future__ import annotations

import keras
from keras import ops

from keras_s2s.backend import is_tensorflow, tf


def _hoisting_applies(layer, training) -> bool:
    """Whether `layer` runs the hoisted loop: not with in-cell dropout (while training), unroll, or a GPU."""
    cell = layer.cell
    dropout = training and (cell.dropout or cell.recurrent_dropout)
    if not is_tensorflow():  # JAX and torch: Keras's own loop (cuDNN where Keras takes it)
        return False
    return not (dropout or layer.unroll or tf.config.list_logical_devices("GPU"))


def cell_hoisting_applies(cell, training) -> bool:
    """Whether a decoder loop runs `cell` as a `LoopLSTMCell` (not with in-cell dropout while training)."""
    return is_tensorflow() and not (training and (cell.dropout or cell.recurrent_dropout))


def _project(cell, sequences, bias):
    """x @ W (+ the input bias) for all time steps at once, in the compute dtype."""
    dtype = cell.compute_dtype
    projected = ops.matmul(sequences, ops.cast(cell.kernel, dtype))
    return projected if bias is None else projected + ops.cast(bias, dtype)


def _steps(x):
    """The length of axis 0: a Python int when the shape is static (XLA needs TensorArrays of a fixed size)."""
    return x.shape[0] if x.shape[0] is not None else tf.shape(x)[0]


def _time_major(x):
    return tf.transpose(x, [1, 0] + list(range(2, len(x.shape))))


class RecurrentWeights:
    """The weights a loop applies to h_{t-1} at every step (U, optionally a bias b), with their gradient
    computed after the loop.

    A step computes `inner_t = h_{t-1} @ U (+ b)` with `frozen()` weights (no
    gradient inside the loop) and adds it to its slice p_t of the hoisted
    projection. With `d_inner(dp, stacked)` giving dL/d inner_t from dL/dp_t
    (and what the steps saved), dL/dU = sum_t h_{t-1}^T dL/d inner_t is one
    large matmul (accumulated in float32 inside the matmul) and dL/db one sum,
    instead of T small matmuls, T gradient accumulations and, under mixed
    precision, 2 T weight casts inside the backward loop.
    """

    def __init__(self, kernel, bias=None, d_inner=lambda upstream, stacked: upstream):
        self.weights = [w for w in (kernel, bias) if w is not None]
        self.d_inner = d_inner
        self.stacked = {}  # filled by the loop: "previous_h" [T, B, H] and what the steps saved

    def frozen(self):
        return [tf.stop_gradient(w) for w in self.weights]

    def attach(self, inputs):
        """`inputs` [T, B, G] unchanged, with the weights' gradient attached to theirs."""
        units, size = self.weights[0].shape

        @tf.custom_gradient
        def identity(x, *weights):
            def gradient(upstream):
                inner = tf.reshape(self.d_inner(upstream, self.stacked), [-1, size])
                previous_h = tf.reshape(self.stacked["previous_h"], [-1, units])
                grads = [tf.matmul(previous_h, inner, transpose_a=True)]
                if len(weights) > 1:
                    grads.append(tf.reduce_sum(tf.cast(inner, "float32"), axis=0))
                return (upstream, *[tf.cast(g, w.dtype) for g, w in zip(grads, weights)])

            return tf.identity(x), gradient

        return identity(inputs, *self.weights)


def run_recurrence(
    step,
    projected,
    initial_state,
    mask,
    go_backwards: bool,
    zero_output_for_mask: bool,
    recurrent: RecurrentWeights,
    saved: tuple = (),
):
    """Run `step(projected_t, states) -> (output, states, saved)` over time, Keras `backend.rnn` style.

    projected: [B, T, G] batch-major inputs of every step (already projected).
    initial_state, mask: as Keras's `inner_loop` receives them (a state or a list; a mask or a list).
    recurrent: the weights the step applies to states[0].
    saved: names of the [B, ...] tensors a step returns in its dict (e.g. a
        GRU's reset gate), stacked over time for the weights' gradient.
    Returns (last output [B, U], outputs [B, T, U] in processing order, final states).
    """
    mask = mask[0] if isinstance(mask, (list, tuple)) else mask
    initial_state = (
        list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
    )
    inputs = _time_major(projected)
    masks = None if mask is None else _time_major(tf.cast(mask, tf.bool))
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
        masks = None if masks is None else tf.reverse(masks, [0])
    inputs = recurrent.attach(inputs)
    steps = _steps(inputs)
    input_ta = tf.TensorArray(inputs.dtype, size=steps).unstack(inputs)
    mask_ta = None if masks is None else tf.TensorArray(tf.bool, size=steps).unstack(masks)
    output_ta = tf.TensorArray(inputs.dtype, size=steps)
    saved_ta = {name: tf.TensorArray(inputs.dtype, size=steps) for name in (*saved, "previous_h")}
    zero_output = tf.zeros_like(initial_state[0])

    def body(time, outputs, saved, previous, *states):
        output, new_states, values = step(input_ta.read(time), list(states))
        values = {**values, "previous_h": states[0]}
        saved = {name: saved[name].write(time, values[name]) for name in saved}
        if mask_ta is not None:
            keep = mask_ta.read(time)[:, None]
            output = tf.where(keep, output, zero_output if zero_output_for_mask else previous)
            new_states = [tf.where(keep, new, old) for new, old in zip(new_states, states)]
        return (time + 1, outputs.write(time, output), saved, output, *new_states)

    final = tf.while_loop(
        lambda time, *_: time < steps,
        body,
        (tf.constant(0), output_ta, saved_ta, zero_output, *initial_state),
        parallel_iterations=32,
        swap_memory=True,
        maximum_iterations=steps,
    )
    recurrent.stacked.update({name: tf.stop_gradient(ta.stack()) for name, ta in final[2].items()})
    outputs = _time_major(final[1].stack())
    return final[3], outputs, list(final[4:])


def lstm_gates(cell, z, c):
    """New (h, c) of an LSTM cell from its pre-activations z [B, 4U] (i, f, g, o as Keras orders them)."""
    i, f, g, o = tf.split(z, 4, axis=-1)
    c = cell.recurrent_activation(f) * c + cell.recurrent_activation(i) * cell.activation(g)
    return cell.recurrent_activation(o) * cell.activation(c), c


class LoopLSTMCell:
    """A `keras.layers.LSTMCell` run inside a hand-written teacher-forced loop (e.g. Tacotron 2's decoder),
    with its weights cast once and their gradient computed after the loop.

    The cell's input at step t is [known_t, *step inputs]: `known` [T, B, K]
    (or None), inputs known for all steps before the loop (a teacher-forced
    pre-net output), are projected with their kernel rows in one matmul
    beforehand, with the bias. The step inputs and h_{t-1} meet the remaining
    rows and U as one matmul with `RecurrentWeights`; the loop saves their
    concatenation (`saved`, via `step`) and `finish` receives the stack.

    Example:
        >>> cell = LoopLSTMCell(keras_cell, known=features, steps=T, batch=B)
        >>> h, c, x = cell.step(t, [features_t, context], (h, c))   # inside the loop; save x
        >>> cell.finish(saved_x.stack())                    # after the loop
    """

    def __init__(self, cell, known=None, steps=None, batch=None):
        self.cell, dtype = cell, cell.compute_dtype
        self.known_inputs = 0 if known is None else 1
        kernel = ops.cast(cell.kernel, dtype)
        size = 4 * cell.units
        bias = ops.cast(cell.bias, dtype) if cell.use_bias else ops.zeros((size,), dtype)
        if known is not None:
            rows = known.shape[-1]
            additive = ops.matmul(known, kernel[:rows]) + bias
            kernel = kernel[rows:]
        else:
            additive = tf.broadcast_to(bias, tf.stack([steps, batch, size]))
        self.recurrent = RecurrentWeights(
            ops.concatenate([kernel, ops.cast(cell.recurrent_kernel, dtype)], 0)
        )
        (self.kernel,) = self.recurrent.frozen()
        additive = self.recurrent.attach(additive)
        self.additive = tf.TensorArray(additive.dtype, size=_steps(additive)).unstack(additive)

    def step(self, time, inputs, state):
        """(h, c, x) at step `time` from the cell's inputs (`known`'s slice first: ignored, it is projected
        already) and state (h, c); the loop saves x."""
        h, c = state
        x = ops.concatenate([*inputs[self.known_inputs :], h], -1)
        h, c = lstm_gates(self.cell, self.additive.read(time) + tf.matmul(x, self.kernel), c)
        return h, c, x

    def finish(self, stacked_inputs):
        """Hand the loop's stacked x [T, B, ...] to the weights' gradient."""
        self.recurrent.stacked["previous_h"] = tf.stop_gradient(stacked_inputs)


@keras.saving.register_keras_serializable(package="keras_s2s")
class LSTM(keras.layers.LSTM):
    """`keras.layers.LSTM` (same arguments and weights) with the input projection hoisted out of the loop."""

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if not _hoisting_applies(self, training):
            return super().inner_loop(sequences, initial_state, mask, training=training)
        cell, dtype = self.cell, self.cell.compute_dtype
        projected = _project(cell, sequences, cell.bias if cell.use_bias else None)
        # cast once, gradient after the loop
        recurrent = RecurrentWeights(ops.cast(cell.recurrent_kernel, dtype))
        (kernel,) = recurrent.frozen()

        def step(z, states):
            h, c = lstm_gates(cell, z + tf.matmul(states[0], kernel), states[1])
            return h, [h, c], {}

        return run_recurrence(
            step,
            projected,
            initial_state,
            mask,
            self.go_backwards,
            self.zero_output_for_mask,
            recurrent,
        )


@keras.saving.register_keras_serializable(package="keras_s2s")
class GRU(keras.layers.GRU):
    """`keras.layers.GRU` (same arguments and weights) with the input projection hoisted out of the loop.

    Only the default `reset_after=True` form is hoisted; `reset_after=False` runs Keras's loop.
    """

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if not (_hoisting_applies(self, training) and self.cell.reset_after):
            return super().inner_loop(sequences, initial_state, mask, training=training)
        cell, dtype = self.cell, self.cell.compute_dtype
        projected = _project(cell, sequences, cell.bias[0] if cell.use_bias else None)
        recurrent_bias = ops.cast(cell.bias[1], dtype) if cell.use_bias else None

        # inner = h @ U + b enters z and r additively, the candidate through r
        def d_inner(upstream, stacked):
            d_z, d_r, d_h = tf.split(upstream, 3, axis=-1)
            return tf.concat([d_z, d_r, stacked["reset"] * d_h], axis=-1)

        recurrent = RecurrentWeights(
            ops.cast(cell.recurrent_kernel, dtype), recurrent_bias, d_inner
        )
        frozen = recurrent.frozen()

        def step(x, states):
            h = states[0]
            inner = tf.matmul(h, frozen[0])
            if len(frozen) > 1:
                inner = inner + frozen[1]
            x_z, x_r, x_h = tf.split(x, 3, axis=-1)
            h_z, h_r, h_h = tf.split(inner, 3, axis=-1)
            z = cell.recurrent_activation(x_z + h_z)
            r = cell.recurrent_activation(x_r + h_r)
            candidate = cell.activation(x_h + r * h_h)
            h = z * h + (1 - z) * candidate
            return h, [h], {"reset": r}

        return run_recurrence(
            step,
            projected,
            initial_state,
            mask,
            self.go_backwards,
            self.zero_output_for_mask,
            recurrent,
            saved=("reset",),
        )
