"""Greedy and batched beam search over any `Seq2SeqLM`, in `keras.ops`, for every Keras backend.

A model only needs `encode`, `initial_decoder_state` and `decode_step`. The
loop is `keras.ops.while_loop` over a fixed `max_length` with preallocated
outputs and caches: under TensorFlow it is a `tf.while_loop` (inside a
`tf.function` or a SavedModel, `max_length` may be a tensor), under JAX a
`lax.while_loop` that `jax.jit` compiles (`max_length` a Python int). The loop
stops early once every sentence has ended.

Hypotheses are ranked by log-probability divided by the GNMT length penalty
((5 + length) / 6) ** alpha (Wu et al. 2016); alpha = 0 ranks by raw
log-probability. Finished hypotheses stay in the beam with their score.
With `beta > 0` the final choice among the beam adds the GNMT coverage
penalty beta * sum_i log(min(sum_t attention_ti, 1)) over source positions i
(the model's decoder state must then carry `"attention"` [B, S]).
Each sentence may have its own length limit: at step `limits[b] - 1` only
EOS is allowed. With `loop_guard` (the default) no span of 2-12 tokens is
emitted a third time in a row unless the source repeats one so
(`keras_s2s.decoding.loops`).

Example:
    >>> ids = greedy_search(model, source_ids, limits=lengths * 2 + 10)
    >>> ids, log_probs, lengths = beam_search(model, source_ids, beam_width=4, limits=lengths * 2 + 10, alpha=0.6)
"""

from __future__ import annotations

import keras
from keras import ops

from keras_s2s.decoding.loops import block_loops, initial_runs, source_repeats, update_runs
from keras_s2s.token_ids import BOS_ID, EOS_ID, PAD_ID

NEG_INF = -1e9


def length_penalty(lengths, alpha: float):
    """GNMT length penalty ((5 + |Y|) / 6) ** alpha."""
    return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)


def coverage_penalty(coverage, source_mask, beta: float):
    """GNMT coverage penalty beta * sum_i log(min(coverage_i, 1)) over real source positions."""
    clipped = ops.log(ops.clip(coverage, 1e-10, 1.0))
    return beta * ops.sum(ops.where(source_mask, clipped, 0.0), axis=-1)


def only_eos_at_limit(step_scores, step, limits):
    """Where `step` is the last one allowed (limits - 1), keep only the EOS score."""
    at_limit = ops.equal(step, limits - 1)
    vocab = ops.shape(step_scores)[-1]
    eos_only = ops.where(ops.arange(vocab) == EOS_ID, 0.0, NEG_INF)
    return ops.where(at_limit[..., None], step_scores + eos_only, step_scores)


def _max_length(limits, max_length):
    """The loop's bound: `max_length` if given (a Python int: static shapes for XLA), else max(limits)."""
    return ops.max(limits) if max_length is None else max_length


def _write(outputs, step, values, positions):
    """`outputs` [..., L] with `values` [...] at position `step`."""
    return ops.where(positions == step, values[..., None], outputs)


def greedy_search(model, source_ids, limits, max_length=None, loop_guard: bool = True):
    """The most probable token at every step: ids [B, max_length] (EOS, then 0s).

    Args:
        model: a `Seq2SeqLM`.
        source_ids: int [B, S], 0-padded.
        limits: int [B]: most output tokens of each sentence, EOS included.
        max_length: int | None. Output width (>= max(limits)); default max(limits).
        loop_guard: bool. Never a span's third copy in a row (unless the source has one).
    """
    encoded = model.encode(source_ids, training=False)
    batch = ops.shape(source_ids)[0]
    limits = ops.cast(limits, "int32")
    length = _max_length(limits, max_length)
    state = model.initial_decoder_state(encoded, length)
    positions = ops.arange(length)[None, :]
    exempt = source_repeats(source_ids)

    def keep_going(step, token, finished, outputs, runs, state):
        return ops.logical_not(ops.all(finished))

    def body(step, token, finished, outputs, runs, state):
        logits, state = model.decode_step(token, state, encoded)
        logits = only_eos_at_limit(ops.cast(logits, "float32"), step, limits)
        if loop_guard:
            logits = block_loops(logits, runs, outputs, step, exempt)
        best = ops.cast(ops.argmax(logits, axis=-1), "int32")
        token = ops.where(finished, PAD_ID, best)
        runs = update_runs(runs, outputs, token, step)
        outputs = _write(outputs, step, token, positions)
        finished = ops.logical_or(finished, ops.equal(token, EOS_ID))
        return step + 1, token, finished, outputs, runs, state

    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        ops.full((batch,), BOS_ID, "int32"),
        ops.zeros((batch,), "bool"),
        ops.zeros((batch, length), "int32"),
        initial_runs((batch,)),
        state,
    )
    outputs = ops.while_loop(keep_going, body, loop_vars, maximum_iterations=length)[3]
    return outputs


def _flat_beam_indices(beam_indices, batch, beam_width: int):
    """Rows of a [B*K, ...] tensor that beam_indices [B, K] picks, as [B*K] indices."""
    offsets = ops.arange(batch)[:, None] * beam_width
    return ops.reshape(offsets + beam_indices, (-1,))


def beam_search(
    model,
    source_ids,
    beam_width: int,
    limits,
    alpha: float = 0.0,
    beta: float = 0.0,
    max_length=None,
    loop_guard: bool = True,
):
    """Best hypothesis per sentence: ids [B, max_length] (EOS, then 0s), its float32 log-probability,
    its length.

    Args:
        model: a `Seq2SeqLM`.
        source_ids: int [B, S], 0-padded.
        beam_width: int. Hypotheses kept per sentence.
        limits: int [B] (or a scalar): most output tokens of each sentence, EOS included.
        alpha: float. Length-penalty exponent.
        beta: float. Coverage-penalty weight (0 = none).
        max_length: int | None. Output width (>= max(limits)); default max(limits).
        loop_guard: bool. Never a span's third copy in a row (unless the source has one).
    """
    batch = ops.shape(source_ids)[0]
    k = beam_width
    limits = ops.broadcast_to(ops.cast(limits, "int32"), (batch,))
    length = _max_length(limits, max_length)
    tile = lambda t: ops.repeat(t, k, axis=0)  # noqa: E731  [B, ...] -> [B*K, ...], beams of a sentence adjacent
    beam_limits = ops.reshape(tile(limits), (batch, k))
    encoded = keras.tree.map_structure(tile, model.encode(source_ids, training=False))
    state = model.initial_decoder_state(encoded, length)
    source_mask = ops.not_equal(tile(source_ids), PAD_ID)
    exempt = ops.reshape(tile(source_repeats(source_ids)), (batch, k))
    positions = ops.arange(length)[None, None, :]
    # only the first beam is live at the start, so the k beams do not duplicate one hypothesis
    first_live = ops.where(ops.arange(k) == 0, 0.0, NEG_INF)
    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        ops.full((batch * k,), BOS_ID, "int32"),  # tokens
        ops.broadcast_to(first_live[None, :], (batch, k)),  # log_probs
        ops.zeros((batch, k), "bool"),  # finished
        ops.zeros((batch, k), "int32"),  # lengths
        ops.zeros((batch, k, length), "int32"),  # sequences
        ops.zeros(ops.shape(source_mask), "float32"),  # coverage
        initial_runs((batch, k)),  # loop guard: tokens in a row that repeat the span before
        state,
    )

    def keep_going(step, tokens, log_probs, finished, *_):
        return ops.logical_not(ops.all(finished))

    def body(step, tokens, log_probs, finished, lengths, sequences, coverage, runs, state):
        logits, state = model.decode_step(tokens, state, encoded)
        if beta:
            live = ops.cast(ops.logical_not(ops.reshape(finished, (-1,))), "float32")[:, None]
            coverage = coverage + ops.cast(state["attention"], "float32") * live
        vocab = ops.shape(logits)[-1]
        step_scores = ops.reshape(ops.log_softmax(ops.cast(logits, "float32")), (batch, k, vocab))
        step_scores = only_eos_at_limit(step_scores, step, beam_limits)
        if loop_guard:
            step_scores = block_loops(step_scores, runs, sequences, step, exempt)
        # a finished hypothesis continues only with padding, at no cost
        pad_only = ops.where(ops.arange(vocab) == PAD_ID, 0.0, NEG_INF)[None, None, :]
        step_scores = ops.where(finished[:, :, None], pad_only, step_scores)
        candidates = ops.reshape(log_probs[:, :, None] + step_scores, (batch, k * vocab))
        log_probs, flat = ops.top_k(candidates, k=k)
        flat = ops.cast(flat, "int32")
        beam_indices, new_tokens = flat // vocab, flat % vocab
        finished = ops.take_along_axis(finished, beam_indices, axis=1)
        lengths = ops.take_along_axis(lengths, beam_indices, axis=1) + ops.cast(
            ops.logical_not(finished), "int32"
        )
        rows = _flat_beam_indices(beam_indices, batch, k)
        reorder = lambda t: ops.take(t, rows, axis=0)  # noqa: E731
        sequences = ops.reshape(
            reorder(ops.reshape(sequences, (batch * k, length))), (batch, k, length)
        )
        runs = ops.take_along_axis(
            runs, ops.broadcast_to(beam_indices[:, :, None], ops.shape(runs)), axis=1
        )
        runs = update_runs(runs, sequences, new_tokens, step)
        sequences = _write(sequences, step, new_tokens, positions)
        finished = ops.logical_or(finished, ops.equal(new_tokens, EOS_ID))
        state = keras.tree.map_structure(reorder, state)
        coverage = reorder(coverage)
        tokens = ops.reshape(new_tokens, (-1,))
        return step + 1, tokens, log_probs, finished, lengths, sequences, coverage, runs, state

    final = ops.while_loop(keep_going, body, loop_vars, maximum_iterations=length)
    log_probs, lengths, sequences, coverage = final[2], final[4], final[5], final[6]
    normalized = log_probs / length_penalty(lengths, alpha)
    if beta:
        normalized = normalized + ops.reshape(
            coverage_penalty(coverage, source_mask, beta), (batch, k)
        )
    best = ops.cast(ops.argmax(normalized, axis=1), "int32")[:, None]
    pick = lambda t: ops.take_along_axis(t, best, axis=1)[:, 0]  # noqa: E731
    best_sequences = ops.take_along_axis(sequences, best[:, :, None], axis=1)[:, 0]
    return best_sequences, pick(log_probs), pick(lengths)
