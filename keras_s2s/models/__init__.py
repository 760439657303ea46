"""Zoo architectures by card name."""
from keras_s2s.models.convs2s import ConvS2S
from keras_s2s.models.deepspeech2 import DeepSpeech2
from keras_s2s.models.gnmt import GNMT
from keras_s2s.models.jasper import Jasper, Wave2Letter
from keras_s2s.models.seq2seq_lm import Seq2SeqLM
from keras_s2s.models.speech_to_text import SpeechToText
from keras_s2s.models.tacotron2 import Tacotron2
from keras_s2s.models.transformer import Transformer

ARCHITECTURES = {
    "gnmt": GNMT, "transformer": Transformer, "convs2s": ConvS2S,
    "deepspeech2": DeepSpeech2, "wave2letter": Wave2Letter, "jasper": Jasper, "tacotron2": Tacotron2,
}

__all__ = ["ARCHITECTURES", "ConvS2S", "DeepSpeech2", "GNMT", "Jasper", "Seq2SeqLM", "SpeechToText", "Tacotron2", "Transformer",
           "Wave2Letter"]
