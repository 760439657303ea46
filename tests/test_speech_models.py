"""Speech recognizers: CTC decoding, loss, the three architectures, augmentation, bad input, convergence."""

import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_s2s.audio.augment import add_noise, perturb_speed, spec_augment
from keras_s2s.audio.features import FeatureExtractor
from keras_s2s.audio.io import write_wav
from keras_s2s.audio.manifest import Utterance
from keras_s2s.data.speech import usable_utterances
from keras_s2s.models import DeepSpeech2, Jasper, QuartzNet, Wave2Letter
from keras_s2s.text.characters import CharVocabulary
from keras_s2s.text.corpus import CorpusError

VOCAB = CharVocabulary()
TINY = {
    "jasper": lambda **kw: Jasper(
        prologue_channels=16,
        channels=[16, 24],
        kernels=[5, 7],
        dropouts=[0.0, 0.0],
        repeats=2,
        epilogue_channels=[24, 24],
        epilogue_kernel=5,
        **kw,
    ),
    "wave2letter": lambda **kw: Wave2Letter(
        prologue_channels=16,
        channels=[16, 16, 24],
        kernels=[5, 5, 7],
        dropouts=[0.0] * 3,
        epilogue_channels=[24, 24],
        epilogue_kernel=5,
        **kw,
    ),
    "quartznet": lambda **kw: QuartzNet(  # separable, 4x: the prologue's stride and block 0's
        prologue_channels=16,
        prologue_kernel=7,
        channels=[16, 24],
        kernels=[5, 7],
        dropouts=[0.0, 0.0],
        repeats=2,
        block_strides=[2, 1],
        epilogue_channels=[24, 24],
        epilogue_kernel=5,
        **kw,
    ),
    "deepspeech2": lambda **kw: DeepSpeech2(
        conv_filters=4, num_rnn_layers=1, rnn_units=16, fc_units=16, dropout=0.0, **kw
    ),
}


def features_batch(frames=(40, 27), size=16, seed=0):
    x = np.random.default_rng(seed).normal(size=(len(frames), max(frames), size)).astype("float32")
    for row, n in enumerate(frames):
        x[row, n:] = 0
    return {"features": x, "feature_lengths": np.array(frames, "int32")}


def test_vocabulary_reserves_the_blank_and_refuses_unknown_characters():
    assert VOCAB.vocab_size == 29 and VOCAB.encode("Hi  there") == VOCAB.encode("hi there")
    assert 0 not in VOCAB.encode("abc xyz'") and VOCAB.decode(VOCAB.encode("it's ok")) == "it's ok"
    with pytest.raises(ValueError, match="outside the vocabulary: '3é'"):
        VOCAB.encode("café 3")


def test_ctc_greedy_and_beam_decoding_on_hand_made_logits():
    model = TINY["jasper"](num_features=16, vocabulary=VOCAB)
    model.build()
    h, i, blank = VOCAB.encode("h")[0], VOCAB.encode("i")[0], 0
    # frames: h h blank i i blank i -> "hii" (repeats collapse, a blank separates the two i's)
    path = [h, h, blank, i, i, blank, i]
    logits = np.full((1, len(path), 29), -10.0, "float32")
    logits[0, np.arange(len(path)), path] = 10.0
    lengths = tf.constant([len(path)])
    decode = lambda strategy, width=1: keras.ops.ctc_decode(  # noqa: E731
        logits,
        lengths,
        strategy=strategy,  # noqa: E731
        beam_width=width,
        mask_index=0,
    )[0][0].numpy()
    greedy = decode("greedy")[0]
    assert VOCAB.decode(greedy[greedy >= 0]) == "hii"
    beam = decode("beam_search", 8)[0]
    assert VOCAB.decode(beam[beam >= 0]) == "hii"
    # where the best single path is wrong but the best labelling is right, beam search finds the labelling:
    # P("a") = 0.6 * 0.6 (a a) + 0.6 * 0.4 (a -) + 0.4 * 0.6 (- a) = 0.84 > P("") = 0.16, the greedy path "- -"
    # has 0.4 * 0.4 ... so make the blank the per-frame argmax:
    a = VOCAB.encode("a")[0]
    probs = np.full((1, 2, 29), 1e-6, "float32")
    probs[0, :, blank], probs[0, :, a] = 0.55, 0.45
    logits = np.log(probs)
    greedy = keras.ops.ctc_decode(logits, tf.constant([2]), strategy="greedy", mask_index=0)[0][
        0
    ].numpy()[0]
    beam = keras.ops.ctc_decode(
        logits, tf.constant([2]), strategy="beam_search", beam_width=8, mask_index=0
    )[0][0].numpy()[0]
    assert VOCAB.decode(greedy[greedy >= 0]) == "" and VOCAB.decode(beam[beam >= 0]) == "a"


@pytest.mark.parametrize("name", sorted(TINY))
def test_each_model_reduces_time_by_its_stride_and_computes_a_float32_ctc_loss(name):
    keras.utils.set_random_seed(0)
    model = TINY[name](num_features=16)
    inputs = features_batch()
    logits = model(inputs)
    reduction = 4 if name == "quartznet" else 2
    frames = [-(-n // reduction) for n in (40, 27)]
    assert logits.dtype == "float32" and logits.shape == (2, frames[0], 29)
    assert model.time_reduction == reduction
    labels = np.array([VOCAB.encode("hello"), VOCAB.encode("bye") + [0, 0]], "int32")
    loss = model.compute_loss(inputs, labels, logits)
    expected = keras.ops.ctc_loss(labels, logits, np.array([5, 3]), np.array(frames), mask_index=0)
    np.testing.assert_allclose(float(loss), float(np.mean(expected)), rtol=1e-5)


def test_the_ctc_kernel_loss_and_gradient_equal_keras_ctc_loss():
    from keras_s2s.models.speech_to_text import ctc_loss

    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=(4, 30, 7)).astype("float32"))
    labels = np.zeros((4, 9), "int32")
    # with repeats
    for row, text in enumerate([[1, 2, 2, 3], [4, 4, 4, 5, 6, 1, 2, 3, 3], [6], [2, 5, 2, 5, 2]]):
        labels[row, : len(text)] = text
    label_lengths, logit_lengths = (labels != 0).sum(axis=1), np.array([30, 25, 8, 17], "int32")

    def loss_and_gradient(loss_fn):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            losses = loss_fn()
            total = tf.reduce_sum(losses)
        return losses.numpy(), tape.gradient(total, logits).numpy()

    ours = loss_and_gradient(
        lambda: ctc_loss(tf.constant(labels), logits, tf.constant(logit_lengths))
    )
    keras_ = loss_and_gradient(
        lambda: keras.ops.ctc_loss(labels, logits, label_lengths, logit_lengths, mask_index=0)
    )
    np.testing.assert_allclose(ours[0], keras_[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], keras_[1], atol=1e-5)
    assert np.all(ours[1][2, 8:] == 0), "no gradient beyond an utterance's frames"

    # a transcript longer than its frames (3 for 9 labels), or as long but without room for the
    # blanks its repeats need (10 frames for 9 labels + 3 repeats: the kernel's "No valid path
    # found", inf): no error, loss 0 and no gradient for it, the others unchanged
    for frames in (3, 10):
        short = np.array([30, frames, 8, 17], "int32")
        losses, gradient = loss_and_gradient(
            lambda short=short: ctc_loss(tf.constant(labels), logits, tf.constant(short))
        )
        assert losses[1] == 0 and not gradient[1].any() and np.isfinite(gradient).all()
        np.testing.assert_allclose(losses[[0, 2, 3]], ours[0][[0, 2, 3]], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(TINY))
def test_mixed_bfloat16_keeps_float32_weights_and_logits(name):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = TINY[name](num_features=16)
    assert model(features_batch()).dtype == "float32"
    assert all(w.dtype == "float32" for w in model.weights)


def test_jasper_residual_modes_and_bad_arguments():
    dense = TINY["jasper"](num_features=16)
    assert [b.num_residuals for b in dense.blocks] == [1, 2]
    block = Jasper(
        prologue_channels=8,
        channels=[8, 8],
        kernels=[3, 3],
        dropouts=[0, 0],
        residual="block",
        epilogue_channels=[8, 8],
        num_features=16,
    )
    assert [b.num_residuals for b in block.blocks] == [1, 1]
    assert [b.num_residuals for b in TINY["wave2letter"](num_features=16).blocks] == [0, 0, 0]
    with pytest.raises(ValueError, match="one entry per block"):
        Jasper(channels=[8, 8], kernels=[3], dropouts=[0, 0])
    with pytest.raises(ValueError, match="residual must be"):
        Jasper(residual="skip")
    quartz = TINY["quartznet"](num_features=16)
    assert quartz.time_reduction == 4 and quartz.reductions == [2, 4, 4]
    assert all(b.separable for b in [quartz.prologue, *quartz.blocks])
    assert [b.num_residuals for b in quartz.blocks] == [1, 1]
    with pytest.raises(ValueError, match="need residual 'block' or 'none'"):
        Jasper(channels=[8, 8], kernels=[3, 3], dropouts=[0, 0], block_strides=[2, 1])
    with pytest.raises(ValueError, match="one stride >= 1 per block"):
        QuartzNet(channels=[8, 8], kernels=[3, 3], dropouts=[0, 0], block_strides=[2])
    with pytest.raises(ValueError, match="rnn_type must be"):
        DeepSpeech2(rnn_type="rnn")
    with pytest.raises(ValueError, match="does not match the extractor's"):
        Jasper(num_features=10, extractor=FeatureExtractor(num_features=16))


def test_save_load_round_trip_and_transcribe_from_arrays(tmp_path):
    extractor = FeatureExtractor(num_features=16, num_mels=16)
    model = TINY["wave2letter"](num_features=16, vocabulary=VOCAB, extractor=extractor)
    model.build()
    model.compile(optimizer="adam")
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    audio = [np.random.default_rng(s).normal(size=8000).astype("float32") * 0.1 for s in range(3)]
    assert restored.transcribe(audio) == model.transcribe(audio)
    assert restored.extractor.get_config() == extractor.get_config()


def test_augmentation_changes_inputs_randomly_and_keeps_shapes():
    audio = np.sin(np.arange(16000) / 10).astype("float32")
    rng = np.random.default_rng(0)
    slow, fast = perturb_speed(audio, 0.9, 0.9, rng), perturb_speed(audio, 1.1, 1.1, rng)
    assert abs(len(slow) - 16000 / 0.9) < 2 and abs(len(fast) - 16000 / 1.1) < 2
    noisy = add_noise(audio, 20.0, 20.0, rng)
    snr = 10 * np.log10(np.mean(audio**2) / np.mean((noisy - audio) ** 2))
    assert abs(snr - 20.0) < 0.5
    assert not np.allclose(add_noise(audio, 10, 30, rng), add_noise(audio, 10, 30, rng))
    features = np.ones([100, 40], np.float32)
    masked = spec_augment(features, freq_masks=2, freq_width=8, time_masks=2, time_width=10)
    assert masked.shape == (100, 40)
    zero_columns = int(np.all(masked == 0, axis=0).sum())
    zero_rows = int(np.all(masked == 0, axis=1).sum())
    assert zero_columns <= 16 and zero_rows <= 20
    draws = {tuple(np.flatnonzero(spec_augment(features, 2, 8, 0, 0)[0] == 0)) for _ in range(10)}
    assert len(draws) > 1, "masks are random"


def test_unusable_utterances_are_skipped_counted_and_named(tmp_path, caplog):
    rate = 16000
    good = []
    for i in range(3):
        write_wav(
            tmp_path / f"ok{i}.wav", np.sin(np.arange(rate) / (5 + i)).astype("float32") * 0.3, rate
        )
        good.append(Utterance(tmp_path / f"ok{i}.wav", "hello there", i + 2))
    (tmp_path / "bad.wav").write_text("not audio")
    write_wav(tmp_path / "long.wav", np.ones(rate * 3, "float32") * 0.1, rate)
    bad = [
        Utterance(tmp_path / "bad.wav", "hello", 10),
        Utterance(tmp_path / "ok0.wav", "naïve 42", 11),
        Utterance(tmp_path / "long.wav", "too long", 12),
        Utterance(tmp_path / "ok1.wav", "  ", 13),
    ]
    with caplog.at_level(logging.WARNING, logger="keras_s2s"):
        kept = usable_utterances(good + bad, VOCAB, max_duration=2.0)
    assert [u for u, _ in kept] == good
    text = caplog.text
    assert "skipped 1 utterance(s) for unreadable audio" in text and "bad.wav (line 10)" in text
    assert "characters outside the vocabulary ('24ï')" in text
    assert "duration outside [0.1, 2.0] s" in text and "empty transcript" in text
    with pytest.raises(CorpusError, match="none of 4 utterances is usable"):
        usable_utterances(bad, VOCAB, max_duration=2.0)


def test_a_tiny_jasper_learns_to_transcribe_what_it_hears(tmp_path):
    """Convergence: a small Jasper overfits four synthesized sentences within a few hundred steps."""
    from keras_s2s.audio.io import resample
    from keras_s2s.corpora.espeak import synthesize

    extractor = FeatureExtractor(num_features=32, num_mels=32, dither=0.0)
    texts = ["the red dog runs", "my old cat sleeps", "two birds sing", "a big car stops"]
    audio = [resample(*synthesize(t, voice="en-us"), 16000) for t in texts]
    feats = [extractor(tf.constant(a)).numpy() for a in audio]
    lengths = np.array([len(f) for f in feats], "int32")
    x = np.zeros((4, lengths.max(), 32), "float32")
    for row, f in enumerate(feats):
        x[row, : len(f)] = f
    labels = [VOCAB.encode(t) for t in texts]
    y = np.zeros((4, max(map(len, labels))), "int32")
    for row, ids in enumerate(labels):
        y[row, : len(ids)] = ids
    keras.utils.set_random_seed(0)
    model = Jasper(
        num_features=32,
        prologue_channels=64,
        channels=[64, 64],
        kernels=[11, 11],
        dropouts=[0, 0],
        repeats=2,
        epilogue_channels=[96, 96],
        epilogue_kernel=11,
        vocabulary=VOCAB,
        extractor=extractor,
    )
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    inputs = {"features": x, "feature_lengths": lengths}
    dataset = tf.data.Dataset.from_tensors((inputs, y)).repeat()
    history = model.fit(dataset, steps_per_epoch=50, epochs=6, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] / 10
    assert model.decode(x, lengths) == texts
    # the same through transcribe, greedy and fused with a word LM of other sentences too
    from keras_s2s.decoding.ctc_lm import LMDecoder
    from keras_s2s.decoding.ngram_lm import KneserNeyLM

    KneserNeyLM.estimate([*texts, "the red cat runs", "two dogs sing"], order=2).write_arpa(
        tmp_path / "lm.arpa"
    )
    assert model.transcribe(audio) == texts
    decoder = LMDecoder(VOCAB, tmp_path / "lm.arpa", alpha=0.5, beta=1.0, beam_width=8)
    assert model.transcribe(audio, lm=decoder) == texts
    # log-probabilities computed once decode to the same text; one row per clip, its own length
    frames = model.log_probabilities(audio, batch_size=3)
    assert [f.shape[1] for f in frames] == [VOCAB.vocab_size] * 4
    assert len({len(f) for f in frames}) > 1
    assert [decoder.decode_one(f) for f in frames] == texts


@pytest.mark.parametrize(
    "card", ["jasper_demo", "wave2letter_demo", "deepspeech2_demo", "quartznet_demo"]
)
def test_demo_cards_build_with_the_cards_features_and_alphabet(card):
    from keras_s2s import zoo

    model = zoo.load(card, precision="float32")
    assert model.vocab_size == 29 and model.num_features == model.extractor.feature_size == 64
    assert isinstance(model.transcribe([np.zeros(4000, "float32") + 0.01])[0], str)
    with pytest.raises(Exception, match="'data.features' must be mapping"):
        zoo.get_card(card, features="logmel")


@pytest.mark.parametrize("name", sorted(TINY))
def test_padding_never_changes_an_utterances_output(name):
    keras.utils.set_random_seed(0)
    model = TINY[name](num_features=16)
    inputs = features_batch(frames=(40, 27))
    short = {
        "features": inputs["features"][1:, :28],
        "feature_lengths": inputs["feature_lengths"][1:],
    }
    frames = -(-27 // model.time_reduction)
    assert model(inputs).shape[1] == -(-40 // model.time_reduction)
    np.testing.assert_allclose(model(inputs)[1, :frames], model(short)[0, :frames], atol=1e-4)
