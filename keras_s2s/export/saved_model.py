"""Export trained models as SavedModels that need neither keras_s2s nor Keras to serve.

Translation models get a `serving_default` signature from raw strings [B]
to translated strings [B]: SentencePiece tokenization (tensorflow-text),
beam search and detokenization all run inside the graph. Speech
recognizers get one from float32 audio [B, N] at the model's sample rate
and lengths [B] to text [B]: features (`tf.signal`), the network and CTC
decoding inside the graph. Loading needs `tensorflow` and, for
translation, `import tensorflow_text` (it registers the SentencePiece ops).

Example:
    >>> export_saved_model(model, "exported/gnmt", beam_width=4)
    >>> # elsewhere:  import tensorflow as tf, tensorflow_text
    >>> serve = tf.saved_model.load("exported/gnmt").signatures["serving_default"]
    >>> serve(text=tf.constant(["..."]))["translation"]
    >>> # speech: serve(audio=samples [B, N], audio_lengths=[B])["text"]
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import tensorflow as tf

from keras_s2s import tasks
from keras_s2s.files import staging_folder


def export_saved_model(model, path: str | Path, **options) -> Path:
    """Write a serving SavedModel of a translation model or speech recognizer (atomically); its task
    (`keras_s2s.tasks`) provides the serving module, `options` its decoding inside the graph
    (`beam_width`, default 4; a translation model's `length_penalty`, `max_length_ratio`,
    `max_length_offset`)."""
    path = Path(path)
    if path.exists():
        raise ValueError(f"{path} already exists; choose another --out")
    server, signature = tasks.of_model(model).serving_module(model, **options)
    tmp = staging_folder(path)
    try:
        tf.saved_model.save(server, str(tmp), signatures={"serving_default": signature})
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
