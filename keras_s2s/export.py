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

from keras_s2s.data.tokenizer import EOS_ID, SubwordTokenizer


class _TranslationServer(tf.Module):
    def __init__(self, model, beam_width: int, length_penalty: float, max_length_ratio: float,
                 max_length_offset: int):
        super().__init__()
        import tensorflow_text as tf_text

        tokenizer = model.tokenizer
        if not isinstance(tokenizer.source, SubwordTokenizer) or not isinstance(tokenizer.target, SubwordTokenizer):
            raise ValueError("SavedModel export needs SentencePiece tokenizers (not a pretokenized vocabulary)")
        self.model = model
        self.source_pieces = tf_text.SentencepieceTokenizer(model=tokenizer.source.proto)
        self.target_pieces = tf_text.SentencepieceTokenizer(model=tokenizer.target.proto)
        self.settings = (beam_width, float(length_penalty), float(max_length_ratio), int(max_length_offset))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def translate(self, text):
        beam_width, alpha, ratio, offset = self.settings
        ids = self.source_pieces.tokenize(text)
        ids = tf.concat([ids, tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, ids.dtype))], axis=1)
        source = tf.cast(ids.to_tensor(0), tf.int32)
        lengths = tf.reduce_sum(tf.cast(source != 0, tf.int32), axis=1)
        limit = self.model.max_positions_limit or self.model.decode_max_length
        limits = tf.minimum(tf.cast(tf.math.ceil(ratio * tf.cast(lengths, tf.float32)), tf.int32) + offset,
                            min(limit, self.model.decode_max_length))
        if beam_width == 1:
            output = self.model._greedy(source, limits)
        else:
            output = self.model._beam_or_greedy(source, limits, beam_width, alpha, 0.0)
        before_eos = tf.cumsum(tf.cast(tf.equal(output, EOS_ID), tf.int32), axis=1) == 0
        pieces = tf.ragged.boolean_mask(output, before_eos & (output > EOS_ID))
        return {"translation": self.target_pieces.detokenize(pieces)}


class _SpeechServer(tf.Module):
    def __init__(self, model, beam_width: int):
        super().__init__()
        self.model, self.beam_width = model, beam_width
        extractor = model.extractor
        self.window, self.stride, self.size = extractor.window, extractor.stride, extractor.feature_size
        self.alphabet = tf.constant([""] + [model.vocabulary.decode([i]) or " "
                                            for i in range(1, model.vocab_size)])

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="audio"),
                                  tf.TensorSpec([None], tf.int32, name="audio_lengths")])
    def transcribe(self, audio, audio_lengths):
        frames = tf.maximum(1, 1 + (audio_lengths - self.window) // self.stride)
        width = tf.reduce_max(frames)

        def featurize(args):
            samples, length = args
            features = self.model.extractor(samples[:length])
            return tf.pad(features, [[0, width - tf.shape(features)[0]], [0, 0]])

        features = tf.map_fn(featurize, (audio, audio_lengths),
                             fn_output_signature=tf.TensorSpec([None, self.size], tf.float32))
        logits = self.model({"features": features, "feature_lengths": frames}, training=False)
        out_lengths = tf.minimum(self.model.output_lengths(frames), tf.shape(logits)[1])
        strategy = "greedy" if self.beam_width == 1 else "beam_search"
        import keras

        decoded, _ = keras.ops.ctc_decode(logits, out_lengths, strategy=strategy, beam_width=self.beam_width,
                                          top_paths=1, mask_index=0)
        ids = tf.cast(decoded[0], tf.int32)
        characters = tf.gather(self.alphabet, tf.maximum(ids, 0))
        characters = tf.where(ids > 0, characters, "")
        return {"text": tf.strings.strip(tf.strings.reduce_join(characters, axis=1))}


def export_saved_model(model, path: str | Path, beam_width: int = 4, length_penalty: float = 0.6,
                       max_length_ratio: float = 2.0, max_length_offset: int = 10) -> Path:
    """Write a serving SavedModel of a translation model or speech recognizer (atomically)."""
    from keras_s2s.models import Seq2SeqLM, SpeechToText

    path = Path(path)
    if path.exists():
        raise ValueError(f"{path} already exists; choose another --out")
    if isinstance(model, Seq2SeqLM):
        if model.tokenizer is None:
            raise ValueError("this model has no tokenizer to put inside the SavedModel")
        server = _TranslationServer(model, beam_width, length_penalty, max_length_ratio, max_length_offset)
        signature = server.translate
    elif isinstance(model, SpeechToText):
        from keras_s2s.data.characters import CharVocabulary

        if model.extractor is None or not isinstance(model.vocabulary, CharVocabulary):
            raise ValueError("SavedModel export of a speech recognizer needs its feature extractor and a "
                             "character vocabulary")
        server = _SpeechServer(model, beam_width)
        signature = server.transcribe
    else:
        raise ValueError(f"cannot export a {type(model).__name__} as a SavedModel (translation models and speech "
                         "recognizers only); use --format keras")
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tf.saved_model.save(server, str(tmp), signatures={"serving_default": signature})
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
