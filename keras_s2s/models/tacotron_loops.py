"""Tacotron 2's decoder loops: teacher-forced (training) and free-running (inference), each the
loop its backend runs best: `tf.while_loop` with the hoisted LSTM cells on TensorFlow,
`keras.ops.scan` / `keras.ops.while_loop` over preallocated buffers on JAX. Each takes the model
and runs its `decoder_step`; `models/tacotron2.py` holds the layers, the step and the losses.

Example:
    >>> outputs, alignments = teacher_forced(model, features, memory, keys, mask, True, steps, batch)
    >>> mel, lengths, alignments = inference_function(model)(text_ids, max_steps)
"""

from __future__ import annotations

import functools

import keras
import numpy as np
from keras import ops

from keras_s2s.backend import compile_with_weights, is_tensorflow, tf
from keras_s2s.layers import recurrent
from keras_s2s.layers.recurrent import LoopLSTMCell


def teacher_forced(model, features, memory, keys, mask, training, steps, batch):
    """The decoder over teacher-forced pre-net features [steps, B, P]: outputs [B, steps, D] and
    alignments [B, steps, L]."""
    loop = _while_loop if is_tensorflow() else _scan
    return loop(model, features, memory, keys, mask, training, steps, batch)


def keras_cell(cell, training):
    """A Keras LSTMCell as a function (inputs, (h, c)) -> (h, c)."""

    def run(inputs, state):
        h, (_, c) = cell(ops.concatenate(inputs, -1), list(state), training=training)
        return h, c

    return run


def _loop_step(cell: LoopLSTMCell, time, saved_inputs: list):
    """`cell`'s step at `time` as a function (inputs, (h, c)) -> (h, c); appends its x to `saved_inputs`."""

    def run(inputs, state):
        h, c, x = cell.step(time, inputs, state)
        saved_inputs.append(x)
        return h, c

    return run


def _scan(model, features, memory, keys, mask, training, steps, batch):
    """The teacher-forced decoder loop as `keras.ops.scan` (JAX): outputs [B, steps, D] and
    alignments [B, steps, L]. The LSTM outputs' dropout masks are drawn before the loop (a draw
    inside a compiled scan would repeat one mask)."""
    s, dtype = model.settings, model.compute_dtype
    rate = model.lstm_dropout.rate
    if training and rate > 0:
        masks = tuple(
            keras.random.dropout(
                ops.ones((steps, batch, units), dtype),
                rate,
                seed=model.lstm_dropout.seed_generator,
            )
            for units in (s["attention_lstm_units"], s["decoder_lstm_units"])
        )
    else:
        masks = tuple(
            ops.ones((steps, 1, units), dtype)
            for units in (s["attention_lstm_units"], s["decoder_lstm_units"])
        )

    def body(state, step_inputs):
        frame_features, *step_masks = step_inputs
        state, output, weights = model.decoder_step(
            frame_features, state, memory, keys, mask, training, masks=step_masks
        )
        return state, (output, weights)

    _, (outputs, alignments) = ops.scan(body, model.initial_state(memory), (features, *masks))
    return ops.transpose(outputs, (1, 0, 2)), ops.transpose(alignments, (1, 0, 2))


def _while_loop(model, features, memory, keys, mask, training, steps, batch):
    """The teacher-forced decoder loop as `tf.while_loop` with the hoisted LSTM cells (TensorFlow)."""
    feature_ta = tf.TensorArray(features.dtype, size=steps).unstack(features)
    outputs = tf.TensorArray(model.compute_dtype, size=steps)
    alignments = tf.TensorArray("float32", size=steps)
    loop_cells, saved = [], []
    if all(
        recurrent.cell_hoisting_applies(c, training)
        for c in (model.attention_lstm, model.decoder_lstm)
    ):
        loop_cells = [
            LoopLSTMCell(model.attention_lstm, known=features),
            LoopLSTMCell(model.decoder_lstm, steps=steps, batch=batch),
        ]
        saved = [tf.TensorArray(model.compute_dtype, size=steps) for _ in loop_cells]

    def body(i, state, outputs, alignments, saved):
        inputs, cells = [], None
        if loop_cells:
            cells = [_loop_step(cell, i, inputs) for cell in loop_cells]
        state, output, weights = model.decoder_step(
            feature_ta.read(i), state, memory, keys, mask, training, cells
        )
        saved = [ta.write(i, x) for ta, x in zip(saved, inputs)]
        return i + 1, state, outputs.write(i, output), alignments.write(i, weights), saved

    # XLA bounds the loop's TensorArrays by it
    _, _, outputs, alignments, saved = tf.while_loop(
        lambda i, *_: i < steps,
        body,
        (0, model.initial_state(memory), outputs, alignments, saved),
        maximum_iterations=steps,
    )
    for cell, ta in zip(loop_cells, saved):
        cell.finish(ta.stack())
    return tf.transpose(outputs.stack(), [1, 0, 2]), tf.transpose(alignments.stack(), [1, 0, 2])


def _free_running_loop(model, text, max_steps: int, prenet_masks):
    """Free-running decoding as `keras.ops.while_loop` with preallocated outputs (JAX: `max_steps`
    a Python int; the pre-net's always-on dropout masks [max_steps, B, units] drawn outside)."""
    memory, mask = model.encode(text, training=False)
    keys = model.attention.keys(memory)
    batch, r, m = ops.shape(text)[0], model.reduction_factor, model.num_mels
    threshold = model.settings["stop_threshold"]

    def keep_going(i, previous, state, done, *_):
        return ops.logical_and(i < max_steps, ops.logical_not(ops.all(done)))

    def body(i, previous, state, done, lengths, frames, alignments):
        features = model.prenet(
            previous, masks=[ops.take(masks, i, axis=0) for masks in prenet_masks]
        )
        state, output, weights = model.decoder_step(features, state, memory, keys, mask)
        step_frames = ops.reshape(model.frame_projection(output), (batch, r, m))
        stop = ops.sigmoid(ops.cast(model.stop_projection(output)[:, 0], "float32")) > threshold
        lengths = ops.where(ops.logical_and(stop, ops.logical_not(done)), (i + 1) * r, lengths)
        frames = ops.slice_update(frames, (i, 0, 0, 0), ops.cast(step_frames, frames.dtype)[None])
        alignments = ops.slice_update(alignments, (i, 0, 0), weights[None])
        return (
            i + 1,
            step_frames[:, -1],
            state,
            ops.logical_or(done, stop),
            lengths,
            frames,
            alignments,
        )

    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        ops.zeros((batch, m), model.compute_dtype),
        model.initial_state(memory),
        ops.zeros((batch,), "bool"),
        ops.full((batch,), max_steps * r, "int32"),
        ops.zeros((max_steps, batch, r, m), model.compute_dtype),
        ops.zeros((max_steps, batch, ops.shape(memory)[1]), "float32"),
    )
    *_, lengths, frames, alignments = ops.while_loop(keep_going, body, loop_vars)
    mel = ops.reshape(ops.transpose(frames, (1, 0, 2, 3)), (batch, max_steps * r, m))
    keep = (ops.arange(max_steps * r)[None, :] < lengths[:, None])[:, :, None]
    mel = ops.cast(model.postnet_residual(mel, keep=keep), "float32")
    return mel, lengths, ops.transpose(alignments, (1, 0, 2))


def inference_function(model):
    """`infer(text [B, L] int32, max_steps) -> (mel [B, T, M], lengths [B], alignments [B, T/r, L])`,
    compiled once per model: a `tf.while_loop` over growing TensorArrays (TensorFlow) or
    `keras.ops.while_loop` over buffers of `max_steps` (JAX, which needs their size)."""
    if not is_tensorflow():
        if "loop" not in model._functions:
            model._functions["loop"] = compile_with_weights(
                model, functools.partial(_free_running_loop, model), static_argnames=("max_steps",)
            )
        loop = model._functions["loop"]

        def infer(text, max_steps):
            masks = model.prenet.draw_masks((int(max_steps), len(text)), np.random.default_rng())
            return loop(text, max_steps=int(max_steps), prenet_masks=masks)

        return infer
    if "infer" not in model._functions:

        def infer(text, max_steps):
            memory, mask = model.encode(text, training=False)
            keys = model.attention.keys(memory)
            batch, r = ops.shape(text)[0], model.reduction_factor
            frames = tf.TensorArray(model.compute_dtype, size=0, dynamic_size=True)
            alignments = tf.TensorArray("float32", size=0, dynamic_size=True)
            lengths = tf.fill([batch], max_steps * r)
            threshold = model.settings["stop_threshold"]

            def body(i, previous, state, done, lengths, frames, alignments):
                state, output, weights = model.decoder_step(
                    model.prenet(previous), state, memory, keys, mask
                )
                step_frames = ops.reshape(
                    model.frame_projection(output), (batch, r, model.num_mels)
                )
                stop = (
                    ops.sigmoid(ops.cast(model.stop_projection(output)[:, 0], "float32"))
                    > threshold
                )
                lengths = tf.where(stop & ~done, (i + 1) * r, lengths)
                return (
                    i + 1,
                    step_frames[:, -1],
                    state,
                    done | stop,
                    lengths,
                    frames.write(i, step_frames),
                    alignments.write(i, weights),
                )

            _, _, _, _, lengths, frames, alignments = tf.while_loop(
                lambda i, previous, state, done, *_: (i < max_steps) & ~tf.reduce_all(done),
                body,
                (
                    0,
                    ops.zeros((batch, model.num_mels), model.compute_dtype),
                    model.initial_state(memory),
                    tf.zeros([batch], tf.bool),
                    lengths,
                    frames,
                    alignments,
                ),
            )
            steps = frames.size()
            mel = ops.reshape(
                tf.transpose(frames.stack(), [1, 0, 2, 3]), (batch, steps * r, model.num_mels)
            )
            keep = (ops.arange(steps * r)[None, :] < lengths[:, None])[:, :, None]
            mel = ops.cast(model.postnet_residual(mel, keep=keep), "float32")
            return mel, lengths, tf.transpose(alignments.stack(), [1, 0, 2])

        model._functions["infer"] = tf.function(
            infer,
            input_signature=[
                tf.TensorSpec([None, None], tf.int32),
                tf.TensorSpec([], tf.int32),
            ],
        )
    return model._functions["infer"]
