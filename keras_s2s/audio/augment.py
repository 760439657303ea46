"""Speech augmentation in NumPy, aimed at voices and rooms the model never heard.

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

Every function takes float32 NumPy samples (or features) and a
`numpy.random.Generator`, so one copy serves both backends: TensorFlow runs
it inside `tf.data` (beside reading the audio), the other backends in the
`keras.utils.PyDataset` of `speech.py`. The STFT is TensorFlow's
(`tf.signal.stft` with `pad_end`, periodic Hann; `inverse_stft` with its
window normalization), written out here, with `scipy.fft` (librosa's
dependency): on batches of frames numpy's FFT is up to 7x slower (500 frames
of 512: 2.2 ms against 0.31 ms, numpy 2.4), and on two cores the input
pipeline shares the CPU with the model.

Example:
    >>> rng = np.random.default_rng(0)
    >>> audio = warp_vocal_tract(audio, 0.9, 1.1, rng)
    >>> audio = reverberate(audio, 0.1, 0.7, 16000, rng)
    >>> features = spec_augment(features, 2, 8, 2, 20, rng)
"""

from __future__ import annotations

import math

import numpy as np

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


def _fft():
    """`scipy.fft`, imported on first use (it comes with the audio extra's librosa)."""
    import scipy.fft

    return scipy.fft


def _hann(frame: int) -> np.ndarray:
    """The periodic Hann window (`tf.signal.hann_window`)."""
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(frame) / frame)).astype(np.float32)


def stft(audio: np.ndarray, frame: int = 512, hop: int = 128) -> np.ndarray:
    """Complex short-time spectrum [T, frame // 2 + 1], T = ceil(N / hop): the end zero-padded, a
    periodic Hann window (`tf.signal.stft(..., pad_end=True)`)."""
    count = max(1, -(-len(audio) // hop))
    padded = np.zeros((count - 1) * hop + frame, np.float32)
    padded[: len(audio)] = audio
    frames = np.lib.stride_tricks.sliding_window_view(padded, frame)[::hop]
    return _fft().rfft(frames * _hann(frame), axis=1)


def inverse_stft(spectrum: np.ndarray, frame: int = 512, hop: int = 128) -> np.ndarray:
    """Samples [(T - 1) * hop + frame] of a short-time spectrum [T, F]: overlap-add with Hann windows
    normalized so that `inverse_stft(stft(x))` is `x` (`tf.signal.inverse_stft_window_fn`)."""
    if frame % hop:
        raise ValueError(f"the frame ({frame}) must be a multiple of the hop ({hop})")
    overlaps = frame // hop
    window = _hann(frame)
    window = window / np.tile(np.square(window).reshape(overlaps, hop).sum(0), overlaps)
    frames = _fft().irfft(spectrum, frame, axis=1).astype(np.float32) * window
    count = len(frames)
    out = np.zeros((count - 1) * hop + frame, np.float32)
    for part in range(overlaps):  # each hop-long slice of every frame lands `part` hops in
        piece = frames[:, part * hop : (part + 1) * hop]
        out[part * hop : part * hop + count * hop] += piece.ravel()
    return out


def _polar(magnitude: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """magnitude * exp(i phase), as complex64 (cos and sin are cheaper than a complex exp)."""
    out = np.empty(magnitude.shape, np.complex64)
    out.real, out.imag = magnitude * np.cos(phase), magnitude * np.sin(phase)
    return out


def _interpolate(audio: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """`audio` [N] read at fractional `positions` (clipped to the signal) by linear interpolation."""
    return np.interp(np.clip(positions, 0, len(audio) - 1), np.arange(len(audio)), audio).astype(
        np.float32
    )


def perturb_speed(audio: np.ndarray, low: float, high: float, rng) -> np.ndarray:
    """Play `audio` at a random speed in [low, high] (linear-interpolation resampling; pitch moves too)."""
    factor = rng.uniform(low, high)
    length = max(int(len(audio) / factor), 2)
    return _interpolate(audio, np.linspace(0.0, len(audio) - 1.0, length))


def stretch_time(audio: np.ndarray, ratio: float, frame: int = 512, hop: int = 128) -> np.ndarray:
    """`audio` made `ratio` times longer with the pitch kept: a phase vocoder (short-time magnitudes
    interpolated between frames, each bin's phase advanced by its measured frequency)."""
    spectrum = stft(audio, frame, hop)
    frames = len(spectrum)
    magnitude, phase = np.abs(spectrum), np.angle(spectrum)
    # each bin's phase advance per hop, from its frequency measured between neighbouring frames
    expected = (2.0 * np.pi * hop * np.arange(frame // 2 + 1) / frame).astype(np.float32)
    deviation = phase[1:] - phase[:-1] - expected
    deviation -= np.float32(2.0 * np.pi) * np.round(deviation / np.float32(2.0 * np.pi))
    advance = np.concatenate([expected[None], expected + deviation])  # [T, F]
    count = max(int(frames * ratio), 1)
    positions = np.minimum(np.arange(count) / ratio, frames - 1)
    left = np.floor(positions).astype(int)
    right = np.minimum(left + 1, frames - 1)
    weight = (positions - left)[:, None].astype(np.float32)
    stretched = magnitude[left] * (1.0 - weight) + magnitude[right] * weight
    steps = np.cumsum(advance[left], axis=0)
    new_phase = phase[0][None] + np.concatenate([np.zeros_like(steps[:1]), steps[:-1]])
    return inverse_stft(_polar(stretched, new_phase), frame, hop)


def shift_pitch(audio: np.ndarray, low: float, high: float, rng) -> np.ndarray:
    """Pitch moved by a random number of semitones in [low, high], duration kept: a phase-vocoder
    time stretch by the frequency ratio, then resampled back to the original length."""
    ratio = 2.0 ** (rng.uniform(low, high) / 12.0)
    stretched = stretch_time(audio, ratio)[: int(len(audio) * ratio)]  # the last frame is longer
    back = _interpolate(stretched, np.linspace(0.0, len(stretched) - 1.0, len(audio)))
    return _same_loudness(back, audio)


def add_noise(audio: np.ndarray, min_snr_db: float, max_snr_db: float, rng) -> np.ndarray:
    """Add white noise at a random signal-to-noise ratio in [min_snr_db, max_snr_db] dB."""
    snr = rng.uniform(min_snr_db, max_snr_db)
    noise_rms = np.sqrt(np.mean(np.square(audio)) + 1e-12) / 10.0 ** (snr / 20.0)
    noise = rng.standard_normal(len(audio), dtype=np.float32)
    return audio + np.float32(noise_rms) * noise


def warp_vocal_tract(
    audio: np.ndarray, low: float, high: float, rng, frame: int = 512, hop: int = 128
) -> np.ndarray:
    """Vocal-tract-length perturbation: the short-time spectrum's frequency axis warped by a random
    factor in [low, high] (piecewise linear, Nyquist stays in place), the phase kept (each bin
    scaled by its new magnitude over its old: no angle, cos or sin to compute)."""
    alpha = rng.uniform(low, high)
    spectrum = stft(audio, frame, hop)
    bins = frame // 2 + 1
    nyquist = float(bins - 1)
    knee = 0.8 * nyquist * min(alpha, 1.0) / alpha  # warped below the knee, linear above
    target = np.arange(bins, dtype=np.float64)
    # source bin that lands on each target bin (inverse of f -> alpha f below the knee)
    source = np.where(
        target <= knee * alpha,
        target / alpha,
        knee + (target - knee * alpha) * (nyquist - knee) / (nyquist - knee * alpha),
    )
    left = np.floor(source).astype(int)
    right = np.minimum(left + 1, bins - 1)
    weight = (source - left).astype(np.float32)
    magnitude = np.abs(spectrum)
    warped = magnitude[:, left] * (1.0 - weight) + magnitude[:, right] * weight
    spectrum *= warped / np.maximum(magnitude, np.float32(1e-12))
    return inverse_stft(spectrum, frame, hop)[: len(audio)]


def _sometimes(probability: float, change, audio: np.ndarray, rng) -> np.ndarray:
    return change(audio) if rng.uniform() < probability else audio


def _same_loudness(audio: np.ndarray, reference: np.ndarray) -> np.ndarray:
    scale = np.sqrt(np.mean(np.square(reference)) / (np.mean(np.square(audio)) + 1e-12))
    return (audio * scale).astype(np.float32)


def reverberate(
    audio: np.ndarray, low_rt60: float, high_rt60: float, sample_rate: int, rng
) -> np.ndarray:
    """A simulated room: the direct path plus exponentially decaying noise that falls 60 dB in a
    random RT60 in [low, high] seconds, starting 2-10 ms later; loudness kept."""
    rt60 = rng.uniform(low_rt60, high_rt60)
    length = max(int(high_rt60 * sample_rate), 2)
    time = np.arange(length, dtype=np.float32) / np.float32(sample_rate)
    delay = rng.uniform(0.002, 0.010)
    decay = np.float32(-6.908 / max(rt60, 1e-3))
    tail = rng.standard_normal(length, dtype=np.float32) * np.exp(decay * time)
    tail *= (time >= delay) & (time < rt60)
    # direct-to-reverberant energy ratio between 0 and 10 dB
    ratio = 10.0 ** (rng.uniform(0.0, 10.0) / 10.0)
    tail *= np.float32(np.sqrt(1.0 / (ratio * np.sum(np.square(tail)) + 1e-12)))
    tail[0] = 1.0
    fft = _fft()
    size = fft.next_fast_len(len(audio) + length - 1, real=True)
    wet = fft.irfft(fft.rfft(audio, size) * fft.rfft(tail, size), size)
    return _same_loudness(wet[: len(audio)], audio)


def band_limit(audio: np.ndarray, sample_rate: int, rng) -> np.ndarray:
    """Keep a random pass band: from 50-400 Hz up to 3-7.5 kHz (no higher than Nyquist). One FFT
    of the whole signal, zero-padded to a fast length (a prime length is 10x slower)."""
    fft = _fft()
    size = fft.next_fast_len(len(audio), real=True)
    spectrum = fft.rfft(audio, size)
    frequencies = np.linspace(0.0, sample_rate / 2.0, len(spectrum))
    low = rng.uniform(50.0, 400.0)
    high = min(rng.uniform(3000.0, 7500.0), 0.95 * sample_rate / 2.0)
    keep = (frequencies >= low) & (frequencies <= high)
    return _same_loudness(fft.irfft(spectrum * keep, size)[: len(audio)], audio)


def mu_law_codec(audio: np.ndarray, bits: int = 8) -> np.ndarray:
    """Encode and decode with `bits`-bit mu-law companding, as G.711 telephony does."""
    mu = float(2**bits - 1)
    peak = np.max(np.abs(audio)) + 1e-9
    x = audio / peak
    encoded = np.sign(x) * np.log1p(mu * np.abs(x)) / math.log1p(mu)
    quantized = np.round((encoded + 1.0) / 2.0 * mu) / mu * 2.0 - 1.0
    return (np.sign(quantized) * ((1.0 + mu) ** np.abs(quantized) - 1.0) / mu * peak).astype(
        np.float32
    )


def _mask(length: int, count: int, width: int, rng) -> np.ndarray:
    """A [length] float mask with `count` random spans of up to `width` set to 0."""
    keep = np.ones(length, np.float32)
    for _ in range(count):
        size = int(rng.integers(0, width + 1))
        start = int(rng.integers(0, max(length - size, 0) + 1))
        keep[start : start + size] = 0.0
    return keep


def spec_augment(
    features: np.ndarray,
    freq_masks: int = 0,
    freq_width: int = 0,
    time_masks: int = 0,
    time_width: int = 0,
    rng=None,
) -> np.ndarray:
    """SpecAugment (Park et al. 2019) frequency and time masks on features [T, F] (masked to 0)."""
    rng = rng or np.random.default_rng()
    frames, bins = features.shape
    if freq_masks and freq_width:
        features = features * _mask(bins, freq_masks, freq_width, rng)[None, :]
    if time_masks and time_width:
        features = features * _mask(frames, time_masks, time_width, rng)[:, None]
    return features


def augment_audio(audio: np.ndarray, settings: dict, sample_rate: int = 16000, rng=None):
    """The configured waveform augmentations, in the order a recording would meet them: the
    speaker (speed, vocal tract), the room, the channel (band, codec), the noise."""
    rng = rng or np.random.default_rng()
    audio = np.asarray(audio, np.float32)
    if "speed" in settings:
        audio = perturb_speed(audio, *settings["speed"], rng)
    if "pitch_semitones" in settings:
        audio = shift_pitch(audio, *settings["pitch_semitones"], rng)
    if "vtlp" in settings:
        audio = warp_vocal_tract(audio, *settings["vtlp"], rng)
    if "reverb_rt60" in settings:
        reverb = lambda a: reverberate(a, *settings["reverb_rt60"], sample_rate, rng)  # noqa: E731
        audio = _sometimes(settings.get("reverb_probability", 1.0), reverb, audio, rng)
    if settings.get("band_limit_probability"):
        channel = lambda a: band_limit(a, sample_rate, rng)  # noqa: E731
        audio = _sometimes(settings["band_limit_probability"], channel, audio, rng)
    if settings.get("codec_probability"):
        audio = _sometimes(settings["codec_probability"], mu_law_codec, audio, rng)
    if "noise_snr_db" in settings:
        audio = add_noise(audio, *settings["noise_snr_db"], rng)
    return audio


def has_feature_masks(settings: dict) -> bool:
    """Whether `settings` asks for SpecAugment masks."""
    frequency = settings.get("freq_masks") and settings.get("freq_mask_width")
    return bool(frequency or settings.get("time_masks") and settings.get("time_mask_width"))


def augment_features(features: np.ndarray, settings: dict, rng=None) -> np.ndarray:
    """SpecAugment's masks as `settings` configures them."""
    return spec_augment(
        features,
        settings.get("freq_masks", 0),
        settings.get("freq_mask_width", 0),
        settings.get("time_masks", 0),
        settings.get("time_mask_width", 0),
        rng,
    )
