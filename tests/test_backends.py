"""Every zoo architecture on both Keras backends: this file runs in the TensorFlow pass and in the JAX
pass (TensorFlow blocked, see conftest.py); test_backend_twin.py checks that JAX computes the same
losses, outputs and decoded ids from the same weights."""

import json
import math
from pathlib import Path

import backend_twin as twin
import keras
import numpy as np
import pytest
from model_testing import run_model_test

from keras_s2s.data.batches import Batching

BACKEND = keras.backend.backend()
ROOT = Path(__file__).resolve().parents[1]


def test_the_model_helper_covers_every_registered_architecture():
    from keras_s2s.models import ARCHITECTURES

    assert set(twin.ARCHITECTURES) == set(ARCHITECTURES)


@pytest.mark.parametrize("architecture", list(twin.ARCHITECTURES))
def test_every_architecture_passes_the_model_checks(architecture, tmp_path):
    """Config round trip, training, `.keras` save and load, bfloat16 (tests/model_testing.py)."""
    model = run_model_test(
        lambda **settings: twin.build(architecture, **settings),
        lambda model: twin.batch(architecture, model),
        # after the `.keras` round trip, greedy decoding shows the weights back; the searches are
        # compared across backends below
        lambda model, inputs, labels: twin.outputs(
            architecture, model, inputs, labels, ("greedy",)
        ),
        tmp_path,
        atol=1e-6,
    )
    if architecture == "tacotron2":
        (spoken,) = model.infer(["a tiny test"], max_decoder_steps=5)
        assert spoken["mel"].shape[1] == model.num_mels and 0 < len(spoken["mel"]) <= 5 * 3
        assert spoken["alignment"].shape[1] == len(model.vocabulary.encode("a tiny test"))


@pytest.mark.skipif(BACKEND != "tensorflow", reason="compares TensorFlow with a JAX subprocess")
def _apply(optimizer, grads, variables):
    """One update as `fit` makes it on this backend: stateful on TensorFlow, stateless under jit on JAX."""
    if BACKEND != "jax":
        optimizer.apply(grads, variables)
        return
    import jax

    step = jax.jit(optimizer.stateless_apply)
    new_variables, new_state = step(
        [v.value for v in optimizer.variables], grads, [v.value for v in variables]
    )
    for variable, value in zip([*variables, *optimizer.variables], [*new_variables, *new_state]):
        variable.assign(value)


def _expected_scales(algorithm: str, gradients: list, scale: float, settings: dict) -> list:
    """The loss scale after each step, by each rule's definition (NumPy)."""
    scales, good = [], 0
    mean = square = count = 0.0
    for gradient in gradients:
        finite = bool(np.isfinite(gradient).all())
        if algorithm == "dynamic":
            if not finite:
                scale, good = scale / 2, 0
            elif good == settings["growth_interval"] - 1:
                scale, good = scale * 2, 0
            else:
                good += 1
        elif algorithm == "logmax":
            log_max = 15.0
            x = np.log2(np.abs(np.asarray(gradient) / scale).max()) if finite else log_max
            count += 1
            mean = 0.99 * mean + 0.01 * x
            square = 0.999 * square + 0.001 * x * x
            m, s = mean / (1 - 0.99**count), square / (1 - 0.999**count)
            deviation = math.sqrt(max(s - m * m, 0.0))
            scale = 2.0 ** min(max(log_max - m - 3.09 * deviation, 0.0), 24.0)
        scales.append(scale)
    return scales


@pytest.mark.parametrize("algorithm", ["dynamic", "static", "logmax"])
def test_each_loss_scale_rule_moves_the_scale_by_its_definition(algorithm):
    from keras_s2s.precision.loss_scale import build_loss_scale_optimizer

    settings = {"algorithm": algorithm, "initial_scale": 1024.0}
    if algorithm == "dynamic":
        settings["growth_interval"] = 2
    weights = keras.Variable(np.ones(3, "float32"))
    optimizer = build_loss_scale_optimizer(keras.optimizers.SGD(0.5), dict(settings))
    optimizer.build([weights])
    gradients = [
        np.array([512.0, -256.0, 1024.0], "float32"),
        np.array([np.inf, 1.0, 1.0], "float32"),
        np.array([300.0, 2.0, -8.0], "float32"),
        np.array([64.0, 64.0, 64.0], "float32"),
        np.array([np.nan, 0.0, 0.0], "float32"),
        np.array([2048.0, 1.0, 1.0], "float32"),
    ]
    expected_weights = np.ones(3)
    scales, scale = [], 1024.0
    expected = _expected_scales(algorithm, gradients, 1024.0, settings)
    for gradient in gradients:
        before = float(keras.ops.convert_to_numpy(optimizer.dynamic_scale))
        _apply(optimizer, [keras.ops.convert_to_tensor(gradient)], [weights])
        if np.isfinite(gradient).all():
            expected_weights = expected_weights - 0.5 * gradient / before
        scale = float(keras.ops.convert_to_numpy(optimizer.dynamic_scale))
        scales.append(scale)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(weights), expected_weights, rtol=1e-5)
    np.testing.assert_allclose(scales, expected, rtol=1e-4)
    if algorithm == "static":
        assert set(scales) == {1024.0}
    else:
        assert len(set(scales)) > 1  # the rule moved the scale


def test_bucketed_pairs_serve_every_pair_once_a_pass_in_one_shape_per_bucket():
    from keras_s2s.data.translation import BucketedPairs

    rng = np.random.default_rng(0)
    pairs = [
        (
            list(rng.integers(4, 50, rng.integers(1, 30))) + [3],
            list(rng.integers(4, 50, rng.integers(1, 30))),
        )
        for _ in range(200)
    ]
    batches = BucketedPairs(
        pairs, [16, 16, 8, 8], bucket_width=8, batching=Batching(shuffle=True, seed=1)
    )
    seen = []
    for index in range(len(batches)):
        inputs, labels = batches[index]
        width = inputs["source"].shape[1]
        assert (
            width % 8 == 0 and inputs["target_in"].shape == labels.shape == inputs["source"].shape
        )
        assert (inputs["target_in"][:, 0] == 2).all()  # BOS
        for source, target_in in zip(inputs["source"], inputs["target_in"]):
            seen.append((tuple(source[source > 0]), tuple(target_in[1:][target_in[1:] > 0])))
    assert sorted(seen) == sorted((tuple(s), tuple(t)) for s, t in pairs)
    widths = {(size, width) for size, width in batches.shapes()}
    assert len({width for _, width in widths}) <= 4  # one padded width per bucket
    endless = BucketedPairs(
        pairs, [16, 16, 8, 8], batching=Batching(drop_remainder=True, repeat=True, seed=1)
    )
    assert endless.num_batches is None
    first = [endless[i][0]["source"].shape for i in range(len(endless))]
    assert all(shape[0] in (16, 8) for shape in first)
    assert len({endless[i][0]["source"].shape for i in range(3 * len(endless))}) <= 4
    # split over two devices: every batch even (a bucket's last, odd batch loses one pair)
    halves = BucketedPairs(pairs, [16, 16, 8, 8], batching=Batching(shuffle=False, replicas=2))
    assert all(len(chunk) % 2 == 0 for _, chunk in halves.batches)
    assert sum(len(chunk) for _, chunk in halves.batches) >= len(pairs) - 4
    with pytest.raises(ValueError, match="cannot be split evenly over 2 devices"):
        BucketedPairs(pairs, [16, 15, 8, 8], batching=Batching(replicas=2))


def test_skipped_bucketed_batches_go_on_with_the_stream_a_resumed_run_would_have_seen():
    """What a resumed JAX run trains on: `skip(n)` serves batch n + i of the stream as batch i,
    across passes (each shuffled anew), as `tf.data.Dataset.skip` does on TensorFlow."""
    from keras_s2s.data.translation import BucketedPairs

    rng = np.random.default_rng(0)
    pairs = [
        ([int(t) for t in rng.integers(4, 50, rng.integers(1, 20))], [5, 6]) for _ in range(60)
    ]
    stream = BucketedPairs(
        pairs, [8, 8, 8], batching=Batching(repeat=True, drop_remainder=True, seed=3)
    )
    resumed = BucketedPairs(
        pairs, [8, 8, 8], batching=Batching(repeat=True, drop_remainder=True, seed=3)
    ).skip(5)
    assert len(stream) < 10, "the skipped stream crosses a pass"
    for index in range(12):
        expected, got = stream[5 + index], resumed[index]
        np.testing.assert_array_equal(expected[0]["source"], got[0]["source"])
        np.testing.assert_array_equal(expected[1], got[1])


@pytest.mark.skipif(BACKEND == "tensorflow", reason="tests/test_cli.py covers TensorFlow")
def test_the_command_line_trains_evaluates_and_translates_without_tensorflow(tmp_path, capsys):
    """`keras-s2s train` on JAX, stopped by a full disk after its first epoch's backup and finished by
    the same command (the backup's weights, optimizer state and epoch count restored), then
    `translate`; `export` to a SavedModel is refused by name."""
    import sys as system

    from tiny import TINY_GNMT, disk_full_after_first_backup, flags

    from keras_s2s import cli

    run = tmp_path / "run"
    command = ["train", "gnmt_demo", "--data", "demo", "--epochs", "2", "--out", str(run)]
    command += [*TINY_GNMT, *flags(steps_per_epoch=2, max_length=24, decode_max_length=12)]
    with disk_full_after_first_backup():
        assert cli.main(command) == 1
    assert (run / "backup" / "latest.json").is_file() and not (run / "model.keras").exists()
    assert cli.main(command) == 0
    assert "held-out BLEU" in capsys.readouterr().out
    assert {"model.keras", "history.json", "fit.json", "eval.json", "preset"} <= {
        p.name for p in run.iterdir()
    }
    finished = json.loads((run / "fit.json").read_text())
    assert finished["training_steps"] == 4, "epoch 2 after the restored epoch 1, no more"
    assert len(json.loads((run / "history.json").read_text())["loss"]) == 2
    assert "tensorflow" not in system.modules
    (tmp_path / "in.txt").write_text("the dog sees a cat\n")
    assert (
        cli.main(
            [
                "translate",
                "--model",
                str(run),
                "--input",
                str(tmp_path / "in.txt"),
                "--beam-width",
                "2",
            ]
        )
        == 0
    )
    assert len(capsys.readouterr().out.strip().splitlines()) == 1
    assert cli.main(["export", "--model", str(run), "--out", str(tmp_path / "served")]) == 2
    assert "needs Keras's TensorFlow backend" in capsys.readouterr().err
    assert not (tmp_path / "served").exists()


def _tone_utterances(folder: Path, seconds: list[float], rate: int) -> list:
    """(Utterance, seconds) of tones of the given lengths, written as WAV files in `folder`."""
    from keras_s2s.audio.io import write_wav
    from keras_s2s.audio.manifest import Utterance

    utterances = []
    for index, length in enumerate(seconds):
        time = np.arange(int(length * rate)) / rate
        path = folder / f"{index}.wav"
        write_wav(path, 0.3 * np.sin(2 * np.pi * (200 + 40 * index) * time), rate)
        words = " ".join(["abc", "de", "f"][: 1 + index % 3])
        utterances.append((Utterance(path, words, index + 1), length))
    return utterances


def test_speech_batches_serve_every_utterance_once_a_pass_in_one_shape_per_bucket(tmp_path):
    from keras_s2s.audio.features import FeatureExtractor
    from keras_s2s.audio.io import read_audio
    from keras_s2s.data.speech import SpeechBatches
    from keras_s2s.text.characters import CharVocabulary

    lengths = [0.3, 0.45, 0.6, 0.9, 1.1, 1.3, 1.6, 0.35, 0.5, 1.2, 0.7]
    utterances = _tone_utterances(tmp_path, lengths, 16000)
    extractor, vocabulary = FeatureExtractor(num_features=16), CharVocabulary()
    batches = SpeechBatches(
        utterances,
        extractor,
        vocabulary,
        bucket_seconds=0.5,
        batching=Batching(batch_size=3, shuffle=False),
    )
    served = {}
    for index in range(len(batches)):
        inputs, labels = batches[index]
        size, frames, _ = inputs["features"].shape
        assert (size, frames, labels.shape[1]) in batches.shapes() and frames % 8 == 0
        for features, length, label in zip(inputs["features"], inputs["feature_lengths"], labels):
            served[int(length)] = (features, label)
    assert len(batches.shapes()) <= len(batches.buckets) + 1
    with pytest.raises(IndexError):
        batches[len(batches)]
    for utterance, _ in utterances:  # each one once, its features those of the extractor
        expected = extractor.numpy_features(read_audio(utterance.path, 16000))
        features, label = served.pop(len(expected))
        np.testing.assert_allclose(features[: len(expected)], expected, atol=1e-5)
        assert not features[len(expected) :].any()
        encoded = vocabulary.encode(utterance.transcript)
        assert list(label[: len(encoded)]) == encoded and not label[len(encoded) :].any()
    # augmented and endless: slowed speech still fits its bucket; the same seed, the same batches
    settings = {
        "speed": [0.8, 1.2],
        "noise_snr_db": [20, 30],
        "time_masks": 1,
        "time_mask_width": 5,
    }
    plan = Batching(batch_size=2, repeat=True, seed=3, workers=2)
    endless = [
        SpeechBatches(utterances, extractor, vocabulary, plan, settings, bucket_seconds=0.5)
        for _ in range(2)
    ]
    assert endless[0].num_batches is None
    shapes = set()
    for index in range(3 * len(endless[0])):
        first, second = endless[0][index], endless[1][index]
        np.testing.assert_array_equal(first[0]["features"], second[0]["features"])
        lengths_in = first[0]["feature_lengths"]
        assert (lengths_in <= first[0]["features"].shape[1]).all()
        shapes.add(first[0]["features"].shape)
    assert len(shapes) <= len(endless[0].shapes())


def test_mel_batches_pad_with_silence_past_every_utterance_to_the_reduction_factor(tmp_path):
    from keras_s2s.data.tts import MelBatches, mel_extractor, tts_vocabulary

    extractor = mel_extractor(sample_rate=16000, num_features=20)
    utterances = _tone_utterances(tmp_path, [0.3, 0.5, 0.8, 1.1, 0.4], 16000)
    batches = MelBatches(
        utterances, extractor, tts_vocabulary(), reduction_factor=3, tail_steps=2,
        bucket_seconds=0.5, batching=Batching(batch_size=2, pad_to_multiple=1),
    )  # fmt: skip
    silence = np.log(extractor.log_floor)
    for index in range(len(batches)):
        inputs, mel = batches[index]
        assert mel is inputs["mel"] and mel.shape[1] % 3 == 0 and mel.shape[2] == 20
        assert inputs["text"].shape[1] % 8 == 0
        for frames, length in zip(mel, inputs["mel_lengths"]):
            assert length + 2 * 3 <= len(frames), "tail_steps decoder steps of silence at least"
            assert np.all(frames[length:] == np.float32(silence))
            assert not np.all(frames[length - 1] == np.float32(silence))
    assert len(batches.cache) == len(utterances), "every mel target computed once and kept"


@pytest.mark.skipif(BACKEND == "tensorflow", reason="tests/test_cli.py and test_tts.py cover it")
def test_speech_commands_run_without_tensorflow(tmp_path, capsys, monkeypatch):
    """Recognition and synthesis through `keras-s2s` on JAX: train (NumPy input pipelines), evaluate,
    transcribe, synthesize and average, with `import tensorflow` blocked."""
    import sys as system

    from tiny import TINY_TACOTRON, flags

    from keras_s2s import cli

    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path / "home"))
    asr, tts = tmp_path / "asr", tmp_path / "tts"
    corpus = dict(num_train=12, num_valid=2, num_test=3, batch_size=4)
    recognizer = flags(
        channels=[16, 16], kernels=[5, 5], dropouts=[0.1, 0.1], prologue_channels=16,
        epilogue_channels=[16, 16], epilogue_kernel=5, **corpus,
    )  # fmt: skip
    train = ["train", "wave2letter_demo", "--data", "demo-speech", "--steps", "2", "--out"]
    one_device = ["--precision", "float32", "--strategy", "default"]  # 12 utterances: no even split
    assert cli.main([*train, str(asr), *recognizer, *one_device]) == 0
    assert "held-out WER" in capsys.readouterr().out
    history = json.loads((asr / "history.json").read_text())
    assert 0 <= history["val_wer"][0] <= 100, "validated by greedy WER on this backend too"
    assert cli.main(["evaluate", "--model", str(asr), "--beam-width", "2"]) == 0
    assert (asr / "eval-beam2.json").is_file()
    (tmp_path / "lm.txt").write_text("the red dog runs\nthe old cat sleeps\n")
    lm = ["--lm", str(tmp_path / "lm.arpa"), "--lexicon", "--beam-width", "4"]
    assert cli.main(["lm", "--text", str(tmp_path / "lm.txt"), "--out", lm[1]]) == 0
    assert cli.main(["evaluate", "--model", str(asr), *lm]) == 0, "the lexicon-held LM search"
    assert json.loads((asr / "eval-beam4.json").read_text())["lm"] == lm[1]
    wav = str(next((tmp_path / "home" / "demo-speech").rglob("*.wav")))
    capsys.readouterr()
    assert cli.main(["transcribe", "--model", str(asr), wav]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1  # one file: its transcript
    assert (
        cli.main(["average", "--model", str(asr), "--last", "1", "--out", str(tmp_path / "a")]) == 0
    )

    synthesizer = flags(**TINY_TACOTRON, **corpus, max_decoder_steps=12)
    train = ["train", "tacotron2_demo", "--data", "demo-tts", "--steps", "2", "--out", str(tts)]
    assert cli.main([*train, *synthesizer, *one_device]) == 0
    assert "held-out synthesis" in capsys.readouterr().out
    said = tmp_path / "said.wav"
    assert cli.main(["synthesize", "--model", str(tts), "-o", str(said), "a red dog."]) == 0
    assert said.stat().st_size > 44 and "tensorflow" not in system.modules


@pytest.mark.skipif(BACKEND == "tensorflow", reason="tests/test_distribute.py covers TensorFlow")
def test_mirrored_on_jax_splits_each_batch_over_the_devices_and_updates_as_one_device():
    from keras_s2s.distribution import describe_strategy, get_strategy

    assert len(keras.distribution.list_devices()) == 2  # conftest: two host devices
    mirrored = get_strategy("mirrored")
    assert describe_strategy(mirrored) == "2 replica(s)"
    rng = np.random.default_rng(0)
    source, target = (rng.integers(4, 40, (32, 8)).astype("int32") for _ in range(2))
    weights = []
    for strategy in (get_strategy("default"), mirrored):
        model = twin.build("gnmt", dropout=0.0, strategy=strategy)
        with strategy.scope():
            model.fit({"source": source, "target_in": target}, target, batch_size=16, verbose=0)
        weights.append([np.asarray(w.value) for w in model.weights])
    for one, two in zip(*weights):
        np.testing.assert_allclose(one, two, atol=1e-5)


def test_the_runtime_answers_what_the_run_asks_of_the_backend(tmp_path):
    """One runtime per run: replicas, chief, padding, compiled steps, validation data and the
    SavedModel refusal, from the card's strategy, devices and precision on either backend."""
    from devices import cpu_devices

    from keras_s2s import zoo
    from keras_s2s.distribution import make_runtime, runtime_of_card

    runtime = make_runtime("mirrored", devices=cpu_devices(), precision="mixed_bfloat16")
    assert (runtime.replicas, runtime.chief, runtime.multiworker) == (2, True, False)
    assert (runtime.policy, runtime.pad_multiple, runtime.describe()) == (
        "mixed_bfloat16",
        8,
        "2 replica(s)",
    )
    assert keras.mixed_precision.global_policy().name == "mixed_bfloat16", "the runtime sets it"
    card = zoo.get_card("gnmt_demo", precision="float32", strategy="default")
    one = runtime_of_card(card)
    assert (one.replicas, one.pad_multiple, one.policy) == (1, 1, "float32")
    assert runtime_of_card(card, one) is one
    assert one.jit_compile(card) is (BACKEND == "jax"), "JAX compiles every step"
    valid = Batching(batch_size=2, repeat=True).held_out()
    assert (valid.shuffle, valid.repeat, valid.drop_remainder, valid.batch_size) == (
        False,
        False,
        False,
        2,
    )
    assert valid.tf_data is (BACKEND == "tensorflow")
    if BACKEND == "jax":
        with pytest.raises(ValueError, match="saved_model needs Keras's TensorFlow backend"):
            one.require_saved_model()
    else:
        one.require_saved_model()
    assert one.finish_fit("model", tmp_path) == "model", "one process: the model as trained"


def test_mirrored_runs_on_the_devices_named_and_refuses_one_that_is_not_here():
    """JAX dropped `--devices` (a run asked for /gpu:3 trained on the CPU, exit 0)."""
    from keras_s2s.distribution import describe_strategy, get_strategy

    one = get_strategy("mirrored", devices=["/cpu:1"])
    assert describe_strategy(one) == "1 replica(s)"
    if BACKEND == "jax":
        import jax

        with one.scope():
            weight = keras.Variable(np.zeros(4, "float32"))
        assert weight.value.devices() == {jax.devices("cpu")[1]}, "the weights live on cpu:1"
    else:
        assert one.extended.worker_devices[0].endswith("CPU:1")
    assert describe_strategy(get_strategy("auto", devices=["/cpu:0", "/cpu:1"])) == "2 replica(s)"
    with pytest.raises(ValueError, match="device '/gpu:3' does not exist here"):
        get_strategy("mirrored", devices=["/gpu:3"])
    with pytest.raises(ValueError, match="devices repeat"):
        get_strategy("mirrored", devices=["/cpu:1", "/cpu:1"])


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_the_16_bit_dropout_keeps_the_right_fraction_scales_and_redraws(rate):
    """The bit-drawing Dropout on this backend (TensorFlow's and JAX's own paths): the keep
    fraction, the scale, a fresh mask per call, an odd bfloat16 size, the gradient is the mask."""
    from keras_s2s.layers.dropout import Dropout

    layer = Dropout(rate, seed=3)
    y = keras.ops.convert_to_numpy(layer(np.ones((200, 500), "float32"), training=True))
    kept = y != 0
    assert abs(kept.mean() - (1 - rate)) < 0.005  # 100,000 draws: 5 standard deviations
    np.testing.assert_allclose(y[kept], 1 / (1 - rate), rtol=1e-6)
    again = keras.ops.convert_to_numpy(layer(np.ones((200, 500), "float32"), training=True))
    assert ((again != 0) != kept).mean() > 0.05  # a fresh mask per call
    odd = Dropout(rate, seed=3, dtype="mixed_bfloat16")(
        np.ones((3, 5, 7), "float32"), training=True
    )
    assert tuple(odd.shape) == (3, 5, 7) and "bfloat16" in str(odd.dtype)
    if BACKEND == "jax":
        import jax

        from keras_s2s.layers.dropout import drop_jax

        x = np.random.default_rng(0).normal(size=(32, 48)).astype("float32")
        key = np.array([5, 6], "uint32")
        gradient = jax.grad(lambda v: drop_jax(v, 0.25, key).sum())(x)
        expected = np.where(np.asarray(drop_jax(x, 0.25, key)) != 0, 1 / 0.75, 0.0)
        np.testing.assert_allclose(np.asarray(gradient), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "shape, kernel, strides, padding",
    [
        ((2, 9, 13, 1), (5, 7), (2, 2), "same"),  # DeepSpeech2's first layer, odd sizes
        ((2, 6, 10, 3), (3, 5), (1, 2), "same"),  # its second
        ((2, 11, 14, 2), (3, 4), (2, 3), "valid"),
    ],
)
def test_the_strided_conv2d_computes_keras_convolution_and_its_gradients(
    shape, kernel, strides, padding
):
    """`space_to_depth_conv` is Keras's strided convolution; on JAX, Conv2D's fast input gradient
    (and its kernel gradient) equal Keras's."""
    from keras_s2s.layers.strided_conv import (
        Conv2D,
        _conv_with_fast_input_gradient,
        fast_input_gradient_applies,
        space_to_depth_conv,
    )

    rng = np.random.default_rng(1)
    x = rng.normal(size=shape).astype("float32")
    weights = rng.normal(size=(*kernel, shape[-1], 4)).astype("float32")
    expected = keras.ops.conv(x, weights, strides=strides, padding=padding)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(space_to_depth_conv(x, weights, strides, padding)),
        keras.ops.convert_to_numpy(expected),
        atol=1e-5,
    )
    layer = Conv2D(4, kernel, strides=strides, padding=padding, use_bias=False)
    layer.build(shape)
    layer.set_weights([weights])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)), keras.ops.convert_to_numpy(expected), atol=1e-5
    )
    assert fast_input_gradient_applies(layer) == (BACKEND == "jax")
    assert not fast_input_gradient_applies(Conv2D(4, kernel, padding=padding))  # stride 1: Keras's
    if BACKEND == "jax":
        import jax

        upstream = rng.normal(size=expected.shape).astype("float32")

        def gradients(conv):
            return jax.grad(lambda x, w: (conv(x, w) * upstream).sum(), argnums=(0, 1))(x, weights)

        ours = gradients(lambda x, w: _conv_with_fast_input_gradient(x, w, strides, padding))
        keras_ = gradients(lambda x, w: keras.ops.conv(x, w, strides=strides, padding=padding))
        for one, two in zip(ours, keras_):
            np.testing.assert_allclose(np.asarray(one), np.asarray(two), atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("architecture", ["gnmt", "transformer"])
def test_decoding_reads_at_most_the_source_limit_on_either_backend(
    architecture, monkeypatch, caplog
):
    """Models whose positions do not bound a source (GNMT, a sinusoidal Transformer) read at most
    MAX_SOURCE_TOKENS: a 1 MB line ran TensorFlow out of memory and asked JAX for 100 TB."""
    import logging

    from keras_s2s.models import seq2seq_lm
    from keras_s2s.text.tokenizer import SubwordTokenizer

    monkeypatch.setattr(seq2seq_lm, "MAX_SOURCE_TOKENS", 12)
    texts = ["the red dog runs home", "a cat sees the old dog", "my friend walks"] * 40
    tokenizer = SubwordTokenizer.train(texts, vocab_size=40)
    model = twin.build(architecture, tokenizer=tokenizer, vocab_size=tokenizer.vocab_size)
    assert model.source_limit == 12
    with caplog.at_level(logging.WARNING, "keras_s2s"):
        cut = model.translate(["the red dog", " ".join(texts[:30])], first_line=3)
    assert len(cut) == 2 and "line 4 (" in caplog.text and "translating its first 11" in caplog.text
    assert model.translate([" ".join(texts[:30])]) == [cut[1]], "cut alike in any batch"
    with pytest.raises(ValueError, match="more than 12 tokens, the most this model decodes"):
        model.generate(np.ones((1, 20), "int32"))
