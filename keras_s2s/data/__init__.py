"""Tokenizers, corpora, the demo task and tf.data pipelines.

The names below load on first use, so a module of this package that needs no
TensorFlow (eSpeak NG synthesis, manifests, text) starts without it: the
speech-corpus builder's child processes import only what they use.
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "CorpusError": "keras_s2s.data.corpus",
    "read_parallel": "keras_s2s.data.corpus",
    "DemoCorpus": "keras_s2s.data.demo",
    "ParallelData": "keras_s2s.data.parallel",
    "load_parallel_data": "keras_s2s.data.parallel",
    "make_dataset": "keras_s2s.data.pipeline",
    "SubwordTokenizer": "keras_s2s.data.tokenizer",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
