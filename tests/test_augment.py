"""Speech augmentations: shapes and the statistics each one promises (warp, room, band, codec)."""

import numpy as np
import pytest

from keras_s2s.audio import augment

RATE = 16000


def tone(hz, seconds=1.0, rate=RATE):
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def rng(seed=0):
    return np.random.default_rng(seed)


def peak_hz(audio, rate=RATE):
    spectrum = np.abs(np.fft.rfft(np.asarray(audio) * np.hanning(len(audio))))
    return np.argmax(spectrum) * rate / len(audio)


def test_the_vocal_tract_warp_moves_formants_and_keeps_the_rest():
    audio = tone(1000.0)
    warped = augment.warp_vocal_tract(audio, 1.1, 1.1, rng())
    assert warped.shape == audio.shape
    bin_hz = RATE / 512  # the warp moves energy between STFT bins: within one bin of alpha * f
    assert abs(peak_hz(warped) - 1100.0) <= bin_hz
    assert abs(peak_hz(augment.warp_vocal_tract(audio, 0.9, 0.9, rng())) - 900.0) <= bin_hz
    identity = augment.warp_vocal_tract(audio, 1.0, 1.0, rng())
    assert np.corrcoef(identity[512:-512], audio[512:-512])[0, 1] > 0.999


def test_pitch_shifting_moves_every_partial_by_the_ratio_and_keeps_duration_and_loudness():
    t = np.arange(2 * RATE) / RATE
    chord = (0.5 * np.sin(2 * np.pi * 300 * t) + 0.3 * np.sin(2 * np.pi * 1100 * t)).astype(
        np.float32
    )
    for semitones in (-4.0, 3.0):
        shifted = augment.shift_pitch(chord, semitones, semitones, rng())
        assert shifted.shape == chord.shape
        spectrum = np.abs(np.fft.rfft(shifted * np.hanning(len(shifted))))
        hz = np.fft.rfftfreq(len(shifted), 1 / RATE)
        ratio = 2 ** (semitones / 12)
        for partial in (300.0, 1100.0):  # the strongest bin near each moved partial
            near = (hz > partial * ratio - 40) & (hz < partial * ratio + 40)
            assert abs(hz[near][np.argmax(spectrum[near])] - partial * ratio) <= 2.0
            old = (hz > partial - 5) & (hz < partial + 5)
            assert spectrum[old].max() < 0.05 * spectrum.max(), "nothing left at the old pitch"
        assert np.sqrt(np.mean(shifted**2)) == pytest.approx(np.sqrt(np.mean(chord**2)), rel=1e-3)


def test_the_phase_vocoder_stretches_time_and_keeps_the_pitch():
    stretched = augment.stretch_time(tone(440.0, 1.0), 1.5)
    assert 1.5 * RATE <= len(stretched) <= 1.5 * RATE + 1024
    assert abs(peak_hz(stretched) - 440.0) <= 1.0


def test_reverberation_decays_by_60_db_within_rt60_and_keeps_loudness():
    impulse = np.zeros(RATE, np.float32)
    impulse[0] = 1.0
    response = augment.reverberate(impulse, 0.3, 0.3, RATE, rng())
    assert response.shape == impulse.shape
    early = np.sum(response[1 : int(0.05 * RATE)] ** 2)
    late = np.sum(response[int(0.25 * RATE) : int(0.3 * RATE)] ** 2)
    assert 0 < late < early * 1e-4, "50 dB down after 250 of its 300 ms"
    assert np.abs(response[int(0.3 * RATE) :]).max() < 1e-6, "nothing after RT60 (FFT round-off)"
    speech_like = tone(300.0) * np.hanning(RATE).astype(np.float32)
    wet = augment.reverberate(speech_like, 0.2, 0.8, RATE, rng(1))
    assert np.sqrt(np.mean(wet**2)) == pytest.approx(np.sqrt(np.mean(speech_like**2)), rel=1e-3)


def test_band_limiting_removes_what_lies_outside_a_telephone_like_band():
    noise = rng(1).standard_normal(RATE).astype(np.float32)
    limited = augment.band_limit(noise, RATE, rng(2))
    power = np.abs(np.fft.rfft(limited)) ** 2
    hz = np.fft.rfftfreq(RATE, 1 / RATE)
    assert power[hz < 49].sum() < 1e-6 * power.sum()
    assert power[hz > 0.95 * RATE / 2 + 1].sum() < 1e-6 * power.sum()
    assert power[(hz > 400) & (hz < 3000)].sum() > 0.3 * power.sum(), "the speech band stays"


def test_the_codec_quantizes_to_256_mu_law_levels_at_telephone_quality():
    audio = tone(440.0)
    coded = augment.mu_law_codec(audio)
    assert len(np.unique(coded)) <= 256
    noise = coded - audio
    assert 10 * np.log10(np.sum(audio**2) / np.sum(noise**2)) > 30


def test_the_short_time_transform_is_tensorflows_and_inverts_exactly():
    tf = pytest.importorskip("tensorflow")
    audio = tone(440.0, 0.5) + 0.1 * rng().standard_normal(RATE // 2).astype(np.float32)
    spectrum = augment.stft(audio)
    expected = tf.signal.stft(audio, 512, 128, fft_length=512, pad_end=True).numpy()
    assert spectrum.shape == expected.shape
    np.testing.assert_allclose(spectrum, expected, atol=1e-4)
    back = augment.inverse_stft(spectrum)
    window = tf.signal.inverse_stft_window_fn(128)
    np.testing.assert_allclose(
        back, tf.signal.inverse_stft(expected, 512, 128, 512, window_fn=window).numpy(), atol=1e-5
    )
    np.testing.assert_allclose(back[512 : len(audio) - 512], audio[512:-512], atol=1e-5)


def test_every_augmentation_runs_and_stays_finite():
    settings = augment.check_augment(
        {"speed": [0.9, 1.1], "pitch_semitones": [-3, 3], "vtlp": [0.9, 1.1],
         "noise_snr_db": [10, 30], "reverb_probability": 1.0, "reverb_rt60": [0.1, 0.5],
         "band_limit_probability": 1.0, "codec_probability": 1.0}
    )  # fmt: skip
    clips = [tone(220.0, 0.7), tone(330.0, 1.3)]
    out = [augment.augment_audio(clip, settings, RATE, rng(i)) for i, clip in enumerate(clips)]
    for clip, augmented in zip(clips, out, strict=True):
        assert np.isfinite(augmented).all() and augmented.dtype == np.float32
        assert (
            0.85 * len(clip) <= len(augmented) <= 1.15 * len(clip)
        )  # only speed changes the length
        assert not np.allclose(augmented[: len(clip) // 2], clip[: len(clip) // 2], atol=1e-3)


def test_probability_zero_leaves_the_audio_and_one_always_applies():
    audio = tone(300.0, 0.5)
    never = augment.augment_audio(audio, {"reverb_probability": 0.0, "reverb_rt60": [0.2, 0.4]})
    assert np.array_equal(never, audio)
    always = augment.augment_audio(audio, {"codec_probability": 1.0})
    assert not np.array_equal(always, audio)


def test_spec_augment_masks_spans_of_at_most_the_width_and_the_same_seed_repeats():
    features = np.ones((200, 40), np.float32)
    settings = {"freq_masks": 2, "freq_mask_width": 8, "time_masks": 3, "time_mask_width": 20}
    masked = augment.augment_features(features, settings, rng(3))
    assert np.array_equal(masked, augment.augment_features(features, settings, rng(3)))
    zero_bins = np.where(masked.sum(0) == 0)[0]
    zero_frames = np.where(masked.sum(1) == 0)[0]
    assert len(zero_bins) <= 16 and len(zero_frames) <= 60
    assert len(zero_bins) + len(zero_frames) > 0
    assert augment.has_feature_masks(settings) and not augment.has_feature_masks({"speed": [1, 1]})


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
