"""Speech augmentations: shapes and the statistics each one promises (warp, room, band, codec)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_s2s.data import augment

RATE = 16000


def tone(hz, seconds=1.0, rate=RATE):
    t = np.arange(int(seconds * rate)) / rate
    return tf.constant(0.5 * np.sin(2 * np.pi * hz * t), tf.float32)


def peak_hz(audio, rate=RATE):
    spectrum = np.abs(np.fft.rfft(np.asarray(audio) * np.hanning(len(audio))))
    return np.argmax(spectrum) * rate / len(audio)


def test_the_vocal_tract_warp_moves_formants_and_keeps_the_rest():
    audio = tone(1000.0)
    warped = augment.warp_vocal_tract(audio, 1.1, 1.1)
    assert warped.shape == audio.shape
    bin_hz = RATE / 512  # the warp moves energy between STFT bins: within one bin of alpha * f
    assert abs(peak_hz(warped) - 1100.0) <= bin_hz
    assert abs(peak_hz(augment.warp_vocal_tract(audio, 0.9, 0.9)) - 900.0) <= bin_hz
    identity = augment.warp_vocal_tract(audio, 1.0, 1.0).numpy()
    assert np.corrcoef(identity[512:-512], audio.numpy()[512:-512])[0, 1] > 0.999


def test_pitch_shifting_moves_every_partial_by_the_ratio_and_keeps_duration_and_loudness():
    t = np.arange(2 * RATE) / RATE
    chord = tf.constant(
        0.5 * np.sin(2 * np.pi * 300 * t) + 0.3 * np.sin(2 * np.pi * 1100 * t), tf.float32
    )
    for semitones in (-4.0, 3.0):
        shifted = augment.shift_pitch(chord, semitones, semitones).numpy()
        assert shifted.shape == chord.shape
        spectrum = np.abs(np.fft.rfft(shifted * np.hanning(len(shifted))))
        hz = np.fft.rfftfreq(len(shifted), 1 / RATE)
        ratio = 2 ** (semitones / 12)
        for partial in (300.0, 1100.0):  # the strongest bin near each moved partial
            near = (hz > partial * ratio - 40) & (hz < partial * ratio + 40)
            assert abs(hz[near][np.argmax(spectrum[near])] - partial * ratio) <= 2.0
            old = (hz > partial - 5) & (hz < partial + 5)
            assert spectrum[old].max() < 0.05 * spectrum.max(), "nothing left at the old pitch"
        assert np.sqrt(np.mean(shifted**2)) == pytest.approx(
            np.sqrt(np.mean(chord.numpy() ** 2)), rel=1e-3
        )


def test_the_phase_vocoder_stretches_time_and_keeps_the_pitch():
    stretched = augment.stretch_time(tone(440.0, 1.0), 1.5).numpy()
    assert 1.5 * RATE <= len(stretched) <= 1.5 * RATE + 1024
    assert abs(peak_hz(stretched) - 440.0) <= 1.0


def test_reverberation_decays_by_60_db_within_rt60_and_keeps_loudness():
    tf.random.set_seed(0)
    impulse = np.zeros(RATE, np.float32)
    impulse[0] = 1.0
    response = augment.reverberate(tf.constant(impulse), 0.3, 0.3, RATE).numpy()
    assert response.shape == impulse.shape
    early = np.sum(response[1 : int(0.05 * RATE)] ** 2)
    late = np.sum(response[int(0.25 * RATE) : int(0.3 * RATE)] ** 2)
    assert 0 < late < early * 1e-4, "50 dB down after 250 of its 300 ms"
    assert np.abs(response[int(0.3 * RATE) :]).max() < 1e-6, "nothing after RT60 (FFT round-off)"
    speech_like = tone(300.0) * tf.constant(np.hanning(RATE), tf.float32)
    wet = augment.reverberate(speech_like, 0.2, 0.8, RATE).numpy()
    assert np.sqrt(np.mean(wet**2)) == pytest.approx(
        np.sqrt(np.mean(speech_like.numpy() ** 2)), rel=1e-3
    )


def test_band_limiting_removes_what_lies_outside_a_telephone_like_band():
    tf.random.set_seed(1)
    noise = tf.random.normal([RATE])
    limited = augment.band_limit(noise, RATE).numpy()
    power = np.abs(np.fft.rfft(limited)) ** 2
    hz = np.fft.rfftfreq(RATE, 1 / RATE)
    assert power[hz < 49].sum() < 1e-6 * power.sum()
    assert power[hz > 0.95 * RATE / 2 + 1].sum() < 1e-6 * power.sum()
    assert power[(hz > 400) & (hz < 3000)].sum() > 0.3 * power.sum(), "the speech band stays"


def test_the_codec_quantizes_to_256_mu_law_levels_at_telephone_quality():
    audio = tone(440.0)
    coded = augment.mu_law_codec(audio).numpy()
    assert len(np.unique(coded)) <= 256
    noise = coded - audio.numpy()
    assert 10 * np.log10(np.sum(audio.numpy() ** 2) / np.sum(noise**2)) > 30


def test_every_augmentation_runs_in_a_dataset_map_and_stays_finite():
    settings = augment.check_augment(
        {"speed": [0.9, 1.1], "pitch_semitones": [-3, 3], "vtlp": [0.9, 1.1],
         "noise_snr_db": [10, 30], "reverb_probability": 1.0, "reverb_rt60": [0.1, 0.5],
         "band_limit_probability": 1.0, "codec_probability": 1.0}
    )  # fmt: skip
    clips = [tone(220.0, 0.7).numpy(), tone(330.0, 1.3).numpy()]
    ds = tf.data.Dataset.from_generator(lambda: iter(clips), output_signature=tf.TensorSpec([None]))
    out = [a.numpy() for a in ds.map(lambda a: augment.augment_audio(a, settings, RATE))]
    for clip, augmented in zip(clips, out, strict=True):
        assert np.isfinite(augmented).all()
        assert (
            0.85 * len(clip) <= len(augmented) <= 1.15 * len(clip)
        )  # only speed changes the length
        assert not np.allclose(augmented[: len(clip) // 2], clip[: len(clip) // 2], atol=1e-3)


def test_probability_zero_leaves_the_audio_and_one_always_applies():
    audio = tone(300.0, 0.5)
    never = augment.augment_audio(audio, {"reverb_probability": 0.0, "reverb_rt60": [0.2, 0.4]})
    assert np.array_equal(never.numpy(), audio.numpy())
    always = augment.augment_audio(audio, {"codec_probability": 1.0})
    assert not np.array_equal(always.numpy(), audio.numpy())


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"speed": [1.2, 0.9]}, r"augment.speed must be \[low, high\]"),
        ({"vtlp": 2}, r"augment.vtlp must be \[low, high\]"),
        ({"vtlp": [0.5, 1.1]}, "within"),
        ({"codec_probability": 1.5}, "probability in"),
        ({"freq_masks": -1}, "count >= 0"),
        ({"reverb_probability": 0.3}, "needs augment.reverb_rt60"),
        ({"pitch": [1, 2]}, "unknown augmentation setting"),
        ({"pitch_semitones": [-20, 2]}, "within"),
    ],
)
def test_settings_that_make_no_sense_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        augment.check_augment(settings)
