"""Speech features computed with `tf.signal`, inside `tf.data` or a SavedModel.

`FeatureExtractor` turns float32 samples [N] into features [T, F]: log-mel
filterbanks (`logmel`), MFCCs (`mfcc`) or a log linear spectrogram
(`spectrogram`), with dithering, pre-emphasis and per-utterance
normalization. The STFT is uncentered with a periodic Hann window; the mel
filterbank is librosa's (Slaney scale and area normalization); logs are
natural, floored at `log_floor`; MFCCs are the orthonormal DCT-II of the
log-mel bands. `librosa_features` computes the same with librosa and numpy,
and the tests hold the two within 1e-3 (float32 round-off). Where Keras runs on
another backend (JAX: the GPU machine has no TensorFlow) `numpy_features`
computes the same in NumPy; the mel filterbank is computed here (librosa's, without librosa).

Example:
    >>> extractor = FeatureExtractor(kind="logmel", num_features=64)
    >>> features = extractor(tf.constant(samples))      # [frames, 64]
"""

from __future__ import annotations

import keras
import numpy as np

from keras_s2s.backend import is_tensorflow, tf

KINDS = ("logmel", "mfcc", "spectrogram")


@keras.saving.register_keras_serializable(package="keras_s2s")
class FeatureExtractor:
    """Audio samples -> [frames, features], all in TensorFlow ops.

    Args:
        kind: str. `logmel`, `mfcc` or `spectrogram`.
        sample_rate: int. Rate the samples are in.
        num_features: int. Mel bands (logmel), coefficients (mfcc; from
            `num_mels` bands), or ignored for `spectrogram` (n_fft // 2 + 1 bins).
        window_ms, stride_ms: float. Analysis window and hop.
        n_fft: int. FFT size (0 = the next power of two >= the window).
        num_mels: int. Mel bands under the MFCCs.
        fmin, fmax: float. Mel filterbank range (fmax 0 = sample_rate / 2).
        preemphasis: float. y[t] = x[t] - a x[t-1] (0 = off).
        dither: float. Gaussian noise of this standard deviation added while
            training (`training=True`) only.
        normalize: bool. Zero mean, unit variance per feature over each utterance.
        log_floor: float. Added before taking the log.
    """

    def __init__(
        self,
        kind: str = "logmel",
        sample_rate: int = 16000,
        num_features: int = 64,
        window_ms: float = 20.0,
        stride_ms: float = 10.0,
        n_fft: int = 0,
        num_mels: int = 64,
        fmin: float = 0.0,
        fmax: float = 0.0,
        preemphasis: float = 0.97,
        dither: float = 1e-5,
        normalize: bool = True,
        log_floor: float = 1e-6,
    ):
        if kind not in KINDS:
            raise ValueError(f"feature kind must be one of {', '.join(KINDS)}; got {kind!r}")
        self.kind, self.sample_rate, self.num_features = kind, int(sample_rate), int(num_features)
        self.window_ms, self.stride_ms, self.num_mels = (
            float(window_ms),
            float(stride_ms),
            int(num_mels),
        )
        self.fmin, self.fmax, self.preemphasis, self.dither = (
            float(fmin),
            float(fmax),
            float(preemphasis),
            float(dither),
        )
        self.normalize, self.log_floor = bool(normalize), float(log_floor)
        self.window = int(round(sample_rate * window_ms / 1000))
        self.stride = int(round(sample_rate * stride_ms / 1000))
        self.n_fft = int(n_fft) or 1 << (self.window - 1).bit_length()
        if self.n_fft < self.window:
            raise ValueError(f"n_fft={self.n_fft} is shorter than the {self.window}-sample window")
        bands = num_features if kind == "logmel" else num_mels
        self._mel = None if kind == "spectrogram" else self._mel_matrix(bands)

    def _mel_matrix(self, bands: int) -> np.ndarray:
        return mel_filterbank(
            self.sample_rate, self.n_fft, bands, self.fmin, self.fmax or self.sample_rate / 2
        ).T  # [bins, bands]

    @property
    def feature_size(self) -> int:
        """F, the size of each frame's feature vector."""
        return self.n_fft // 2 + 1 if self.kind == "spectrogram" else self.num_features

    def num_frames(self, num_samples: int) -> int:
        return max(0, 1 + (num_samples - self.window) // self.stride)

    def __call__(self, samples, training: bool = False):
        """Features [frames, F] of samples [N]: TensorFlow ops on TensorFlow (inside tf.data or a
        graph), NumPy elsewhere (`numpy_features`)."""
        if not is_tensorflow():
            return self.numpy_features(np.asarray(samples, np.float32), training)
        samples = tf.convert_to_tensor(samples, tf.float32)
        if training and self.dither:
            samples += self.dither * tf.random.normal(tf.shape(samples))
        if self.preemphasis:
            samples = tf.concat(
                [samples[:1], samples[1:] - self.preemphasis * samples[:-1]], axis=0
            )
        # at least one frame
        samples = tf.pad(samples, [[0, tf.maximum(0, self.window - tf.shape(samples)[0])]])
        stft = tf.signal.stft(
            samples,
            self.window,
            self.stride,
            fft_length=self.n_fft,
            window_fn=tf.signal.hann_window,
            pad_end=False,
        )
        power = tf.math.square(tf.abs(stft))
        if self.kind == "spectrogram":
            features = tf.math.log(power + self.log_floor)
        else:
            features = tf.math.log(tf.matmul(power, self._mel) + self.log_floor)
            if self.kind == "mfcc":
                features = tf.signal.dct(features, type=2, norm="ortho")[:, : self.num_features]
        if self.normalize:
            mean, variance = tf.nn.moments(features, axes=[0], keepdims=True)
            features = (features - mean) / tf.sqrt(variance + 1e-5)
        return features

    def numpy_features(self, samples: np.ndarray, training: bool = False, rng=None) -> np.ndarray:
        """The same features as `__call__`, computed in NumPy (no TensorFlow; float32 round-off
        apart, equal to the TensorFlow ops within 1e-3)."""
        x = np.asarray(samples, np.float32)
        if training and self.dither:
            rng = rng or np.random.default_rng()
            x = x + self.dither * rng.standard_normal(x.shape).astype(np.float32)
        if self.preemphasis:
            x = np.concatenate([x[:1], x[1:] - np.float32(self.preemphasis) * x[:-1]])
        x = np.pad(x, (0, max(0, self.window - len(x))))  # at least one frame
        frames = np.lib.stride_tricks.sliding_window_view(x, self.window)[:: self.stride]
        window = 0.5 - 0.5 * np.cos(
            2 * np.pi * np.arange(self.window) / self.window
        )  # periodic Hann
        import scipy.fft  # several times numpy's speed on batches of frames (see augment.py)

        spectrum = scipy.fft.rfft(frames * window.astype(np.float32), n=self.n_fft, axis=1)
        power = np.square(np.abs(spectrum)).astype(np.float32)
        if self.kind == "spectrogram":
            features = np.log(power + np.float32(self.log_floor))
        else:
            features = np.log(power @ self._mel + np.float32(self.log_floor))
            if self.kind == "mfcc":
                features = dct_ortho(features)[:, : self.num_features]
        if self.normalize:
            features = (features - features.mean(0)) / np.sqrt(features.var(0) + 1e-5)
        return features.astype(np.float32)

    def get_config(self) -> dict:
        return {
            "kind": self.kind,
            "sample_rate": self.sample_rate,
            "num_features": self.num_features,
            "window_ms": self.window_ms,
            "stride_ms": self.stride_ms,
            "n_fft": self.n_fft,
            "num_mels": self.num_mels,
            "fmin": self.fmin,
            "fmax": self.fmax,
            "preemphasis": self.preemphasis,
            "dither": self.dither,
            "normalize": self.normalize,
            "log_floor": self.log_floor,
        }

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


def _hz_to_mel(hz):
    """Slaney's mel scale (librosa's default): linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, np.float64)
    linear = hz / (200.0 / 3)
    log_part = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log_part, linear)


def _mel_to_hz(mel):
    mel = np.asarray(mel, np.float64)
    linear = mel * (200.0 / 3)
    log_part = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log_part, linear)


def mel_filterbank(
    sample_rate: int, n_fft: int, bands: int, fmin: float, fmax: float
) -> np.ndarray:
    """Triangular mel filters [bands, n_fft // 2 + 1] on Slaney's scale with area normalization:
    what `librosa.filters.mel` returns by default, without librosa.

    Example:
        >>> mel_filterbank(16000, 512, 64, 0.0, 8000.0).shape
        (64, 257)
    """
    bins = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), bands + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2 : bands + 2] - edges[:bands]))[:, None]
    return weights.astype(np.float32)


def dct_ortho(x: np.ndarray) -> np.ndarray:
    """The orthonormal DCT-II along the last axis (as `scipy.fft.dct(x, type=2, norm="ortho")`)."""
    n = x.shape[-1]
    k = np.arange(n)[:, None]
    basis = np.cos(np.pi * k * (2 * np.arange(n)[None, :] + 1) / (2 * n))
    scale = np.full((n, 1), np.sqrt(2.0 / n))
    scale[0] = np.sqrt(1.0 / n)
    return (x.astype(np.float64) @ (basis * scale).T).astype(np.float32)


def librosa_features(samples: np.ndarray, extractor: FeatureExtractor) -> np.ndarray:
    """The reference: `extractor`'s features (no dither) computed with librosa and numpy."""
    import librosa
    import scipy.fft

    x = samples.astype(np.float64)
    if extractor.preemphasis:
        x = np.concatenate([x[:1], x[1:] - extractor.preemphasis * x[:-1]])
    window = np.zeros(extractor.n_fft)
    window[: extractor.window] = librosa.filters.get_window("hann", extractor.window, fftbins=True)
    frames = librosa.util.frame(x, frame_length=extractor.window, hop_length=extractor.stride).T
    padded = np.pad(frames, [(0, 0), (0, extractor.n_fft - extractor.window)])
    power = np.abs(np.fft.rfft(padded * window, axis=1)) ** 2
    if extractor.kind == "spectrogram":
        features = np.log(power + extractor.log_floor)
    else:
        mel = librosa.filters.mel(
            sr=extractor.sample_rate,
            n_fft=extractor.n_fft,
            n_mels=extractor.num_features if extractor.kind == "logmel" else extractor.num_mels,
            fmin=extractor.fmin,
            fmax=extractor.fmax or extractor.sample_rate / 2,
        )
        features = np.log(power @ mel.T + extractor.log_floor)
        if extractor.kind == "mfcc":
            features = scipy.fft.dct(features, type=2, norm="ortho", axis=1)[
                :, : extractor.num_features
            ]
    if extractor.normalize:
        features = (features - features.mean(0)) / np.sqrt(features.var(0) + 1e-5)
    return features.astype(np.float32)
