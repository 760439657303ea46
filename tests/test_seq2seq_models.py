"""What every translation architecture must do: the same interface, exact incremental decoding, saving."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_s2s.models import GNMT, ConvS2S, Transformer
from keras_s2s.text.tokenizer import SubwordTokenizer
from keras_s2s.token_ids import BOS_ID, EOS_ID, PAD_ID

TINY = {
    "gnmt": lambda **kw: GNMT(num_layers=3, units=16, dropout=0.0, **kw),
    "transformer": lambda **kw: Transformer(
        num_layers=2, d_model=16, num_heads=2, ffn_dim=32, dropout=0.0, **kw
    ),
    "transformer_postnorm_learned": lambda **kw: Transformer(
        num_layers=2,
        d_model=16,
        num_heads=4,
        ffn_dim=32,
        dropout=0.0,
        normalize_first=False,
        positions="learned",
        max_positions=32,
        share_embeddings=False,
        **kw,
    ),
    "convs2s": lambda **kw: ConvS2S(
        embedding_dim=16,
        channels=[16, 24, 24],
        kernel_sizes=[3, 5, 1],
        out_embedding_dim=8,
        dropout=0.0,
        max_positions=32,
        **kw,
    ),
    "convs2s_shared": lambda **kw: ConvS2S(
        embedding_dim=16,
        channels=[16, 24],
        kernel_sizes=[3, 3],
        out_embedding_dim=16,
        dropout=0.0,
        max_positions=32,
        share_embeddings=True,
        **kw,
    ),
}


def tiny(name, vocab_size=40, seed=0):
    keras.utils.set_random_seed(seed)
    return TINY[name](vocab_size=vocab_size)


def batch(vocab=40, seed=0):
    rng = np.random.default_rng(seed)
    source = rng.integers(4, vocab, (3, 9)).astype("int32")
    source[:, -1] = EOS_ID
    source[1, 5:] = [EOS_ID, 0, 0, 0]
    target = rng.integers(4, vocab, (3, 7)).astype("int32")
    target[:, 0] = BOS_ID
    return {"source": source, "target_in": target}


@pytest.mark.parametrize("name", sorted(TINY))
def test_logits_are_float32_and_ignore_source_padding(name):
    model = tiny(name)
    inputs = batch()
    logits = model(inputs)
    assert logits.shape == (3, 7, 40) and logits.dtype == "float32"
    short = {"source": inputs["source"][1:2, :6], "target_in": inputs["target_in"][1:2]}
    np.testing.assert_allclose(model(short), logits[1:2], atol=1e-5)


@pytest.mark.parametrize("name", sorted(TINY))
def test_decoder_is_causal(name):
    model = tiny(name)
    inputs = batch()
    changed = dict(inputs, target_in=inputs["target_in"].copy())
    changed["target_in"][:, 4:] = 5
    np.testing.assert_allclose(model(changed)[:, :4], model(inputs)[:, :4], atol=1e-5)


@pytest.mark.parametrize("name", sorted(TINY))
def test_cached_step_equals_full_recomputation(name):
    model = tiny(name)
    inputs = batch()
    full = model(inputs).numpy()
    encoded = model.encode(tf.constant(inputs["source"]))
    state = model.initial_decoder_state(encoded, tf.constant(inputs["target_in"].shape[1]))
    for t in range(inputs["target_in"].shape[1]):
        logits, state = model.decode_step(tf.constant(inputs["target_in"][:, t]), state, encoded)
        np.testing.assert_allclose(logits, full[:, t], atol=1e-5, err_msg=f"step {t}")
        attention = state["attention"].numpy()
        # an alignment over the source
        np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
        assert (attention[1, 6:] < 1e-6).all()  # never on padding


@pytest.mark.parametrize("name", sorted(TINY))
def test_greedy_generate_follows_the_argmax_and_pads_after_eos(name):
    model = tiny(name)
    source = batch()["source"]
    ids = model.generate(source, max_length=12, loop_guard=False)  # the argmax path, unguarded
    target_in = np.concatenate([np.full((3, 1), BOS_ID, "int32"), ids[:, :-1]], axis=1)
    argmax = model({"source": source, "target_in": target_in}).numpy().argmax(-1)
    for row in range(3):
        seq = list(ids[row])
        assert EOS_ID in seq  # EOS is forced at the length limit
        end = seq.index(EOS_ID) + 1
        assert list(argmax[row, : end - 1]) == seq[: end - 1]
        assert all(t == PAD_ID for t in seq[end:])


@pytest.mark.parametrize("name", sorted(TINY))
def test_beam_never_scores_below_greedy_and_width_one_is_greedy(name):
    model = tiny(name)
    source = np.concatenate([batch(seed=s)["source"] for s in range(3)])
    greedy = model.generate(source, max_length=8, loop_guard=False)
    np.testing.assert_array_equal(
        model._decoder(1, 0.0, 0.0, False)(source, tf.fill([9], 8)).numpy(), greedy
    )
    beam = model.generate(source, max_length=8, beam_width=3, loop_guard=False)
    greedy_scores, beam_scores = model.score(source, greedy)[0], model.score(source, beam)[0]
    assert (beam_scores.numpy() >= greedy_scores.numpy() - 1e-4).all()


def test_length_limit_follows_the_source_length():
    model = tiny("transformer")
    source = batch()["source"]  # rows of 9, 6 and 9 tokens
    for beam_width in (1, 3):
        ids = model.generate(
            source, max_length=50, beam_width=beam_width, max_length_ratio=1.0, max_length_offset=2
        )
        lengths = [list(row).index(EOS_ID) + 1 for row in ids]
        assert lengths[0] <= 11 and lengths[1] <= 8 and lengths[2] <= 11
        assert ids.shape[1] <= 11


def test_coverage_penalty_prefers_hypotheses_that_cover_the_source():
    from keras_s2s.decoding.beam_search import coverage_penalty

    mask = tf.constant([[True, True, False]])
    full = coverage_penalty(tf.constant([[1.2, 1.0, 0.0]]), mask, 0.2)
    partial = coverage_penalty(tf.constant([[1.9, 0.1, 0.0]]), mask, 0.2)
    assert float(full[0]) == pytest.approx(0.0) and float(partial[0]) == pytest.approx(
        0.2 * np.log(0.1), rel=1e-5
    )
    model = tiny("convs2s")
    source = batch()["source"]
    ids = model.generate(source, max_length=8, beam_width=3, coverage_penalty=0.3)
    assert ids.shape[0] == 3
    with pytest.raises(ValueError, match="needs beam search"):
        model.generate(source, coverage_penalty=0.3)


@pytest.mark.parametrize("name", ["transformer", "convs2s", "convs2s_shared"])
def test_keras_file_round_trip_with_tokenizer(name, tmp_path):
    tokenizer = SubwordTokenizer.train(
        [f"word{i} and word{i + 1}" for i in range(300)], vocab_size=60
    )
    keras.utils.set_random_seed(0)
    model = TINY[name](vocab_size=tokenizer.vocab_size, tokenizer=tokenizer)
    model.build()
    assert type(model).from_config(model.get_config()).get_config() == model.get_config()
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    inputs = batch(vocab=tokenizer.vocab_size)
    np.testing.assert_allclose(restored(inputs), model(inputs), atol=1e-6)
    assert restored.translate(["word3 and word4"], beam_width=2) == model.translate(
        ["word3 and word4"], beam_width=2
    )


@pytest.mark.parametrize("name", ["transformer", "convs2s", "convs2s_shared"])
def test_mixed_bfloat16_keeps_float32_weights_softmax_and_logits(name):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = tiny(name)
    inputs = batch()
    assert model(inputs).dtype == "float32"
    assert all(w.dtype == "float32" for w in model.weights)
    state = model.initial_decoder_state(model.encode(tf.constant(inputs["source"])), tf.constant(4))
    assert state["attention"].dtype == tf.float32
    assert model.generate(inputs["source"], max_length=6, beam_width=2).shape[0] == 3


@pytest.mark.parametrize("shared, separate", [("transformer", "transformer_postnorm_learned"),
                                              ("convs2s_shared", "convs2s")])  # fmt: skip
def test_one_embedding_matrix_when_asked(shared, separate):
    shared, separate = tiny(shared), tiny(separate)
    shared.build(), separate.build()
    vocab_matrices = lambda model: [w for w in model.weights if 40 in w.shape]  # noqa: E731
    assert len(vocab_matrices(shared)) == 1
    assert len(vocab_matrices(separate)) >= 3  # source, target, output (and its bias)


def test_bad_arguments():
    with pytest.raises(ValueError, match="divisible"):
        Transformer(vocab_size=10, d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="positions"):
        Transformer(vocab_size=10, positions="rotary")
    with pytest.raises(ValueError, match="same length"):
        ConvS2S(vocab_size=10, channels=[8, 8], kernel_sizes=[3])
    with pytest.raises(ValueError, match="odd kernel_size"):
        ConvS2S(vocab_size=10, embedding_dim=8, channels=[8], kernel_sizes=[2]).build()
    with pytest.raises(ValueError, match="share_embeddings needs a joint vocabulary"):
        ConvS2S(vocab_size=10, source_vocab_size=12, share_embeddings=True)
    with pytest.raises(ValueError, match="out_embedding_dim equal to embedding_dim"):
        ConvS2S(vocab_size=10, embedding_dim=8, out_embedding_dim=4, share_embeddings=True)


def test_the_loss_is_the_mean_over_real_tokens():
    from keras_s2s.losses import SmoothedCrossEntropy

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 5, 7)).astype("float32")
    labels = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 1, 3], [2, 0, 0, 0, 0]])
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    np.testing.assert_allclose(
        SmoothedCrossEntropy()(labels, logits), keras_loss(labels, logits), rtol=1e-5
    )
    smoothed = SmoothedCrossEntropy(0.1)
    per_token = keras.ops.convert_to_numpy(smoothed.token_losses(labels, logits))
    assert (per_token[labels == 0] == 0).all() and (per_token[labels != 0] > 0).all()
    np.testing.assert_allclose(
        smoothed(labels, logits), per_token.sum() / (labels != 0).sum(), rtol=1e-6
    )
    assert float(SmoothedCrossEntropy()(np.zeros((1, 3), int), logits[:1, :3])) == 0.0, (
        "all padding: 0"
    )
