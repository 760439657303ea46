"""Zoo architectures by card name."""
from keras_s2s.models.convs2s import ConvS2S
from keras_s2s.models.gnmt import GNMT
from keras_s2s.models.seq2seq_lm import Seq2SeqLM
from keras_s2s.models.transformer import Transformer

ARCHITECTURES = {"gnmt": GNMT, "transformer": Transformer, "convs2s": ConvS2S}

__all__ = ["ARCHITECTURES", "ConvS2S", "GNMT", "Seq2SeqLM", "Transformer"]
