"""Corpora made here: the demo tasks and the synthetic English speech corpus with its synthesizers.

The demo tasks (`DemoCorpus` for translation, `DemoSpeech` and `DemoTTS` for speech) are generated
offline from a seed; `EnglishSpeech` renders real English sentences with eSpeak NG, MBROLA, flite
and Festival voices. The names load on first use: the corpus builder's child processes import only
the synthesizers, never TensorFlow.

Example:
    >>> from keras_s2s.corpora import DemoCorpus
    >>> train, valid, test = DemoCorpus(seed=0).split(1000, 100, 100)  # lists of (source, target)
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "EnglishSpeech": "keras_s2s.corpora.english_speech",
    "synthesize": "keras_s2s.corpora.espeak",
    "DemoSpeech": "keras_s2s.corpora.speech_demo",
    "DemoTTS": "keras_s2s.corpora.speech_demo",
    "DemoCorpus": "keras_s2s.corpora.translation_demo",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
