"""Tokenizers, corpora, the demo task and tf.data pipelines.

The names below load on first use, so a module of this package that needs no
TensorFlow (eSpeak NG synthesis, manifests, text) starts without it: the
speech-corpus builder's child processes import only what they use.
"""

import importlib

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


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    try:  # a submodule: keras_s2s.data.speech, ...
        return importlib.import_module(f"keras_s2s.data.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'keras_s2s.data' has no attribute '{name}'") from None
