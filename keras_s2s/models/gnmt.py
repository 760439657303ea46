"""GNMT (Wu et al. 2016), in OpenSeq2Seq's "GNMT-like" form.

Encoder: embedding, a bidirectional LSTM, then unidirectional LSTMs with
residual connections from the third layer on. Decoder: an LSTM stack with
residual connections from the third layer on, then normalized Bahdanau
attention of every decoder step over the encoder outputs, a tanh
combination of decoder output and context, and the output projection
(float32 logits).

The decoder runs without input feeding (the context is not fed back into the
LSTMs), as in Ono et al. 2019: training computes the whole LSTM stack first
and attention for all steps at once, which is faster and lets the hybrid mode
place LSTM layers on different devices.

Example:
    >>> model = GNMT(vocab_size=1000, num_layers=2, units=64)
    >>> logits = model({"source": src_ids, "target_in": tgt_ids})   # [B, T, 1000] float32
"""

from __future__ import annotations

import keras
from keras import ops
import tensorflow as tf

from keras_s2s.layers.attention import NormalizedBahdanauAttention
from keras_s2s.models.seq2seq_lm import Seq2SeqLM


@keras.saving.register_keras_serializable(package="keras_s2s")
class GNMT(Seq2SeqLM):
    """GNMT-like encoder-decoder with normalized Bahdanau attention.

    Args:
        vocab_size: int. Target (or joint) vocabulary size.
        source_vocab_size: int. Separate source vocabulary size (0 = joint).
        num_layers: int. LSTM layers in the encoder and in the decoder (>= 2).
        units: int. LSTM units (each direction of the bidirectional layer).
        embedding_dim: int. Embedding size (0 = `units`).
        attention_units: int. Attention hidden size (0 = `units`).
        dropout: float. Dropout between layers during training.
        residual_start: int. First (0-based) layer with a residual connection.
        tokenizer: SubwordTokenizer | None. Saved with the model.
        decode_max_length: int. Default limit of `generate`.
    """

    def __init__(
        self,
        vocab_size: int = 8000,
        source_vocab_size: int = 0,
        num_layers: int = 4,
        units: int = 1024,
        embedding_dim: int = 0,
        attention_units: int = 0,
        dropout: float = 0.2,
        residual_start: int = 2,
        tokenizer=None,
        decode_max_length: int = 128,
        **kwargs,
    ):
        super().__init__(vocab_size=vocab_size, source_vocab_size=source_vocab_size, tokenizer=tokenizer,
                         decode_max_length=decode_max_length, **kwargs)
        if num_layers < 2:
            raise ValueError(f"GNMT needs num_layers >= 2 (a bidirectional layer, then more); got {num_layers}")
        self.num_layers = num_layers
        self.units = units
        self.embedding_dim = embedding_dim
        self.attention_units = attention_units
        self.dropout = dropout
        self.residual_start = residual_start
        dtype = self.dtype_policy
        emb = embedding_dim or units
        self.source_embedding = keras.layers.Embedding(source_vocab_size or vocab_size, emb, dtype=dtype,
                                                       name="source_embedding")
        self.target_embedding = keras.layers.Embedding(vocab_size, emb, dtype=dtype, name="target_embedding")
        self.encoder_layers = [
            keras.layers.Bidirectional(
                keras.layers.LSTM(units, return_sequences=True, dtype=dtype), dtype=dtype, name="encoder_bilstm"
            )
        ] + [
            keras.layers.LSTM(units, return_sequences=True, dtype=dtype, name=f"encoder_lstm_{i}")
            for i in range(1, num_layers)
        ]
        self.decoder_layers = [
            keras.layers.LSTM(units, return_sequences=True, dtype=dtype, name=f"decoder_lstm_{i}")
            for i in range(num_layers)
        ]
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=dtype)
        self.attention = NormalizedBahdanauAttention(attention_units or units, dtype=dtype, name="attention")
        self.combine = keras.layers.Dense(units, activation="tanh", dtype=dtype, name="attention_combine")
        # the projection's matmul runs in the compute dtype (fast); logits are cast to float32 for the softmax
        self.output_projection = keras.layers.Dense(vocab_size, dtype=dtype, name="output_projection")

    def _stack(self, layers, x, training, mask=None):
        for index, layer in enumerate(layers):
            out = layer(x, mask=mask, training=training) if mask is not None else layer(x, training=training)
            x = out + x if index >= self.residual_start else out
            x = self.dropout_layer(x, training=training)
        return x

    def encode(self, source_ids, training=False):
        mask = ops.not_equal(source_ids, 0)
        x = self.dropout_layer(self.source_embedding(source_ids), training=training)
        memory = self._stack(self.encoder_layers, x, training, mask=mask)
        return {"memory": memory, "keys": self.attention.project_memory(memory), "mask": mask}

    def _readout(self, decoder_out, encoded, training=False):
        """Float32 logits [B, T, V] and attention weights [B, T, S]."""
        context, weights = self.attention(decoder_out, encoded["memory"], encoded["mask"], keys=encoded["keys"])
        combined = self.combine(ops.concatenate([decoder_out, context], axis=-1))
        logits = self.output_projection(self.dropout_layer(combined, training=training))
        return ops.cast(logits, "float32"), weights

    def call(self, inputs, training=False):
        encoded = self.encode(inputs["source"], training=training)
        y = self.dropout_layer(self.target_embedding(inputs["target_in"]), training=training)
        y = self._stack(self.decoder_layers, y, training)
        return self._readout(y, encoded, training)[0]

    def initial_decoder_state(self, encoded, max_length):
        batch = tf.shape(encoded["memory"])[0]
        zeros = tf.zeros([batch, self.units], self.compute_dtype)
        state = {f"{part}_{i}": zeros for i in range(len(self.decoder_layers)) for part in ("h", "c")}
        state["attention"] = tf.zeros(tf.shape(encoded["mask"]), tf.float32)
        return state

    def decode_step(self, token_ids, state, encoded):
        x = self.target_embedding(token_ids)
        new_state = {}
        for index, layer in enumerate(self.decoder_layers):
            h, (h, c) = layer.cell(x, [state[f"h_{index}"], state[f"c_{index}"]])
            new_state[f"h_{index}"], new_state[f"c_{index}"] = h, c
            x = h + x if index >= self.residual_start else h
        logits, weights = self._readout(ops.expand_dims(x, 1), encoded)
        new_state["attention"] = weights[:, 0, :]
        return logits[:, 0, :], new_state

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "units": self.units,
                "embedding_dim": self.embedding_dim,
                "attention_units": self.attention_units,
                "dropout": self.dropout,
                "residual_start": self.residual_start,
            }
        )
        return config
