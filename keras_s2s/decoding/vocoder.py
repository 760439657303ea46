"""Vocoders: log-mel spectrograms -> waveforms.

A vocoder is any callable `log_mel [T, M] -> float32 samples` with a
`sample_rate` attribute; `Tacotron2.synthesize(texts, vocoder=...)` takes
one, so a neural vocoder can replace `GriffinLim` without other changes.
`GriffinLim` inverts the mel filterbank of the `FeatureExtractor` that made
the training targets (least squares, librosa), raises the magnitudes to
`power` (Tacotron's sharpening) and recovers the phase with `iterations` of
fast Griffin-Lim (Perraudin et al. 2013, librosa).

Example:
    >>> vocoder = GriffinLim(model.extractor, iterations=60)
    >>> samples = vocoder(model.infer(["Hello there."])[0]["mel"])
    >>> write_wav("hello.wav", samples, vocoder.sample_rate)
"""

from __future__ import annotations

import warnings

import numpy as np

from keras_s2s.audio.io import require_audio_extra


class GriffinLim:
    """Args:
    extractor: FeatureExtractor. The `logmel` extractor the mel targets came from.
    iterations: int. Griffin-Lim iterations (60 is plenty; 30 is faster).
    power: float. Magnitudes are raised to this before phase recovery (1 = off).
    momentum: float. Fast Griffin-Lim momentum (0 = the original algorithm).
    peak: float. Output peak amplitude (0 = leave the level as it comes).
    """

    def __init__(
        self,
        extractor,
        iterations: int = 60,
        power: float = 1.5,
        momentum: float = 0.99,
        peak: float = 0.9,
    ):
        if extractor.kind != "logmel" or extractor.normalize or extractor.preemphasis:
            raise ValueError(
                "GriffinLim inverts plain log-mel features (kind=logmel, normalize=False, "
                f"preemphasis=0); got kind={extractor.kind}, normalize={extractor.normalize}, "
                f"preemphasis={extractor.preemphasis}"
            )
        self.extractor, self.iterations, self.power = extractor, iterations, power
        self.momentum, self.peak = momentum, peak
        self.sample_rate = extractor.sample_rate

    def magnitudes(self, log_mel: np.ndarray) -> np.ndarray:
        """Linear STFT magnitudes [n_fft/2+1, T] that best explain `log_mel` [T, M]."""
        librosa = require_audio_extra("librosa")
        e = self.extractor
        mel_power = np.maximum(np.exp(np.asarray(log_mel, np.float64)) - e.log_floor, 0.0).T
        return librosa.feature.inverse.mel_to_stft(
            mel_power,
            sr=e.sample_rate,
            n_fft=e.n_fft,
            power=2.0,
            fmin=e.fmin,
            fmax=e.fmax or e.sample_rate / 2,
        )

    def __call__(self, log_mel: np.ndarray) -> np.ndarray:
        """Float32 samples of a log-mel spectrogram [T, M]."""
        librosa = require_audio_extra("librosa")
        e = self.extractor
        if len(log_mel) == 0:
            return np.zeros(0, np.float32)
        with warnings.catch_warnings():  # a few frames: librosa warns that n_fft exceeds the signal
            warnings.filterwarnings("ignore", message="n_fft=.* is too large")
            samples = librosa.griffinlim(
                self.magnitudes(log_mel) ** self.power,
                n_iter=self.iterations,
                hop_length=e.stride,
                win_length=e.window,
                n_fft=e.n_fft,
                window="hann",
                momentum=self.momentum,
                init="random",
                random_state=0,
            )
        # librosa's frame t is centred on sample t*hop, the extractor's starts there: shift back in line
        samples = np.concatenate([np.zeros(e.window // 2, samples.dtype), samples])
        top = np.abs(samples).max()
        if self.peak and top > 0:
            samples = samples * (self.peak / top)
        return samples.astype(np.float32)
