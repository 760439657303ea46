"""What the three task bases (`Seq2SeqLM`, `SpeechToText`, `Tacotron2`) share: saving as a preset, the
config of the assets they carry (tokenizer, vocabulary, feature extractor), and a cache of traced functions.

Example:
    >>> model.save_to_preset("presets/gnmt_demo", metadata={"bleu": 87.2})
"""

from __future__ import annotations

import keras

from keras_s2s.presets import save_to_preset as write_preset


class ZooModel(keras.Model):
    """A `keras.Model` that can write itself as a preset directory."""

    def save_to_preset(self, directory, metadata: dict | None = None):
        """Write this model as a preset directory (config, weights, metadata); see `keras_s2s.presets`."""
        return write_preset(self, directory, metadata)


class FunctionCache:
    """A plain dict holder: TensorFlow does not track it, so SavedModel export skips the cached functions."""

    def __init__(self):
        self.functions = {}

    def __contains__(self, key):
        return key in self.functions

    def __getitem__(self, key):
        return self.functions[key]

    def __setitem__(self, key, value):
        self.functions[key] = value


def serialize_assets(config: dict, **assets) -> dict:
    """`config` with each asset object (vocabulary, feature extractor; None stays None) serialized."""
    return {
        **config,
        **{
            key: keras.saving.serialize_keras_object(value) if value is not None else None
            for key, value in assets.items()
        },
    }


def deserialize_assets(config: dict, keys: tuple) -> dict:
    """A copy of `config` with the serialized asset objects under `keys` rebuilt."""
    config = dict(config)
    for key in keys:
        if config.get(key):
            config[key] = keras.saving.deserialize_keras_object(config[key])
    return config
