"""`SpeechServer`: audio -> text inside one TensorFlow graph, for SavedModel export."""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_s2s.text.characters import CharVocabulary


class SpeechServer(tf.Module):
    """Float32 audio [B, N] at the model's sample rate and lengths [B] -> text [B]: features
    (`tf.signal`), the network and CTC decoding inside one graph."""

    def __init__(self, model, beam_width: int):
        super().__init__()
        if model.extractor is None or not isinstance(model.vocabulary, CharVocabulary):
            raise ValueError(
                "SavedModel export of a speech recognizer needs its feature extractor and a "
                "character vocabulary"
            )
        self.model, self.beam_width = model, beam_width
        extractor = model.extractor
        self.window, self.stride, self.size = (
            extractor.window,
            extractor.stride,
            extractor.feature_size,
        )
        self.alphabet = tf.constant(
            [""] + [model.vocabulary.decode([i]) or " " for i in range(1, model.vocab_size)]
        )

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.float32, name="audio"),
            tf.TensorSpec([None], tf.int32, name="audio_lengths"),
        ]
    )
    def transcribe(self, audio, audio_lengths):
        frames = tf.maximum(1, 1 + (audio_lengths - self.window) // self.stride)
        width = tf.reduce_max(frames)

        def featurize(args):
            samples, length = args
            features = self.model.extractor(samples[:length])
            return tf.pad(features, [[0, width - tf.shape(features)[0]], [0, 0]])

        features = tf.map_fn(
            featurize,
            (audio, audio_lengths),
            fn_output_signature=tf.TensorSpec([None, self.size], tf.float32),
        )
        logits = self.model({"features": features, "feature_lengths": frames}, training=False)
        out_lengths = tf.minimum(self.model.output_lengths(frames), tf.shape(logits)[1])
        strategy = "greedy" if self.beam_width == 1 else "beam_search"
        decoded, _ = keras.ops.ctc_decode(
            logits,
            out_lengths,
            strategy=strategy,
            beam_width=self.beam_width,
            top_paths=1,
            mask_index=0,
        )
        ids = tf.cast(decoded[0], tf.int32)
        characters = tf.gather(self.alphabet, tf.maximum(ids, 0))
        characters = tf.where(ids > 0, characters, "")
        return {"text": tf.strings.strip(tf.strings.reduce_join(characters, axis=1))}
