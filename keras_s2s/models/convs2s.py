"""ConvS2S (Gehring et al. 2017): convolutional encoder-decoder with multi-step attention.

Encoder and decoder are stacks of weight-normalized 1-D convolutions with
gated linear units and scaled residual connections ((x + r) * sqrt(0.5)),
over token + learned position embeddings. Decoder convolutions are causal
(left-padded). Every decoder layer attends over the encoder output z
(keys) and z + e (values, e = source embeddings). Decoding runs one step at
a time with a buffer of the last `kernel_size - 1` inputs per decoder layer.

Default sizes are fairseq's `fconv_wmt_en_de` (Gehring et al.'s WMT'14
En-De model): 9 layers of 512 channels, 4 of 1024, 2 of 2048 (kernel 1),
embeddings of 768.

Example:
    >>> model = ConvS2S(vocab_size=1000, embedding_dim=64, channels=[64, 64], kernel_sizes=[3, 3])
    >>> logits = model({"source": src_ids, "target_in": tgt_ids})   # [B, T, 1000] float32
"""

from __future__ import annotations

import math

import keras
import keras_hub
from keras import ops

from keras_s2s.layers.attention import masked_softmax
from keras_s2s.layers.convolution import WeightNormConv1D, WeightNormDense
from keras_s2s.layers.dropout import Dropout
from keras_s2s.models.seq2seq_lm import Seq2SeqLM, positions_of

SQRT_HALF = math.sqrt(0.5)


def _unshareable(vocab_size, source_vocab_size, embedding_dim, out_embedding_dim) -> str:
    """Why one matrix cannot serve as source, target and output embedding ("" when it can)."""
    if source_vocab_size not in (0, vocab_size):
        return f"separate vocabularies ({source_vocab_size} and {vocab_size} pieces)"
    if (out_embedding_dim or embedding_dim) != embedding_dim:
        return f"out_embedding_dim {out_embedding_dim}, embedding_dim {embedding_dim}"
    return ""


@keras.saving.register_keras_serializable(package="keras_s2s")
class ConvS2S(Seq2SeqLM):
    """Convolutional sequence-to-sequence model.

    Args:
        vocab_size: int. Target (or joint) vocabulary size.
        source_vocab_size: int. Separate source vocabulary size (0 = joint).
        embedding_dim: int. Token and position embedding size.
        channels: list[int]. Channels of each convolutional layer (encoder and decoder).
        kernel_sizes: list[int]. Kernel width of each layer (odd; same length as `channels`).
        out_embedding_dim: int. Size before the output projection (0 = `embedding_dim`).
        dropout: float. Dropout on embeddings and before every convolution and projection.
        max_positions: int. Longest source or target sequence.
        share_embeddings: bool. One matrix for source, target and output embeddings (a joint
            vocabulary and `out_embedding_dim` equal to `embedding_dim`): 40% fewer parameters in
            `convs2s_demo` with 8,000 pieces.
        tokenizer, decode_max_length: see `Seq2SeqLM`.
    """

    def __init__(
        self,
        vocab_size: int = 32000,
        source_vocab_size: int = 0,
        embedding_dim: int = 768,
        channels: list = [512] * 9 + [1024] * 4 + [2048] * 2,  # noqa: B006 (read-only default, card-friendly)
        kernel_sizes: list = [3] * 13 + [1] * 2,  # noqa: B006
        out_embedding_dim: int = 512,
        dropout: float = 0.1,
        max_positions: int = 1024,
        share_embeddings: bool = False,
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
        channels, kernel_sizes = [int(c) for c in channels], [int(k) for k in kernel_sizes]
        if not channels or len(channels) != len(kernel_sizes):
            raise ValueError(
                f"channels ({len(channels)} layers) and kernel_sizes ({len(kernel_sizes)}) "
                "must be non-empty lists of the same length"
            )
        self.embedding_dim, self.channels, self.kernel_sizes = embedding_dim, channels, kernel_sizes
        self.out_embedding_dim, self.dropout, self.max_positions = (
            out_embedding_dim,
            dropout,
            max_positions,
        )
        self.share_embeddings = bool(share_embeddings)
        unshareable = self.share_embeddings and _unshareable(
            vocab_size, source_vocab_size, embedding_dim, out_embedding_dim
        )
        if unshareable:
            raise ValueError(
                "share_embeddings needs a joint vocabulary and out_embedding_dim equal to "
                f"embedding_dim; this model has {unshareable}: set share_embeddings "
                "false (--set share_embeddings=false)"
            )
        policy = self.dtype_policy
        embed_init = keras.initializers.RandomNormal(stddev=0.1)

        def embedding(prefix, size):
            settings = dict(
                embeddings_initializer=embed_init, dtype=policy, name=f"{prefix}_embedding"
            )
            if self.share_embeddings:  # also the output projection (`reverse=True`)
                return keras.layers.ReversibleEmbedding(size, embedding_dim, **settings)
            return keras.layers.Embedding(size, embedding_dim, **settings)

        def positions(prefix):
            return keras_hub.layers.PositionEmbedding(
                max_positions, initializer=embed_init, dtype=policy, name=f"{prefix}_positions"
            )

        def stack(prefix, causal):
            convs, projections, widths = [], [], [channels[0]] + channels
            for i, (width, kernel) in enumerate(zip(channels, kernel_sizes)):
                convs.append(
                    WeightNormConv1D(
                        2 * width,
                        kernel,
                        causal=causal,
                        dropout=dropout,
                        dtype=policy,
                        name=f"{prefix}_conv_{i}",
                    )
                )
                projections.append(
                    WeightNormDense(width, dtype=policy, name=f"{prefix}_residual_{i}")
                    if widths[i] != width
                    else None
                )
            return convs, projections

        self.source_embedding = embedding("source", source_vocab_size or vocab_size)
        self.source_positions = positions("source")
        self.target_embedding = (
            self.source_embedding if self.share_embeddings else embedding("target", vocab_size)
        )
        self.target_positions = positions("target")
        self.encoder_in = WeightNormDense(
            channels[0], dropout=dropout, dtype=policy, name="encoder_in"
        )
        self.encoder_convs, self.encoder_residuals = stack("encoder", causal=False)
        self.encoder_out = WeightNormDense(embedding_dim, dtype=policy, name="encoder_out")
        self.decoder_in = WeightNormDense(
            channels[0], dropout=dropout, dtype=policy, name="decoder_in"
        )
        self.decoder_convs, self.decoder_residuals = stack("decoder", causal=True)
        self.attention_in = [
            WeightNormDense(embedding_dim, dtype=policy, name=f"attention_in_{i}")
            for i in range(len(channels))
        ]
        self.attention_out = [
            WeightNormDense(width, dtype=policy, name=f"attention_out_{i}")
            for i, width in enumerate(channels)
        ]
        self.decoder_out = WeightNormDense(
            out_embedding_dim or embedding_dim, dtype=policy, name="decoder_out"
        )
        self.output_projection = (
            None
            if self.share_embeddings
            else WeightNormDense(
                vocab_size, dropout=dropout, dtype=policy, name="output_projection"
            )
        )
        self.dropout_layer = Dropout(dropout, dtype=policy)

    # --- pieces shared by training and step-wise decoding -----------------------------------

    def _embed(self, embedding, positions_layer, ids, positions, training):
        tokens = embedding(ids)
        x = tokens + positions_layer(tokens, positions=positions)
        return self.dropout_layer(x, training=training)

    def _attend(self, i, x, target_embedded, encoded):
        """Multi-step attention of decoder layer i: returns (x + context) * sqrt(.5) and weights [B, T, S]."""
        query = (self.attention_in[i](x) + target_embedded) * ops.cast(SQRT_HALF, x.dtype)
        scores = ops.einsum("bte,bse->bts", query, encoded["keys"])
        weights = masked_softmax(scores, ops.expand_dims(encoded["mask"], 1))
        context = ops.einsum("bts,bse->bte", ops.cast(weights, x.dtype), encoded["values"])
        context = context * ops.cast(encoded["scale"], x.dtype)[:, None, None]
        return (x + self.attention_out[i](context)) * ops.cast(SQRT_HALF, x.dtype), weights

    def _glu_residual(self, i, conv_out, residual, residuals):
        if residuals[i] is not None:
            residual = residuals[i](residual)
        return (ops.glu(conv_out, axis=-1) + residual) * ops.cast(SQRT_HALF, conv_out.dtype)

    # --- Seq2SeqLM interface -------------------------------------------------------------------

    def encode(self, source_ids, training=False):
        mask = ops.not_equal(source_ids, 0)
        keep = ops.cast(mask, self.compute_dtype)[..., None]
        embedded = self._embed(
            self.source_embedding,
            self.source_positions,
            source_ids,
            positions_of(source_ids),
            training,
        )
        x = self.encoder_in(embedded)
        for i, conv in enumerate(self.encoder_convs):
            residual = x
            # padding never leaks into real positions
            x = conv(self.dropout_layer(x, training=training) * keep)
            x = self._glu_residual(i, x, residual, self.encoder_residuals)
        keys = self.encoder_out(x) * keep
        lengths = ops.sum(ops.cast(mask, "float32"), axis=1)
        # s * sqrt(1/s) of the paper
        return {
            "keys": keys,
            "values": (keys + embedded) * ops.cast(SQRT_HALF, keys.dtype),
            "mask": mask,
            "scale": ops.sqrt(ops.maximum(lengths, 1.0)),
        }

    def _readout(self, x, training=False):
        x = self.dropout_layer(self.decoder_out(x), training=training)
        if self.share_embeddings:
            return ops.cast(self.target_embedding(x, reverse=True), "float32")
        return ops.cast(self.output_projection(x), "float32")

    def call(self, inputs, training=False):
        encoded = self.encode(inputs["source"], training=training)
        target_in = inputs["target_in"]
        embedded = self._embed(
            self.target_embedding,
            self.target_positions,
            target_in,
            positions_of(target_in),
            training,
        )
        x = self.decoder_in(embedded)
        for i, conv in enumerate(self.decoder_convs):
            residual = x
            x = self._glu_residual(
                i, conv(self.dropout_layer(x, training=training)), residual, self.decoder_residuals
            )
            x, _ = self._attend(i, x, embedded, encoded)
        return self._readout(x, training)

    def initial_decoder_state(self, encoded, max_length):
        batch = ops.shape(encoded["mask"])[0]
        state = {
            "position": ops.zeros((batch,), "int32"),
            "attention": ops.zeros(ops.shape(encoded["mask"]), "float32"),
        }
        widths = [self.channels[0]] + self.channels
        # the last kernel-1 inputs of each causal convolution
        for i, kernel in enumerate(self.kernel_sizes):
            state[f"buffer_{i}"] = ops.zeros((batch, kernel - 1, widths[i]), self.compute_dtype)
        return state

    def decode_step(self, token_ids, state, encoded):
        position = state["position"]
        embedded = self._embed(
            self.target_embedding,
            self.target_positions,
            token_ids[:, None],
            position[:, None],
            False,
        )
        x = self.decoder_in(embedded)
        new_state = {"position": position + 1}
        total_weights = 0.0
        for i, conv in enumerate(self.decoder_convs):
            window = ops.concatenate([state[f"buffer_{i}"], x], axis=1)
            new_state[f"buffer_{i}"] = window[:, 1:]
            x = self._glu_residual(i, conv.step(window)[:, None, :], x, self.decoder_residuals)
            x, weights = self._attend(i, x, embedded, encoded)
            total_weights += weights[:, 0, :]
        new_state["attention"] = total_weights / len(self.decoder_convs)
        return self._readout(x)[:, 0, :], new_state

    def activations_per_token(self, length: int) -> int:
        glu = 2 * sum(self.channels)  # each conv's output before its gated linear unit
        # encoder and decoder; a score row per decoder layer
        return 2 * glu + len(self.channels) * length

    @property
    def max_positions_limit(self):
        return self.max_positions

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embedding_dim": self.embedding_dim,
                "channels": list(self.channels),
                "kernel_sizes": list(self.kernel_sizes),
                "out_embedding_dim": self.out_embedding_dim,
                "dropout": self.dropout,
                "max_positions": self.max_positions,
                "share_embeddings": self.share_embeddings,
            }
        )
        return config
