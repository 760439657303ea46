"""Exporting trained models for serving: SavedModels (no keras_s2s needed to serve) and CTranslate2 models.

Example:
    >>> from keras_s2s.export import export_ctranslate2, export_saved_model
    >>> export_saved_model(model, "exported/gnmt", beam_width=4)
    >>> export_ctranslate2(model, "exported/transformer-ct2", quantization="int8")
"""

from keras_s2s.export.ctranslate2 import CTranslate2Translator, export_ctranslate2
from keras_s2s.export.saved_model import export_saved_model

__all__ = ["CTranslate2Translator", "export_ctranslate2", "export_saved_model"]
