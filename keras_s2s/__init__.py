"""keras_s2s: fast sequence-to-sequence models for Keras 3.

Example:
    >>> import keras_s2s
    >>> model = keras_s2s.zoo.load("gnmt", num_layers=2, units=256)
    >>> trained = keras_s2s.load_model("runs/gnmt_demo")   # a run directory written by `keras-s2s train`
"""
from keras_s2s import data, distribute, models, zoo
from keras_s2s.training.runner import load_model, train

__version__ = "0.1.0"
__all__ = ["data", "distribute", "load_model", "models", "train", "zoo"]
