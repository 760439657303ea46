"""Audio: reading and writing sound files, features (log-mel, MFCC, spectrogram), augmentation, manifests,
long recordings read a block at a time and cut at pauses.

The names below load on first use; none of them starts TensorFlow.

Example:
    >>> from keras_s2s.audio import FeatureExtractor, read_audio, read_manifest
    >>> utterances = read_manifest("train.csv")
    >>> features = FeatureExtractor(kind="logmel").numpy_features(read_audio(utterances[0].path))
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "augment_audio": "keras_s2s.audio.augment",
    "FeatureExtractor": "keras_s2s.audio.features",
    "AudioError": "keras_s2s.audio.io",
    "read_audio": "keras_s2s.audio.io",
    "resample": "keras_s2s.audio.io",
    "write_wav": "keras_s2s.audio.io",
    "Utterance": "keras_s2s.audio.manifest",
    "combine_corpora": "keras_s2s.audio.manifest",
    "read_manifest": "keras_s2s.audio.manifest",
    "write_manifest": "keras_s2s.audio.manifest",
    "audio_seconds": "keras_s2s.audio.segments",
    "pieces_at_pauses": "keras_s2s.audio.segments",
    "stream_audio": "keras_s2s.audio.segments",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
