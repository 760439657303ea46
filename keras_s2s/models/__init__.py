"""The zoo's architectures, by card name.

`ARCHITECTURES` comes from Keras's registry: every `keras.Model` a module of
this package registers under `package="keras_s2s"`, named by its lowercased
class name (`GNMT` -> `gnmt`). A new architecture is a new module here.

Example:
    >>> from keras_s2s.models import ARCHITECTURES
    >>> sorted(ARCHITECTURES)[:3]
    ['convs2s', 'deepspeech2', 'gnmt']
"""

import importlib
import pkgutil

import keras

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from keras_s2s.models.convs2s import ConvS2S  # noqa: E402
from keras_s2s.models.deepspeech2 import DeepSpeech2  # noqa: E402
from keras_s2s.models.gnmt import GNMT  # noqa: E402
from keras_s2s.models.jasper import Jasper, QuartzNet, Wave2Letter  # noqa: E402
from keras_s2s.models.seq2seq_lm import Seq2SeqLM  # noqa: E402
from keras_s2s.models.speech_to_text import SpeechToText  # noqa: E402
from keras_s2s.models.tacotron2 import Tacotron2  # noqa: E402
from keras_s2s.models.transformer import Transformer  # noqa: E402

ARCHITECTURES = {
    name.split(">", 1)[1].lower(): cls
    for name, cls in keras.saving.get_custom_objects().items()
    if name.startswith("keras_s2s>") and isinstance(cls, type) and issubclass(cls, keras.Model)
}

__all__ = [
    "ARCHITECTURES",
    "ConvS2S",
    "DeepSpeech2",
    "GNMT",
    "Jasper",
    "QuartzNet",
    "Seq2SeqLM",
    "SpeechToText",
    "Tacotron2",
    "Transformer",
    "Wave2Letter",
]
