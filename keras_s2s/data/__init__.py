"""Input pipelines: a task's corpus turned into padded, bucketed batches for `fit`.

Translation (`load_parallel_data`, `make_dataset`, `encode_corpus`), speech recognition (`load_speech_data`) and
speech synthesis (`load_tts_data`), each batched by one plan (`Batching`); `tf.data` under TensorFlow,
`keras.utils.PyDataset`s on one base (`batches.BucketedBatches`) elsewhere. The names load on first
use.

Example:
    >>> plan = keras_s2s.data.Batching(batch_size=32, repeat=True)
    >>> data = keras_s2s.data.load_parallel_data("demo", num_train=2000, vocab_size=800, batching=plan)
    >>> data.train  # batches of ((source ids, decoder input ids), target ids)
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    "Batching": "keras_s2s.data.batches",
    "ParallelData": "keras_s2s.data.parallel",
    "encode_corpus": "keras_s2s.data.parallel",
    "load_parallel_data": "keras_s2s.data.parallel",
    "read_splits": "keras_s2s.data.parallel",
    "SpeechData": "keras_s2s.data.speech",
    "load_speech_data": "keras_s2s.data.speech",
    "make_dataset": "keras_s2s.data.translation",
    "load_tts_data": "keras_s2s.data.tts",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
