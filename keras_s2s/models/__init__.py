"""Zoo architectures by card name."""
from keras_s2s.models.gnmt import GNMT
from keras_s2s.models.seq2seq_lm import Seq2SeqLM

ARCHITECTURES = {"gnmt": GNMT}

__all__ = ["ARCHITECTURES", "GNMT", "Seq2SeqLM"]
