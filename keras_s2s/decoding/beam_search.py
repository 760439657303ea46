"""Batched beam search over any `Seq2SeqLM` (it only needs `encode`,
`initial_decoder_state` and `decode_step`).

Hypotheses are ranked by log-probability divided by the GNMT length penalty
((5 + length) / 6) ** alpha (Wu et al. 2016); alpha = 0 ranks by raw
log-probability. Finished hypotheses stay in the beam with their score.
With `beta > 0` the final choice among the beam adds the GNMT coverage
penalty beta * sum_i log(min(sum_t attention_ti, 1)) over source positions i
(the model's decoder state must then carry `"attention"` [B, S]).
Each sentence may have its own length limit: at step `limits[b] - 1` only
EOS is allowed.

Example:
    >>> ids, log_probs, lengths = beam_search(model, source_ids, beam_width=4, limits=lengths * 2 + 10, alpha=0.6)
"""

from __future__ import annotations

import tensorflow as tf

from keras_s2s.data.tokenizer import BOS_ID, EOS_ID, PAD_ID

NEG_INF = -1e9


def length_penalty(lengths, alpha: float):
    """GNMT length penalty ((5 + |Y|) / 6) ** alpha."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


def coverage_penalty(coverage, source_mask, beta: float):
    """GNMT coverage penalty beta * sum_i log(min(coverage_i, 1)) over real source positions."""
    clipped = tf.math.log(tf.clip_by_value(coverage, 1e-10, 1.0))
    return beta * tf.reduce_sum(tf.where(source_mask, clipped, 0.0), axis=-1)


def only_eos_at_limit(step_scores, step, limits):
    """Where `step` is the last one allowed (limits - 1), keep only the EOS score."""
    at_limit = tf.equal(step, limits - 1)
    vocab = tf.shape(step_scores)[-1]
    eos_only = tf.where(tf.range(vocab) == EOS_ID, 0.0, NEG_INF)
    return tf.where(at_limit[..., None], step_scores + eos_only, step_scores)


def _tile(tensor, beam_width: int):
    # [B, ...] -> [B*K, ...], beams of a sentence adjacent
    return tf.repeat(tensor, beam_width, axis=0)


def _gather_beams(tensor, beam_indices, batch: int, beam_width: int):
    """Reorder the beams of a [B*K, ...] tensor by beam_indices [B, K]."""
    shaped = tf.reshape(tensor, tf.concat([[batch, beam_width], tf.shape(tensor)[1:]], 0))
    gathered = tf.gather(shaped, beam_indices, batch_dims=1)
    return tf.reshape(gathered, tf.shape(tensor))


def beam_search(model, source_ids, beam_width: int, limits, alpha: float = 0.0, beta: float = 0.0):
    """Best hypothesis per sentence: ids [B, max(limits)] (EOS, then 0s), its float32 log-probability, its length.

    Args:
        model: a `Seq2SeqLM`.
        source_ids: int [B, S], 0-padded.
        beam_width: int. Hypotheses kept per sentence.
        limits: int [B] (or a scalar): most output tokens of each sentence, EOS included.
        alpha: float. Length-penalty exponent.
        beta: float. Coverage-penalty weight (0 = none).
    """
    batch = tf.shape(source_ids)[0]
    k = beam_width
    limits = tf.broadcast_to(tf.cast(limits, tf.int32), [batch])
    max_length = tf.reduce_max(limits)
    limits = tf.reshape(_tile(limits, k), [batch, k])
    encoded = tf.nest.map_structure(lambda t: _tile(t, k), model.encode(source_ids, training=False))
    state = model.initial_decoder_state(encoded, max_length)
    source_mask = tf.not_equal(_tile(source_ids, k), PAD_ID)
    coverage = tf.zeros(tf.shape(source_mask), tf.float32)
    tokens = tf.fill([batch * k], tf.constant(BOS_ID, tf.int32))
    # only the first beam is live at the start, so the k beams do not duplicate one hypothesis
    log_probs = tf.tile(tf.concat([[0.0], tf.fill([k - 1], NEG_INF)], 0)[None, :], [batch, 1])
    finished = tf.zeros([batch, k], tf.bool)
    lengths = tf.zeros([batch, k], tf.int32)
    sequences = tf.zeros([batch, k, max_length], tf.int32)
    positions = tf.range(max_length)[None, None, :]
    for step in tf.range(max_length):
        logits, state = model.decode_step(tokens, state, encoded)
        if beta:
            live = tf.cast(~tf.reshape(finished, [-1]), tf.float32)[:, None]
            coverage += tf.cast(state["attention"], tf.float32) * live
        vocab = tf.shape(logits)[-1]
        step_scores = tf.reshape(tf.nn.log_softmax(tf.cast(logits, tf.float32)), [batch, k, -1])
        step_scores = only_eos_at_limit(step_scores, step, limits)
        # a finished hypothesis continues only with padding, at no cost
        pad_only = tf.where(tf.range(vocab) == PAD_ID, 0.0, NEG_INF)[None, None, :]
        step_scores = tf.where(finished[:, :, None], pad_only, step_scores)
        candidates = tf.reshape(log_probs[:, :, None] + step_scores, [batch, -1])
        log_probs, flat = tf.math.top_k(candidates, k=k)
        beam_indices, tokens_2d = flat // vocab, flat % vocab
        finished = tf.gather(finished, beam_indices, batch_dims=1)
        lengths = tf.gather(lengths, beam_indices, batch_dims=1) + tf.cast(~finished, tf.int32)
        sequences = tf.gather(sequences, beam_indices, batch_dims=1)
        sequences = tf.where(positions == step, tokens_2d[:, :, None], sequences)
        finished = finished | tf.equal(tokens_2d, EOS_ID)
        state = tf.nest.map_structure(lambda t: _gather_beams(t, beam_indices, batch, k), state)  # noqa: B023
        coverage = _gather_beams(coverage, beam_indices, batch, k)
        tokens = tf.reshape(tokens_2d, [-1])
        if tf.reduce_all(finished):
            break
    normalized = log_probs / length_penalty(lengths, alpha)
    if beta:
        normalized += tf.reshape(coverage_penalty(coverage, source_mask, beta), [batch, k])
    best = tf.argmax(normalized, axis=1, output_type=tf.int32)
    pick = lambda t: tf.gather(t, best, batch_dims=1)  # noqa: E731
    return pick(sequences), pick(log_probs), pick(lengths)
