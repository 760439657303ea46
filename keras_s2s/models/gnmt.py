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
place LSTM layers on different devices (`set_placement`, see
`keras_s2s.distribution.placement`).

Example:
    >>> model = GNMT(vocab_size=1000, num_layers=2, units=64)
    >>> logits = model({"source": src_ids, "target_in": tgt_ids})   # [B, T, 1000] float32
"""

from __future__ import annotations

import contextlib

import keras
from keras import ops

from keras_s2s.distribution import placement as hybrid
from keras_s2s.layers.attention import NormalizedBahdanauAttention
from keras_s2s.layers.dropout import Dropout
from keras_s2s.layers.recurrent import LSTM
from keras_s2s.models.seq2seq_lm import ACTIVATION_COPIES, Seq2SeqLM


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
        super().__init__(
            vocab_size=vocab_size,
            source_vocab_size=source_vocab_size,
            tokenizer=tokenizer,
            decode_max_length=decode_max_length,
            **kwargs,
        )
        if num_layers < 2:
            raise ValueError(
                f"GNMT needs num_layers >= 2 (a bidirectional layer, then more); got {num_layers}"
            )
        self.num_layers = num_layers
        self.units = units
        self.embedding_dim = embedding_dim
        self.attention_units = attention_units
        self.dropout = dropout
        self.residual_start = residual_start
        dtype = self.dtype_policy
        emb = embedding_dim or units
        self.source_embedding = keras.layers.Embedding(
            source_vocab_size or vocab_size, emb, dtype=dtype, name="source_embedding"
        )
        self.target_embedding = keras.layers.Embedding(
            vocab_size, emb, dtype=dtype, name="target_embedding"
        )
        # unidirectional LSTMs return their state too, so the hybrid mode can run them in time chunks
        self.encoder_layers = [
            keras.layers.Bidirectional(
                LSTM(units, return_sequences=True, dtype=dtype), dtype=dtype, name="encoder_bilstm"
            )
        ] + [
            LSTM(
                units,
                return_sequences=True,
                return_state=True,
                dtype=dtype,
                name=f"encoder_lstm_{i}",
            )
            for i in range(1, num_layers)
        ]
        self.decoder_layers = [
            LSTM(
                units,
                return_sequences=True,
                return_state=True,
                dtype=dtype,
                name=f"decoder_lstm_{i}",
            )
            for i in range(num_layers)
        ]
        self.dropout_layer = Dropout(dropout, dtype=dtype)
        self.attention = NormalizedBahdanauAttention(
            attention_units or units, dtype=dtype, name="attention"
        )
        self.combine = keras.layers.Dense(
            units, activation="tanh", dtype=dtype, name="attention_combine"
        )
        # the projection's matmul runs in the compute dtype (fast); logits are cast to float32 for the softmax
        self.output_projection = keras.layers.Dense(
            vocab_size, dtype=dtype, name="output_projection"
        )
        self.placement = None  # a hybrid.LayerPlan once placed; not part of the config

    # --- hybrid placement -------------------------------------------------------------------

    def set_placement(self, plan: hybrid.LayerPlan) -> None:
        """Place layers by `plan` (see `keras_s2s.distribution.placement`); call before the model is built."""
        if self.built:
            raise ValueError(
                "place the model before it is built: its variables already live on one device "
                "(load it with strategy=HybridParallel(...) or call set_placement first)"
            )
        self.placement = plan

    def _on(self, layer):
        return self.placement.on(layer.name) if self.placement else contextlib.nullcontext()

    def train_step(self, *args):
        # TensorFlow passes (data); JAX passes (state, data): only a placed (TensorFlow) model steps itself
        if self.placement is None:
            return super().train_step(*args)
        return hybrid.hybrid_train_step(self, *args)

    # --- forward ------------------------------------------------------------------------------

    def _run_layer(self, layer, pieces, masks, training):
        if isinstance(layer, keras.layers.Bidirectional):  # needs the whole sequence
            return [layer(pieces[0], mask=masks[0], training=training)]
        return hybrid.run_chunked(layer, pieces, masks, training)

    def _stack(self, layers, x, training, mask=None):
        """The residual LSTM stack; with a plan, each layer on its device, in time chunks if asked."""
        chunks = self.placement.time_chunks if self.placement else 1
        length = ops.shape(x)[1]
        pieces, masks = [x], [mask]
        for index, layer in enumerate(layers):
            with self._on(layer):
                if len(pieces) < chunks and not isinstance(layer, keras.layers.Bidirectional):
                    pieces, masks = hybrid.split_in_time(
                        hybrid.join_in_time(pieces, length), mask, chunks
                    )
                outputs = self._run_layer(layer, pieces, masks, training)
                if index >= self.residual_start:
                    outputs = [out + piece for out, piece in zip(outputs, pieces)]
                pieces = [self.dropout_layer(out, training=training) for out in outputs]
        return hybrid.join_in_time(pieces, length)

    def _encode_memory(self, source_ids, training):
        mask = ops.not_equal(source_ids, 0)
        with self._on(self.source_embedding):
            x = self.dropout_layer(self.source_embedding(source_ids), training=training)
        return self._stack(self.encoder_layers, x, training, mask=mask), mask

    def encode(self, source_ids, training=False):
        memory, mask = self._encode_memory(source_ids, training)
        return {"memory": memory, "keys": self.attention.project_memory(memory), "mask": mask}

    def _readout(self, decoder_out, encoded, training=False):
        """Float32 logits [B, T, V] and attention weights [B, T, S]."""
        keys = encoded.get("keys")
        if keys is None:
            keys = self.attention.project_memory(encoded["memory"])
        context, weights = self.attention(
            decoder_out, encoded["memory"], encoded["mask"], keys=keys
        )
        combined = self.combine(ops.concatenate([decoder_out, context], axis=-1))
        logits = self.output_projection(self.dropout_layer(combined, training=training))
        return ops.cast(logits, "float32"), weights

    def _decoder_outputs(self, target_in, training):
        with self._on(self.target_embedding):
            y = self.dropout_layer(self.target_embedding(target_in), training=training)
        return self._stack(self.decoder_layers, y, training)

    def shard_logits(self, inputs, training=False) -> list:
        """Float32 logits of each batch shard, each computed on its device (placed models only)."""
        memory, mask = self._encode_memory(inputs["source"], training)
        y = self._decoder_outputs(inputs["target_in"], training)
        if not self.built:  # the readout's weights live on the first device
            with self.placement.readout_scope():
                self._readout(y[:1], {"memory": memory[:1], "mask": mask[:1]})

        def readout(y, memory, mask):
            return self._readout(y, {"memory": memory, "mask": mask}, training)[0]

        return self.placement.map_shards(readout, y, memory, mask)

    def call(self, inputs, training=False):
        if self.placement is not None:
            return ops.concatenate(self.shard_logits(inputs, training), axis=0)
        encoded = self.encode(inputs["source"], training=training)
        y = self._decoder_outputs(inputs["target_in"], training)
        return self._readout(y, encoded, training)[0]

    def initial_decoder_state(self, encoded, max_length):
        batch = ops.shape(encoded["memory"])[0]
        zeros = ops.zeros((batch, self.units), self.compute_dtype)
        state = {
            f"{part}_{i}": zeros for i in range(len(self.decoder_layers)) for part in ("h", "c")
        }
        state["attention"] = ops.zeros(ops.shape(encoded["mask"]), "float32")
        return state

    def decode_step(self, token_ids, state, encoded):
        with self._on(self.target_embedding):
            x = self.target_embedding(token_ids)
        new_state = {}
        for index, layer in enumerate(self.decoder_layers):
            with self._on(layer):
                h, (h, c) = layer.cell(x, [state[f"h_{index}"], state[f"c_{index}"]])
            new_state[f"h_{index}"], new_state[f"c_{index}"] = h, c
            x = h + x if index >= self.residual_start else h
        logits, weights = self._readout(ops.expand_dims(x, 1), encoded)
        new_state["attention"] = weights[:, 0, :]
        return logits[:, 0, :], new_state

    def activations_per_token(self, length: int) -> int:
        gates = 2 * self.num_layers * 4 * self.units  # the LSTM gates of encoder and decoder
        # additive attention: a tanh vector per (target, source) pair, of which two copies are kept
        pairs = length * (self.attention_units or self.units)
        return gates + pairs * 2 // ACTIVATION_COPIES

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
