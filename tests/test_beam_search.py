import itertools

import numpy as np
import pytest
import tensorflow as tf
from keras import ops
from tiny import tiny_gnmt

from keras_s2s.decoding.beam_search import beam_search, length_penalty
from keras_s2s.token_ids import BOS_ID, EOS_ID, PAD_ID


def sources(seed=0, vocab=40):
    rng = np.random.default_rng(seed)
    ids = rng.integers(4, vocab, (4, 7)).astype("int32")
    ids[:, -1] = EOS_ID
    ids[2, 4:] = [EOS_ID, 0, 0]
    return ids


def sequence_log_prob(model, source, ids):
    """Teacher-forced log-probability of each output row, up to and including its EOS."""
    target_in = np.concatenate([np.full((len(ids), 1), BOS_ID, "int32"), ids[:, :-1]], axis=1)
    logits = model({"source": source, "target_in": target_in}).numpy().astype("float64")
    log_probs = (
        logits
        - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True))
        - logits.max(-1, keepdims=True)
    )
    token_scores = np.take_along_axis(log_probs, ids[:, :, None], axis=-1)[:, :, 0]
    is_eos = ids == EOS_ID
    before_end = np.cumsum(is_eos, axis=1) - is_eos == 0
    return (token_scores * before_end).sum(axis=1)


@pytest.fixture(scope="module")
def model():
    tf.keras.utils.set_random_seed(5)
    return tiny_gnmt(vocab_size=40, num_layers=2, units=16)


def test_beam_width_one_equals_greedy(model):
    src = sources()
    greedy = model.generate(src, max_length=9)
    beam_one = beam_search(model, tf.constant(src), 1, 9)[0]
    np.testing.assert_array_equal(beam_one.numpy()[:, : greedy.shape[1]], greedy)


@pytest.mark.parametrize("beam_width", [2, 4])
def test_beam_reports_the_models_own_score_of_its_output(model, beam_width):
    src = sources(seed=beam_width)
    beam_ids, beam_scores, _ = beam_search(model, tf.constant(src), beam_width, 9, alpha=0.0)
    np.testing.assert_allclose(
        beam_scores.numpy(), sequence_log_prob(model, src, beam_ids.numpy()), atol=1e-3
    )


@pytest.mark.parametrize("beam_width, alpha", [(2, 0.0), (4, 0.0), (3, 0.6)])
def test_generate_with_a_beam_never_scores_below_greedy(model, beam_width, alpha):
    src = np.concatenate([sources(seed=s) for s in range(3)])
    greedy = model.generate(src, max_length=9, loop_guard=False)  # the search, unconstrained
    greedy = np.pad(greedy, [(0, 0), (0, 9 - greedy.shape[1])])
    beam = model.generate(
        src, max_length=9, beam_width=beam_width, length_penalty=alpha, loop_guard=False
    )
    scores = {}
    for name, ids in (("greedy", greedy), ("beam", beam)):
        log_probs, lengths = model.score(src, ids)
        scores[name] = log_probs.numpy() / length_penalty(lengths, alpha).numpy()
    np.testing.assert_allclose(
        model.score(src, beam)[0], sequence_log_prob(model, src, beam), atol=1e-3
    )
    assert (scores["beam"] >= scores["greedy"] - 1e-4).all()


def test_a_beam_as_wide_as_all_prefixes_finds_the_exact_best_sequence():
    tf.keras.utils.set_random_seed(2)
    vocab, length = 6, 3
    model = tiny_gnmt(vocab_size=vocab, num_layers=2, units=8)
    src = sources(vocab=vocab)[:2]
    beam_ids, beam_scores, _ = beam_search(
        model, tf.constant(src), vocab ** (length - 1), length, alpha=0.0
    )
    candidates = np.array(list(itertools.product(range(vocab), repeat=length)), dtype="int32")
    candidates = candidates[(candidates == EOS_ID).any(axis=1)]  # EOS is forced at the length limit
    for row in range(len(src)):
        scores = sequence_log_prob(
            model, np.repeat(src[row : row + 1], len(candidates), 0), candidates
        )
        assert beam_scores.numpy()[row] == pytest.approx(scores.max(), abs=1e-3)


def test_beam_output_is_padded_after_eos_and_length_penalty():
    tf.keras.utils.set_random_seed(1)
    model = tiny_gnmt(vocab_size=12, num_layers=2, units=8)
    ids = model.generate(sources(vocab=12), max_length=30, beam_width=3, length_penalty=0.6)
    assert ids.shape == (4, 30)
    for row in ids:
        row = list(row)
        if EOS_ID in row:
            assert all(t == PAD_ID for t in row[row.index(EOS_ID) + 1 :])
    np.testing.assert_allclose(length_penalty(tf.constant([1, 7]), 0.6), [1.0, 2.0**0.6], rtol=1e-6)
    np.testing.assert_allclose(length_penalty(tf.constant([9]), 0.0), [1.0])
    with pytest.raises(ValueError, match="beam_width must be >= 1"):
        model.generate(sources(vocab=12), beam_width=0)


class LoopingModel:
    """A decoder that prefers 4 after anything but 4, and 5 after 4 (4 5 4 5 ... forever), then 6,
    with EOS its fourth choice: without the loop guard it loops until the length limit."""

    vocab = 8

    def encode(self, source_ids, training=False):
        return ops.cast(source_ids, "float32")

    def initial_decoder_state(self, encoded, length):
        return {"steps": ops.zeros(ops.shape(encoded)[:1], "float32")}

    def decode_step(self, token, state, encoded):
        ids = ops.arange(self.vocab)[None, :]
        preferred = ops.where(ops.equal(token, 4), 5, 4)[:, None]
        logits = ops.where(ids == preferred, 6.0, 0.0)
        logits = logits + ops.where(ids == 6, 4.0, 0.0) + ops.where(ids == EOS_ID, 2.0, 0.0)
        return logits, {"steps": state["steps"] + 1.0}


def _words(ids) -> list[str]:
    return [str(t) for t in ids if t not in (EOS_ID, PAD_ID)]


@pytest.mark.parametrize("beam_width", [1, 3])
def test_the_loop_guard_stops_a_model_that_loops(beam_width):
    from keras_s2s.decoding.beam_search import greedy_search
    from keras_s2s.decoding.loops import has_loop

    source = np.array([[7, 6, 5, EOS_ID], [6, 7, EOS_ID, 0]], "int32")
    limits = np.array([20, 20], "int32")

    def decode(guard):
        if beam_width == 1:
            return np.asarray(greedy_search(LoopingModel(), source, limits, loop_guard=guard))
        ids = beam_search(LoopingModel(), source, beam_width, limits, loop_guard=guard)[0]
        return np.asarray(ids)

    unguarded, guarded = decode(False), decode(True)
    assert _words(unguarded[0])[:6] == ["4", "5"] * 3 and has_loop(_words(unguarded[0]))
    for row in guarded:
        assert not has_loop(_words(row)), row
        assert _words(row)[:5] == ["4", "5", "4", "5", "4"]  # two copies and a start are fine
    # a source that repeats a span three times may be translated with one: no guard for it
    looping_source = np.array([[4, 5, 4, 5, 4, 5, EOS_ID]], "int32")
    ids = greedy_search(LoopingModel(), looping_source, np.array([20]), loop_guard=True)
    assert has_loop(_words(np.asarray(ids)[0]))


def test_the_loop_count_counts_word_spans_the_source_does_not_repeat():
    from keras_s2s.decoding.loops import count_loops, has_loop

    assert has_loop("a b a b a b".split()) and has_loop("x a b c a b c a b c y".split())
    assert not has_loop("a a a".split()) and not has_loop("a b a b c".split())
    hypotheses = [
        "Eingabe schrittweise Eingabe schrittweise Eingabe schrittweise",
        "gut",
        "a b a b a b",
    ]
    sources = ["input incrementally", "good", "a b a b a b"]
    assert count_loops(hypotheses, sources) == 1
