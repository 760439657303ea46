"""Long recordings: read a block at a time, cut at pauses, transcribed piece by piece."""

import random

import numpy as np
import pytest

from keras_s2s.audio.io import AudioError, read_audio, write_wav
from keras_s2s.audio.segments import audio_seconds, pieces_at_pauses, stream_audio


def bursts(rate=16000, seconds=(1.3, 1.8, 0.7, 1.6, 1.1, 1.5), pause=0.4):
    """Tone bursts with a pause after each; the sample index where each pause begins and ends."""
    pieces, pauses, at = [], [], 0
    for i, length in enumerate(seconds):
        t = np.arange(int(length * rate)) / rate
        pieces.append((0.3 * np.sin(2 * np.pi * (200 + 50 * i) * t)).astype("float32"))
        at += len(pieces[-1])
        pieces.append(np.zeros(int(pause * rate), "float32"))
        pauses.append((at, at + len(pieces[-1])))
        at += len(pieces[-1])
    return np.concatenate(pieces), pauses


def test_pieces_are_cut_at_pauses_and_rejoin_into_the_recording():
    audio, pauses = bursts()
    blocks = np.array_split(audio, 7)  # as a stream delivers them
    pieces = list(pieces_at_pauses(blocks, 16000, max_seconds=4.0))
    assert len(pieces) > 2 and all(len(p) <= 4.0 * 16000 for p in pieces)
    np.testing.assert_array_equal(np.concatenate(pieces), audio)
    cuts = np.cumsum([len(p) for p in pieces])[:-1]
    assert all(any(start <= cut <= end for start, end in pauses) for cut in cuts), (
        "every cut falls in a pause"
    )
    assert [len(p) for p in pieces_at_pauses([audio[:1000]], 16000)] == [1000]
    with pytest.raises(ValueError, match="max_seconds must be more than"):
        list(pieces_at_pauses([audio], 16000, max_seconds=0.1))


def test_a_file_streams_block_by_block_resampled_as_a_whole_read_is(tmp_path, monkeypatch):
    from keras_s2s.audio import segments

    monkeypatch.setattr(segments, "BLOCK_SECONDS", 1.0)  # many blocks
    audio, _ = bursts(rate=22050)
    write_wav(tmp_path / "talk.wav", audio, 22050)
    streamed = np.concatenate(list(stream_audio(tmp_path / "talk.wav", 16000)))
    whole = read_audio(tmp_path / "talk.wav", 16000)
    assert abs(len(streamed) - len(whole)) <= 2
    n = min(len(streamed), len(whole))
    assert np.abs(streamed[:n] - whole[:n]).max() < 0.02, "the same sound, block edges included"
    assert audio_seconds(tmp_path / "talk.wav") == pytest.approx(len(audio) / 22050)
    with pytest.raises(AudioError, match="missing.wav: audio file not found"):
        audio_seconds(tmp_path / "missing.wav")
    (tmp_path / "bad.wav").write_bytes(b"not audio at all")
    with pytest.raises(AudioError, match="bad.wav: not a readable audio file"):
        next(stream_audio(tmp_path / "bad.wav"))


def test_a_recording_longer_than_max_seconds_is_transcribed_piece_by_piece(tmp_path):
    from keras_s2s import zoo
    from keras_s2s.audio.io import resample
    from keras_s2s.corpora.espeak import synthesize

    model = zoo.load("jasper_demo", weights="demo", precision="float32")
    from keras_s2s.corpora.speech_demo import DemoSpeech

    demo, rng = DemoSpeech(), random.Random(3)
    said = [demo.sentence(rng) for _ in range(3)]
    silence = np.zeros(8000, "float32")
    clips = [resample(*synthesize(text, voice="en-us"), 16000) for text in said]
    talk = np.concatenate([piece for clip in clips for piece in (clip, silence)])
    write_wav(tmp_path / "talk.wav", talk, 16000)
    alone = model.transcribe(clips)
    assert sum(a == b for a, b in zip(alone, said)) >= 2, (alone, said)
    seconds = max(len(c) for c in clips) / 16000 + 0.6
    assert len(talk) / 16000 > 2 * seconds
    joined = " ".join(alone)
    assert model.transcribe([str(tmp_path / "talk.wav")], max_seconds=seconds) == [joined]
    assert model.transcribe([talk], max_seconds=seconds) == [joined]
