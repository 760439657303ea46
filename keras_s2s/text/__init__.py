"""Text: the subword tokenizer, character vocabularies, text normalization, corpus files, English text.

The names below load on first use (no TensorFlow is started by any of them).

Example:
    >>> from keras_s2s.text import SubwordTokenizer, read_parallel
    >>> sources, targets = read_parallel(["train.en", "train.de"])
    >>> tokenizer = SubwordTokenizer.train(sources + targets, vocab_size=8000)
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "CatalogError": "keras_s2s.text.catalogs",
    "fill_catalog": "keras_s2s.text.catalogs",
    "CharVocabulary": "keras_s2s.text.characters",
    "SubwordVocabulary": "keras_s2s.text.characters",
    "normalize_transcript": "keras_s2s.text.characters",
    "CorpusError": "keras_s2s.text.corpus",
    "read_parallel": "keras_s2s.text.corpus",
    "speakable_sentences": "keras_s2s.text.english",
    "general_word_frequencies": "keras_s2s.text.english",
    "normalize_text": "keras_s2s.text.normalization",
    "SubwordTokenizer": "keras_s2s.text.tokenizer",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
