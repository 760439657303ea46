"""Audio reading, features (parity with librosa), manifests and the synthesized demo speech."""

import numpy as np
import pytest
import tensorflow as tf

from keras_s2s.audio.features import FeatureExtractor, librosa_features
from keras_s2s.audio.io import AudioError, read_audio, write_wav
from keras_s2s.audio.manifest import combine_corpora, read_manifest, write_manifest
from keras_s2s.data.batches import Batching
from keras_s2s.text.corpus import CorpusError


def tone(seconds=1.0, rate=16000, seed=0):
    t = np.arange(int(seconds * rate)) / rate
    noise = np.random.default_rng(seed).normal(size=t.shape)
    return (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * noise).astype(np.float32)


@pytest.mark.parametrize("kind, size", [("logmel", 64), ("mfcc", 40), ("spectrogram", 0)])
@pytest.mark.parametrize("normalize", [True, False])
def test_tf_signal_features_match_librosa(kind, size, normalize):
    extractor = FeatureExtractor(
        kind=kind, num_features=size or 64, normalize=normalize, window_ms=25
    )
    ours = extractor(tf.constant(tone())).numpy()
    reference = librosa_features(tone(), extractor)
    assert ours.shape == reference.shape == (extractor.num_frames(16000), extractor.feature_size)
    np.testing.assert_allclose(ours, reference, atol=1e-3)
    # the NumPy path (JAX and other backends) computes the same features
    np.testing.assert_allclose(extractor.numpy_features(tone()), ours, atol=1e-3)
    assert extractor.numpy_features(np.zeros(10, np.float32)).shape == (1, extractor.feature_size)


@pytest.mark.parametrize(
    "rate, n_fft, bands, fmin, fmax", [(16000, 512, 64, 0, 8000), (22050, 1024, 80, 125, 7600)]
)
def test_the_mel_filterbank_is_librosas(rate, n_fft, bands, fmin, fmax):
    import librosa

    from keras_s2s.audio.features import dct_ortho, mel_filterbank

    expected = librosa.filters.mel(sr=rate, n_fft=n_fft, n_mels=bands, fmin=fmin, fmax=fmax)
    np.testing.assert_allclose(mel_filterbank(rate, n_fft, bands, fmin, fmax), expected, atol=1e-7)
    x = np.random.default_rng(0).standard_normal((3, 20)).astype(np.float32)
    import scipy.fft

    np.testing.assert_allclose(dct_ortho(x), scipy.fft.dct(x, type=2, norm="ortho"), atol=1e-5)


def test_feature_settings_dither_and_round_trip():
    extractor = FeatureExtractor(kind="logmel", num_features=32, dither=1e-3, stride_ms=20)
    x = tf.constant(tone(0.5))
    assert extractor(x).shape == (25, 32)  # 1 + (8000 - 320) // 320
    np.testing.assert_array_equal(extractor(x), extractor(x))  # no dither at inference
    assert not np.allclose(extractor(x, training=True), extractor(x, training=True))
    clone = FeatureExtractor.from_config(extractor.get_config())
    np.testing.assert_allclose(clone(x), extractor(x))
    assert extractor(tf.zeros([10])).shape == (1, 32), "shorter than a window: one padded frame"
    with pytest.raises(ValueError, match="feature kind must be one of"):
        FeatureExtractor(kind="mel")


def test_read_audio_resamples_and_names_bad_files(tmp_path):
    write_wav(tmp_path / "a.wav", tone(rate=8000), 8000)
    samples = read_audio(tmp_path / "a.wav", sample_rate=16000)
    assert abs(len(samples) - 16000) <= 2 and samples.dtype == np.float32
    with pytest.raises(AudioError, match="missing.wav: audio file not found"):
        read_audio(tmp_path / "missing.wav")
    (tmp_path / "text.wav").write_text("this is not audio")
    with pytest.raises(AudioError, match="text.wav: not a readable audio file"):
        read_audio(tmp_path / "text.wav")
    write_wav(tmp_path / "empty.wav", np.zeros(0, np.float32), 16000)
    with pytest.raises(AudioError, match="empty.wav: the file holds no audio samples"):
        read_audio(tmp_path / "empty.wav")
    write_wav(tmp_path / "silent.wav", np.zeros(800, np.float32), 16000)
    with pytest.raises(AudioError, match="silent.wav: the audio is silent throughout"):
        read_audio(tmp_path / "silent.wav")
    import soundfile

    from keras_s2s.audio.segments import stream_audio

    for value in (np.nan, np.inf):  # a float WAV can hold them; they made an empty transcript
        damaged = tone(rate=8000)
        damaged[4000:4003] = value
        soundfile.write(tmp_path / "nan.wav", damaged, 8000, subtype="FLOAT")
        message = r"nan.wav: 3 sample\(s\) are not numbers \(NaN or infinite\), the first at 0.50 s"
        with pytest.raises(AudioError, match=message):
            read_audio(tmp_path / "nan.wav")
        with pytest.raises(AudioError, match=message):
            list(stream_audio(tmp_path / "nan.wav"))
        repaired = read_audio(tmp_path / "nan.wav", 8000, repair=True)  # training: a warning
        assert np.isfinite(repaired).all() and (repaired[4000:4003] == 0).all()


def test_manifests_in_several_dialects_and_their_errors(tmp_path):
    write_wav(tmp_path / "a.wav", tone(0.2), 16000)
    (tmp_path / "sub").mkdir()
    write_wav(tmp_path / "sub" / "b.wav", tone(0.2), 16000)
    (tmp_path / "o2s.csv").write_text(
        "wav_filename,wav_filesize,transcript\na.wav,123,hello there\nsub/b.wav,456,good night\n"
    )
    entries = read_manifest(tmp_path / "o2s.csv")
    assert [e.transcript for e in entries] == ["hello there", "good night"]
    assert entries[1].path == tmp_path / "sub" / "b.wav"
    (tmp_path / "nemo.tsv").write_text(
        f"audio_filepath\tduration\ttext\n{tmp_path / 'a.wav'}\t0.2\thello\n"
    )
    assert read_manifest(tmp_path / "nemo.tsv")[0].path == tmp_path / "a.wav"
    (tmp_path / "missing.csv").write_text("path,text\na.wav,one\nnope.wav,two\n")
    with pytest.raises(
        CorpusError, match=r"missing.csv: 1 audio file\(s\) not found \(line 3: .*nope.wav\)"
    ):
        read_manifest(tmp_path / "missing.csv")
    (tmp_path / "nohead.csv").write_text("file_name,words\na.wav,one\n")
    with pytest.raises(
        CorpusError, match="nohead.csv, line 1: no audio path column; the header has file_name"
    ):
        read_manifest(tmp_path / "nohead.csv")
    (tmp_path / "short.csv").write_text("path,extra,text\na.wav\n")
    with pytest.raises(CorpusError, match="short.csv, line 2: expected 3 fields, got 1"):
        read_manifest(tmp_path / "short.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(CorpusError, match="the manifest is empty"):
        read_manifest(tmp_path / "empty.csv")


def _corpus(folder, splits):
    """A corpus folder: `splits` maps a split to its transcripts, one short tone each."""
    folder.mkdir()
    for split, transcripts in splits.items():
        rows = []
        for number, transcript in enumerate(transcripts):
            name = f"{split}-{number}.wav"
            write_wav(folder / name, tone(0.1), 16000)
            rows.append((name, 0.1, transcript))
        write_manifest(folder / f"{split}.csv", rows)
    return folder


def test_combined_corpora_train_on_more_and_hold_out_the_first_ones_splits(tmp_path):
    main = _corpus(tmp_path / "main", {"train": ["a b", "c d"], "valid": ["e f"], "test": ["g h"]})
    more = _corpus(tmp_path / "more", {"train": ["i j"], "valid": ["k l"]})
    combined = combine_corpora(tmp_path / "both", main, [more])
    train = read_manifest(combined / "train.csv")
    assert [u.transcript for u in train] == ["a b", "c d", "i j"]
    assert train[2].path.resolve() == (more / "train-0.wav").resolve()
    # relative paths: the folders move together
    assert "../more/train-0.wav" in (combined / "train.csv").read_text()
    assert [u.transcript for u in read_manifest(combined / "valid.csv")] == ["e f"]  # not more's
    assert [u.transcript for u in read_manifest(combined / "test.csv")] == ["g h"]

    leaky = _corpus(tmp_path / "leaky", {"train": ["x y", "g h"]})
    with pytest.raises(
        CorpusError, match=r"1 training utterance\(s\) say what a held-out one .* 'g h'"
    ):
        combine_corpora(tmp_path / "bad", main, [leaky])
    assert not (tmp_path / "bad").exists()  # nothing written
    with pytest.raises(CorpusError, match=r"nowhere.train\.csv: file not found"):
        combine_corpora(tmp_path / "bad", main, [tmp_path / "nowhere"])


def test_demo_speech_is_synthesized_once_deterministic_and_held_out(tmp_path):
    from keras_s2s.corpora.speech_demo import DemoSpeech

    demo = DemoSpeech(num_train=40, num_valid=5, num_test=8, seed=3)
    folder = demo.prepare(root=tmp_path)
    train, test = read_manifest(folder / "train.csv"), read_manifest(folder / "test.csv")
    assert (len(train), len(test)) == (40, 8)
    assert not {u.transcript for u in test} & {u.transcript for u in train}, (
        "test sentences are new"
    )
    assert all(set(u.transcript) <= set("abcdefghijklmnopqrstuvwxyz ") for u in train)
    audio = read_audio(train[0].path)
    assert 0.5 < len(audio) / 16000 < 8
    stamp = (folder / "train.csv").stat().st_mtime_ns
    assert (
        demo.prepare(root=tmp_path) == folder and (folder / "train.csv").stat().st_mtime_ns == stamp
    )
    again = DemoSpeech(num_train=40, num_valid=5, num_test=8, seed=3).prepare(
        root=tmp_path / "other"
    )
    repeated = read_manifest(again / "train.csv")
    assert [u.transcript for u in repeated] == [u.transcript for u in train]
    # eSpeak NG carries a little state between sentences: lengths may differ by a few milliseconds
    assert abs(len(read_audio(repeated[0].path)) - len(audio)) < 160
    assert not list(tmp_path.glob(".tmp-*")), "no half-written corpus is left behind"


def test_speech_pipeline_batches_features_lengths_and_labels(tmp_path, monkeypatch):
    from keras_s2s.data.speech import load_speech_data

    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path))
    data = load_speech_data(
        "demo-speech",
        num_train=24,
        num_valid=4,
        num_test=4,
        features={"kind": "logmel", "num_features": 40},
        augment={"speed": [0.9, 1.1], "freq_masks": 1, "freq_mask_width": 5},
        batching=Batching(batch_size=8),
    )
    assert len(data.train_utterances) == 24 and len(data.test_utterances) == 4
    inputs, labels = next(iter(data.train))
    features, lengths = inputs["features"].numpy(), inputs["feature_lengths"].numpy()
    assert features.shape[0] <= 8 and features.shape[2] == 40 and features.shape[1] % 8 == 0
    assert (
        lengths.max() <= features.shape[1]
        and (features[np.argmin(lengths), lengths.min() :] == 0).all()
    )
    texts = [data.vocabulary.decode(row) for row in labels.numpy()]
    assert set(texts) <= {u.transcript for u in data.train_utterances}
    with pytest.raises(ValueError, match="unknown augmentation setting"):
        load_speech_data("demo-speech", num_train=24, num_valid=4, num_test=4, augment={"pitch": 2})


def test_librispeech_layout(tmp_path):
    import soundfile

    from keras_s2s.data.speech import read_speech_splits

    chapter = tmp_path / "train-clean" / "19" / "198"
    chapter.mkdir(parents=True)
    lines = []
    for i in range(20):
        soundfile.write(
            str(chapter / f"19-198-{i:04d}.flac"), tone(0.3, seed=i), 16000, format="FLAC"
        )
        lines.append(f"19-198-{i:04d} HELLO NUMBER {i}")
    (chapter / "19-198.trans.txt").write_text("\n".join(lines) + "\n")
    train, valid, test = read_speech_splits(str(tmp_path), num_valid=2, num_test=2)
    assert (len(train), len(valid), len(test)) == (16, 2, 2)
    assert all(
        u.path.suffix == ".flac" and u.transcript.startswith("HELLO NUMBER") for u in train + test
    )
    (chapter / "19-198-0003.flac").unlink()
    with pytest.raises(
        CorpusError, match=r"1 audio file\(s\) not found .*19-198.trans.txt, line 4: 19-198-0003"
    ):
        read_speech_splits(str(tmp_path))


def test_subword_vocabulary_for_ctc(tmp_path, monkeypatch):
    import keras

    from keras_s2s import zoo
    from keras_s2s.config import CardError
    from keras_s2s.data.speech import load_speech_data
    from keras_s2s.text.characters import SubwordVocabulary

    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path))
    data = load_speech_data(
        "demo-speech",
        num_train=60,
        num_valid=4,
        num_test=4,
        vocabulary="subword",
        vocab_size=80,
        batching=Batching(batch_size=8),
    )
    vocab = data.vocabulary
    assert isinstance(vocab, SubwordVocabulary) and vocab.vocab_size <= 80
    text = data.train_utterances[0].transcript
    assert 0 not in vocab.encode(text) and vocab.decode(vocab.encode(text)) == text
    assert SubwordVocabulary.from_config(vocab.get_config()).encode(text) == vocab.encode(text)
    model = zoo.load(
        "wave2letter_demo",
        vocabulary=vocab,
        extractor=data.extractor,
        precision="float32",
        channels=[16],
        kernels=[5],
        dropouts=[0.0],
        prologue_channels=16,
        epilogue_channels=[16, 16],
    )
    assert model.vocab_size == vocab.vocab_size
    model.fit(data.train, steps_per_epoch=1, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    assert isinstance(keras.saving.load_model(tmp_path / "m.keras").vocabulary, SubwordVocabulary)
    with pytest.raises(
        CardError, match="subword vocabulary is learned from the training transcripts"
    ):
        zoo.load("wave2letter_demo", **{"data.vocabulary": "subword"})


def test_an_unreadable_test_file_is_refused_before_training(tmp_path):
    import soundfile

    from keras_s2s.data.speech import load_speech_data

    for i in range(6):
        soundfile.write(str(tmp_path / f"{i}.wav"), tone(0.3, seed=i), 16000)
    (tmp_path / "5.wav").write_bytes(b"RIFF not really audio")
    for split, rows in (("train", range(4)), ("test", range(4, 6))):
        (tmp_path / f"{split}.csv").write_text(
            "wav_filename,transcript\n" + "".join(f"{i}.wav,hello {'abcdef'[i]}\n" for i in rows)
        )
    with pytest.raises(
        CorpusError,
        match=r"test: 1 of 2 utterances cannot be read, e\.g\. .*5\.wav \(line 3\): "
        "unreadable audio",
    ):
        load_speech_data(str(tmp_path), num_valid=0, batching=Batching(batch_size=2))
