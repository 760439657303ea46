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


def export_saved_model(
    model,
    path: str | Path,
    beam_width: int = 4,
    length_penalty: float = 0.6,
    max_length_ratio: float = 2.0,
    max_length_offset: int = 10,
) -> Path:
    """Write a serving SavedModel of a translation model or speech recognizer (atomically); its task
    (`keras_s2s.tasks`) provides the serving module."""
    path = Path(path)
    if path.exists():
        raise ValueError(f"{path} already exists; choose another --out")
    server, signature = tasks.of_model(model).serving_module(
        model,
        beam_width=beam_width,
        length_penalty=length_penalty,
        max_length_ratio=max_length_ratio,
        max_length_offset=max_length_offset,
    )
    tmp = staging_folder(path)
    try:
        tf.saved_model.save(server, str(tmp), signatures={"serving_default": signature})
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
