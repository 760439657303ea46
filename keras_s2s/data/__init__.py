"""Tokenizers, corpora, the demo task and tf.data pipelines."""

from keras_s2s.data.corpus import CorpusError, read_parallel
from keras_s2s.data.demo import DemoCorpus
from keras_s2s.data.parallel import ParallelData, load_parallel_data
from keras_s2s.data.pipeline import make_dataset
from keras_s2s.data.tokenizer import SubwordTokenizer

__all__ = [
    "CorpusError",
    "DemoCorpus",
    "ParallelData",
    "SubwordTokenizer",
    "load_parallel_data",
    "make_dataset",
    "read_parallel",
]
