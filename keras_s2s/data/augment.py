"""Speech augmentation in TensorFlow ops: speed perturbation, additive noise, SpecAugment.

All three are off unless configured (a card's `data.augment` part):

    augment: {speed: [0.9, 1.1], noise_snr_db: [10, 40], freq_masks: 2, freq_mask_width: 8,
              time_masks: 2, time_mask_width: 20}

Example:
    >>> audio = perturb_speed(audio, 0.9, 1.1)
    >>> audio = add_noise(audio, 10.0, 40.0)
    >>> features = spec_augment(features, freq_masks=2, freq_width=8, time_masks=2, time_width=20)
"""

from __future__ import annotations

import tensorflow as tf

AUGMENT_KEYS = (
    "speed",
    "noise_snr_db",
    "freq_masks",
    "freq_mask_width",
    "time_masks",
    "time_mask_width",
)


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


def add_noise(audio, min_snr_db: float, max_snr_db: float):
    """Add white noise at a random signal-to-noise ratio in [min_snr_db, max_snr_db] dB."""
    snr = tf.random.uniform([], min_snr_db, max_snr_db)
    signal_rms = tf.sqrt(tf.reduce_mean(tf.square(audio)) + 1e-12)
    noise_rms = signal_rms / tf.pow(10.0, snr / 20.0)
    return audio + noise_rms * tf.random.normal(tf.shape(audio))


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


def augment_audio(audio, settings: dict):
    if "speed" in settings:
        audio = perturb_speed(audio, *settings["speed"])
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
