"""`TranslationServer`: strings -> strings inside one TensorFlow graph, for SavedModel export."""

from __future__ import annotations

import tensorflow as tf

from keras_s2s.text.tokenizer import SubwordTokenizer
from keras_s2s.token_ids import EOS_ID


class TranslationServer(tf.Module):
    """Raw strings [B] -> translated strings [B]: SentencePiece (tensorflow-text), decoding and
    detokenization inside one graph."""

    def __init__(
        self,
        model,
        beam_width: int,
        length_penalty: float,
        max_length_ratio: float = 2.0,
        max_length_offset: int = 10,
    ):
        super().__init__()
        tokenizer = model.tokenizer
        if tokenizer is None:
            raise ValueError("this model has no tokenizer to put inside the SavedModel")
        if not isinstance(tokenizer.source, SubwordTokenizer) or not isinstance(
            tokenizer.target, SubwordTokenizer
        ):
            raise ValueError(
                "SavedModel export needs SentencePiece tokenizers (not a pretokenized vocabulary)"
            )
        self.model = model
        self.source_pieces = tokenizer.source.in_graph()
        self.target_pieces = tokenizer.target.in_graph()
        self.beam_width, self.length_penalty = beam_width, float(length_penalty)
        self.max_length_ratio, self.max_length_offset = (
            float(max_length_ratio),
            int(max_length_offset),
        )

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def translate(self, text):
        # each source cut to the model's `source_limit` (its positions, else MAX_SOURCE_TOKENS), EOS
        # included, as `Seq2SeqLM.translate` cuts it: decoding memory stays bounded
        ids = self.source_pieces.tokenize(text)[:, : self.model.source_limit - 1]
        ids = tf.concat([ids, tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, ids.dtype))], axis=1)
        source = tf.cast(ids.to_tensor(0), tf.int32)
        limits = self.model.output_limits(
            source, max_length_ratio=self.max_length_ratio, max_length_offset=self.max_length_offset
        )
        output = self.model.decode_ids(source, limits, self.beam_width, self.length_penalty)
        before_eos = tf.cumsum(tf.cast(tf.equal(output, EOS_ID), tf.int32), axis=1) == 0
        pieces = tf.ragged.boolean_mask(output, before_eos & (output > EOS_ID))
        return {"translation": self.target_pieces.detokenize(pieces)}
