"""Exporting trained models for serving: SavedModels (no keras_s2s needed to serve) and CTranslate2 models.

Example:
    >>> from keras_s2s.export import export_ctranslate2, export_saved_model
    >>> export_saved_model(model, "exported/gnmt", beam_width=4)
    >>> export_ctranslate2(model, "exported/transformer-ct2", quantization="int8")

The names load on first use: the native engine (`export.native`) needs no TensorFlow.
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "CTranslate2Translator": "keras_s2s.export.ctranslate2",
    "export_ctranslate2": "keras_s2s.export.ctranslate2",
    "with_compute_type": "keras_s2s.export.native",
    "export_saved_model": "keras_s2s.export.saved_model",
}
__all__ = sorted(_PUBLIC)
__getattr__ = lazy_attributes(__name__, _PUBLIC)
