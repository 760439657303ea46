"""Speech augmentation in TensorFlow ops, aimed at voices and rooms the model never heard.

Each is off unless configured in a card's `data.augment` part; ranges are
[low, high] drawn per utterance, probabilities say how often one applies:

    augment: {speed: [0.9, 1.1], pitch_semitones: [-3, 3], vtlp: [0.9, 1.1],
              noise_snr_db: [10, 40], reverb_probability: 0.3, reverb_rt60: [0.1, 0.7],
              band_limit_probability: 0.2, codec_probability: 0.2,
              freq_masks: 2, freq_mask_width: 8, time_masks: 2, time_mask_width: 20}

- `speed`: resampling (tempo and pitch move together).
- `pitch_semitones`: pitch shifted by a random number of semitones, duration
  kept (a phase-vocoder time stretch, then resampling back to the length).
- `vtlp`: vocal-tract-length perturbation, a piecewise-linear warp of the
  frequency axis (Jaitly & Hinton 2013) applied to the short-time spectrum.
- `noise_snr_db`: white noise at a random SNR.
- `reverb_*`: a simulated room: an exponentially decaying noise impulse
  response with reverberation time RT60, after the direct path.
- `band_limit_probability`: a random pass band, 50-400 Hz to 3-7.5 kHz
  (telephone, small loudspeakers).
- `codec_probability`: 8-bit mu-law companding (G.711-like quantization).
- `freq_masks`, `time_masks`: SpecAugment on the features.

Example:
    >>> audio = warp_vocal_tract(audio, 0.9, 1.1)
    >>> audio = reverberate(audio, 0.1, 0.7, sample_rate=16000)
    >>> features = spec_augment(features, freq_masks=2, freq_width=8, time_masks=2, time_width=20)
"""

from __future__ import annotations

import math

from keras_s2s.backend import tf

RANGES = ("speed", "pitch_semitones", "vtlp", "noise_snr_db", "reverb_rt60")
PROBABILITIES = ("reverb_probability", "band_limit_probability", "codec_probability")
COUNTS = ("freq_masks", "freq_mask_width", "time_masks", "time_mask_width")
AUGMENT_KEYS = RANGES + PROBABILITIES + COUNTS
# where a range must lie: a speed of 0 or a warp of 50% is a broken card
LIMITS = {
    "speed": (0.5, 2.0),
    "pitch_semitones": (-12.0, 12.0),
    "vtlp": (0.7, 1.3),
    "noise_snr_db": (-10.0, 100.0),
    "reverb_rt60": (0.0, 2.0),
}


def check_augment(settings: dict) -> dict:
    """`settings` checked key by key; a ValueError naming the first key that makes no sense."""
    unknown = set(settings) - set(AUGMENT_KEYS)
    if unknown:
        raise ValueError(
            f"unknown augmentation setting(s) {sorted(unknown)}; valid: {', '.join(AUGMENT_KEYS)}"
        )
    for key, value in settings.items():
        if key in RANGES:
            low, high = LIMITS[key]
            if not (isinstance(value, (list, tuple)) and len(value) == 2) or not (
                low <= value[0] <= value[1] <= high
            ):
                raise ValueError(
                    f"augment.{key} must be [low, high] within [{low}, {high}], got {value!r}"
                )
        elif key in PROBABILITIES and not (isinstance(value, (int, float)) and 0 <= value <= 1):
            raise ValueError(f"augment.{key} must be a probability in [0, 1], got {value!r}")
        elif key in COUNTS and not (isinstance(value, int) and value >= 0):
            raise ValueError(f"augment.{key} must be a count >= 0, got {value!r}")
    if "reverb_probability" in settings and "reverb_rt60" not in settings:
        raise ValueError(
            "augment.reverb_probability needs augment.reverb_rt60: [low, high] seconds"
        )
    return settings


def perturb_speed(audio, low: float, high: float):
    """Play `audio` at a random speed in [low, high] (linear-interpolation resampling; pitch moves too)."""
    factor = tf.random.uniform([], low, high)
    length = tf.cast(tf.shape(audio)[0], tf.float32)
    new_length = tf.maximum(tf.cast(length / factor, tf.int32), 2)
    positions = tf.linspace(0.0, length - 1.0, new_length)
    left = tf.cast(tf.floor(positions), tf.int32)
    right = tf.minimum(left + 1, tf.shape(audio)[0] - 1)
    weight = positions - tf.floor(positions)
    return tf.gather(audio, left) * (1.0 - weight) + tf.gather(audio, right) * weight


def _resample_to(audio, length):
    """`audio` stretched or squeezed to `length` samples by linear interpolation."""
    last = tf.cast(tf.shape(audio)[0] - 1, tf.float32)
    return _interpolate(audio, tf.linspace(0.0, last, length))


def stretch_time(audio, ratio, frame: int = 512, hop: int = 128):
    """`audio` made `ratio` times longer with the pitch kept: a phase vocoder (short-time magnitudes
    interpolated between frames, each bin's phase advanced by its measured frequency)."""
    spectrum = tf.signal.stft(audio, frame, hop, fft_length=frame, pad_end=True)  # [T, F]
    frames = tf.shape(spectrum)[0]
    magnitude, phase = tf.abs(spectrum), tf.math.angle(spectrum)
    # each bin's phase advance per hop, from its frequency measured between neighbouring frames
    expected = 2.0 * math.pi * hop * tf.range(frame // 2 + 1, dtype=tf.float32) / frame
    deviation = phase[1:] - phase[:-1] - expected
    deviation -= 2.0 * math.pi * tf.round(deviation / (2.0 * math.pi))
    advance = tf.concat([expected[None], expected + deviation], axis=0)  # [T, F]
    count = tf.maximum(tf.cast(tf.cast(frames, tf.float32) * ratio, tf.int32), 1)
    positions = tf.minimum(
        tf.range(count, dtype=tf.float32) / ratio, tf.cast(frames - 1, tf.float32)
    )
    left = tf.cast(tf.floor(positions), tf.int32)
    right = tf.minimum(left + 1, frames - 1)
    weight = (positions - tf.floor(positions))[:, None]
    stretched = tf.gather(magnitude, left) * (1.0 - weight) + tf.gather(magnitude, right) * weight
    new_phase = phase[0][None] + tf.cumsum(tf.gather(advance, left), axis=0, exclusive=True)
    out = tf.complex(stretched, 0.0) * tf.exp(tf.complex(0.0, new_phase))
    window = tf.signal.inverse_stft_window_fn(hop)
    return tf.signal.inverse_stft(out, frame, hop, fft_length=frame, window_fn=window)


def shift_pitch(audio, low: float, high: float):
    """Pitch moved by a random number of semitones in [low, high], duration kept: a phase-vocoder
    time stretch by the frequency ratio, then resampled back to the original length."""
    ratio = tf.pow(2.0, tf.random.uniform([], low, high) / 12.0)
    length = tf.shape(audio)[0]
    stretched = stretch_time(audio, ratio)  # a little longer than ratio x length: the last frame
    stretched = stretched[: tf.cast(tf.cast(length, tf.float32) * ratio, tf.int32)]
    return _same_loudness(_resample_to(stretched, length), audio)


def add_noise(audio, min_snr_db: float, max_snr_db: float):
    """Add white noise at a random signal-to-noise ratio in [min_snr_db, max_snr_db] dB."""
    snr = tf.random.uniform([], min_snr_db, max_snr_db)
    signal_rms = tf.sqrt(tf.reduce_mean(tf.square(audio)) + 1e-12)
    noise_rms = signal_rms / tf.pow(10.0, snr / 20.0)
    return audio + noise_rms * tf.random.normal(tf.shape(audio))


def _interpolate(audio, positions):
    """`audio` [N] read at fractional `positions` (any shape, clipped to the signal) by linear interpolation."""
    last = tf.cast(tf.shape(audio)[0] - 1, tf.float32)
    positions = tf.clip_by_value(positions, 0.0, last)
    left = tf.floor(positions)
    weight = positions - left
    left = tf.cast(left, tf.int32)
    right = tf.minimum(left + 1, tf.cast(last, tf.int32))
    return tf.gather(audio, left) * (1.0 - weight) + tf.gather(audio, right) * weight


def warp_vocal_tract(audio, low: float, high: float, frame: int = 512, hop: int = 128):
    """Vocal-tract-length perturbation: the short-time spectrum's frequency axis warped by a random
    factor in [low, high] (piecewise linear, Nyquist stays in place), the phase kept."""
    alpha = tf.random.uniform([], low, high)
    spectrum = tf.signal.stft(audio, frame, hop, fft_length=frame, pad_end=True)  # [T, F]
    bins = frame // 2 + 1
    nyquist = float(bins - 1)
    knee = 0.8 * nyquist * tf.minimum(alpha, 1.0) / alpha  # warped below the knee, linear above
    target = tf.range(bins, dtype=tf.float32)
    # source bin that lands on each target bin (inverse of f -> alpha f below the knee)
    source = tf.where(
        target <= knee * alpha,
        target / alpha,
        knee + (target - knee * alpha) * (nyquist - knee) / (nyquist - knee * alpha),
    )
    magnitude = _interpolate_rows(tf.abs(spectrum), source)
    warped = tf.complex(magnitude, 0.0) * tf.exp(tf.complex(0.0, tf.math.angle(spectrum)))
    window = tf.signal.inverse_stft_window_fn(hop)
    out = tf.signal.inverse_stft(warped, frame, hop, fft_length=frame, window_fn=window)
    return out[: tf.shape(audio)[0]]


def _interpolate_rows(rows, positions):
    """Each row of `rows` [T, F] read at the fractional column `positions` [F]."""
    left = tf.floor(positions)
    weight = positions - left
    left = tf.cast(left, tf.int32)
    right = tf.minimum(left + 1, tf.shape(rows)[1] - 1)
    return tf.gather(rows, left, axis=1) * (1.0 - weight) + tf.gather(rows, right, axis=1) * weight


def _sometimes(probability: float, change, audio):
    return tf.cond(tf.random.uniform([]) < probability, lambda: change(audio), lambda: audio)


def _same_loudness(audio, reference):
    scale = tf.sqrt(
        tf.reduce_mean(tf.square(reference)) / (tf.reduce_mean(tf.square(audio)) + 1e-12)
    )
    return audio * scale


def reverberate(audio, low_rt60: float, high_rt60: float, sample_rate: int):
    """A simulated room: the direct path plus exponentially decaying noise that falls 60 dB in a
    random RT60 in [low, high] seconds, starting 2-10 ms later; loudness kept."""
    rt60 = tf.random.uniform([], low_rt60, high_rt60)
    length = max(int(high_rt60 * sample_rate), 2)
    time = tf.range(length, dtype=tf.float32) / sample_rate
    delay = tf.random.uniform([], 0.002, 0.010)
    tail = tf.random.normal([length]) * tf.exp(-6.908 * time / tf.maximum(rt60, 1e-3))
    tail *= tf.cast(time >= delay, tf.float32) * tf.cast(time < rt60, tf.float32)
    # direct-to-reverberant energy ratio between 0 and 10 dB
    ratio = tf.pow(10.0, tf.random.uniform([], 0.0, 10.0) / 10.0)
    tail *= tf.sqrt(1.0 / (ratio * tf.reduce_sum(tf.square(tail)) + 1e-12))
    response = tf.tensor_scatter_nd_update(tail, [[0]], [1.0])
    n = tf.shape(audio)[0]
    size = tf.cast(
        2 ** tf.math.ceil(tf.math.log(tf.cast(n + length, tf.float32)) / math.log(2.0)), tf.int32
    )
    wet = tf.signal.irfft(tf.signal.rfft(audio, [size]) * tf.signal.rfft(response, [size]), [size])
    return _same_loudness(wet[:n], audio)


def band_limit(audio, sample_rate: int):
    """Keep a random pass band: from 50-400 Hz up to 3-7.5 kHz (no higher than Nyquist)."""
    n = tf.shape(audio)[0]
    spectrum = tf.signal.rfft(audio)
    frequencies = tf.linspace(0.0, sample_rate / 2.0, tf.shape(spectrum)[0])
    low = tf.random.uniform([], 50.0, 400.0)
    high = tf.minimum(tf.random.uniform([], 3000.0, 7500.0), 0.95 * sample_rate / 2.0)
    keep = tf.cast((frequencies >= low) & (frequencies <= high), tf.complex64)
    return _same_loudness(tf.signal.irfft(spectrum * keep, [n]), audio)


def mu_law_codec(audio, bits: int = 8):
    """Encode and decode with `bits`-bit mu-law companding, as G.711 telephony does."""
    mu = float(2**bits - 1)
    peak = tf.reduce_max(tf.abs(audio)) + 1e-9
    x = audio / peak
    encoded = tf.sign(x) * tf.math.log1p(mu * tf.abs(x)) / math.log1p(mu)
    quantized = tf.round((encoded + 1.0) / 2.0 * mu) / mu * 2.0 - 1.0
    return tf.sign(quantized) * (tf.pow(1.0 + mu, tf.abs(quantized)) - 1.0) / mu * peak


def _mask(length, count: int, width: int):
    """A [length] float mask with `count` random spans of up to `width` set to 0."""
    keep = tf.ones([length])
    positions = tf.range(length)
    for _ in range(count):
        size = tf.random.uniform([], 0, width + 1, tf.int32)
        start = tf.random.uniform([], 0, tf.maximum(length - size, 0) + 1, tf.int32)
        keep *= tf.cast((positions < start) | (positions >= start + size), tf.float32)
    return keep


def spec_augment(
    features, freq_masks: int = 0, freq_width: int = 0, time_masks: int = 0, time_width: int = 0
):
    """SpecAugment (Park et al. 2019) frequency and time masks on features [T, F] (masked to 0)."""
    frames, bins = tf.shape(features)[0], tf.shape(features)[1]
    if freq_masks and freq_width:
        features *= _mask(bins, freq_masks, freq_width)[None, :]
    if time_masks and time_width:
        features *= _mask(frames, time_masks, time_width)[:, None]
    return features


def augment_audio(audio, settings: dict, sample_rate: int = 16000):
    """The configured waveform augmentations, in the order a recording would meet them: the
    speaker (speed, vocal tract), the room, the channel (band, codec), the noise."""
    if "speed" in settings:
        audio = perturb_speed(audio, *settings["speed"])
    if "pitch_semitones" in settings:
        audio = shift_pitch(audio, *settings["pitch_semitones"])
    if "vtlp" in settings:
        audio = warp_vocal_tract(audio, *settings["vtlp"])
    if "reverb_rt60" in settings:
        reverb = lambda a: reverberate(a, *settings["reverb_rt60"], sample_rate)  # noqa: E731
        audio = _sometimes(settings.get("reverb_probability", 1.0), reverb, audio)
    if settings.get("band_limit_probability"):
        channel = lambda a: band_limit(a, sample_rate)  # noqa: E731
        audio = _sometimes(settings["band_limit_probability"], channel, audio)
    if settings.get("codec_probability"):
        audio = _sometimes(settings["codec_probability"], mu_law_codec, audio)
    if "noise_snr_db" in settings:
        audio = add_noise(audio, *settings["noise_snr_db"])
    return audio


def augment_features(features, settings: dict):
    return spec_augment(
        features,
        settings.get("freq_masks", 0),
        settings.get("freq_mask_width", 0),
        settings.get("time_masks", 0),
        settings.get("time_mask_width", 0),
    )
