"""Decoding: greedy and beam search for translation models, word n-gram LMs and CTC beam search fused
with them for speech recognizers, and the Griffin-Lim vocoder for speech synthesizers.

The names load on first use.

Example:
    >>> from keras_s2s.decoding import KneserNeyLM, LMDecoder
    >>> KneserNeyLM.estimate(sentences, order=3).write_arpa("words.arpa")
    >>> decoder = LMDecoder(model.vocabulary, "words.arpa", alpha=0.5, beta=1.0, beam_width=32)
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "beam_search": "keras_s2s.decoding.beam_search",
    "greedy_search": "keras_s2s.decoding.beam_search",
    "LMDecoder": "keras_s2s.decoding.ctc_lm",
    "KneserNeyLM": "keras_s2s.decoding.ngram_lm",
    "GriffinLim": "keras_s2s.decoding.vocoder",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
