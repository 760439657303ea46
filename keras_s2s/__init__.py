"""keras_s2s: fast sequence-to-sequence models for Keras 3."""
from keras_s2s import data, distribute, models, zoo

__version__ = "0.1.0"
__all__ = ["data", "distribute", "models", "zoo"]
