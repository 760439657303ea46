"""Transformer (Vaswani et al. 2017): base and big sizes, cached incremental decoding.

Source, target and output embeddings are one shared matrix when the
vocabulary is joint (`share_embeddings=True`, the default with the zoo's
joint SentencePiece vocabulary); with separate vocabularies only the target
embedding and the output projection are shared. Positions are sinusoidal (default, no
length limit) or learned (`positions="learned"`, up to `max_positions`).
Pre-normalization (`normalize_first=True`) is the default: it trains stably
without a long warmup and at depth, which matters most for short CPU runs;
`normalize_first=False` gives the paper's post-norm.

Example:
    >>> model = Transformer(vocab_size=1000, num_layers=2, d_model=64, num_heads=4, ffn_dim=128)
    >>> logits = model({"source": src_ids, "target_in": tgt_ids})   # [B, T, 1000] float32
"""

from __future__ import annotations

import keras
import keras_hub
from keras import ops

from keras_s2s.layers.dropout import Dropout
from keras_s2s.layers.transformer import (
    Float32LayerNorm,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_s2s.models.seq2seq_lm import Seq2SeqLM, positions_of


@keras.saving.register_keras_serializable(package="keras_s2s")
class Transformer(Seq2SeqLM):
    """Transformer encoder-decoder.

    Args:
        vocab_size: int. Target (or joint) vocabulary size.
        source_vocab_size: int. Separate source vocabulary size (0 = joint).
        num_layers: int. Encoder layers (and decoder layers unless `num_decoder_layers`).
        num_decoder_layers: int. Decoder layers (0 = `num_layers`).
        d_model: int. Model width.
        num_heads: int. Attention heads.
        ffn_dim: int. Inner size of the feed-forward nets.
        dropout: float. Dropout on embeddings, sublayer outputs, attention weights and FFN.
        positions: str. `sinusoidal` or `learned`.
        max_positions: int. Longest sequence with learned positions.
        normalize_first: bool. Pre-norm (True) or post-norm (False).
        share_embeddings: bool. One matrix for source, target and output embeddings.
        tokenizer, decode_max_length: see `Seq2SeqLM`.
    """

    def __init__(
        self,
        vocab_size: int = 32000,
        source_vocab_size: int = 0,
        num_layers: int = 6,
        num_decoder_layers: int = 0,
        d_model: int = 512,
        num_heads: int = 8,
        ffn_dim: int = 2048,
        dropout: float = 0.1,
        positions: str = "sinusoidal",
        max_positions: int = 1024,
        normalize_first: bool = True,
        share_embeddings: bool = True,
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
        if positions not in ("sinusoidal", "learned"):
            raise ValueError(f"positions must be 'sinusoidal' or 'learned', got {positions!r}")
        self.num_layers, self.num_decoder_layers = num_layers, num_decoder_layers
        self.d_model, self.num_heads, self.ffn_dim, self.dropout = (
            d_model,
            num_heads,
            ffn_dim,
            dropout,
        )
        self.positions, self.max_positions = positions, max_positions
        self.normalize_first, self.share_embeddings = normalize_first, share_embeddings
        policy = self.dtype_policy
        self.target_embedding = keras.layers.ReversibleEmbedding(
            vocab_size,
            d_model,
            tie_weights=share_embeddings,
            dtype=policy,
            name="target_embedding",
            embeddings_initializer=keras.initializers.RandomNormal(stddev=d_model**-0.5),
        )
        joint = not source_vocab_size or source_vocab_size == vocab_size
        self.source_embedding = (
            self.target_embedding
            if share_embeddings and joint
            else keras.layers.Embedding(
                source_vocab_size or vocab_size,
                d_model,
                dtype=policy,
                name="source_embedding",
                embeddings_initializer=keras.initializers.RandomNormal(stddev=d_model**-0.5),
            )
        )
        if positions == "learned":
            self.position_encoding = keras_hub.layers.PositionEmbedding(
                max_positions, dtype=policy, name="positions"
            )
        else:  # float32: position angles lose precision in 16-bit types
            self.position_encoding = keras_hub.layers.SinePositionEncoding(
                dtype="float32", name="positions"
            )
        self.dropout_layer = Dropout(dropout, dtype=policy)
        block_args = dict(
            d_model=d_model,
            num_heads=num_heads,
            ffn_dim=ffn_dim,
            dropout=dropout,
            normalize_first=normalize_first,
            dtype=policy,
        )
        self.encoder_blocks = [
            TransformerEncoderBlock(**block_args, name=f"encoder_{i}") for i in range(num_layers)
        ]
        self.decoder_blocks = [
            TransformerDecoderBlock(**block_args, name=f"decoder_{i}")
            for i in range(num_decoder_layers or num_layers)
        ]
        if normalize_first:  # pre-norm stacks end with a normalization
            self.encoder_norm = Float32LayerNorm(epsilon=1e-6, name="encoder_norm")
            self.decoder_norm = Float32LayerNorm(epsilon=1e-6, name="decoder_norm")

    def _embed(self, embedding, ids, positions, training):
        """Scaled token embedding + position encoding, then dropout. positions: [B, T] ints."""
        x = embedding(ids) * ops.cast(self.d_model**0.5, self.compute_dtype)
        x = x + ops.cast(
            self.position_encoding(
                x,
                positions=ops.cast(positions, self.position_encoding.compute_dtype)
                if self.positions == "sinusoidal"
                else positions,
            ),
            x.dtype,
        )
        return self.dropout_layer(x, training=training)

    def encode(self, source_ids, training=False):
        mask = ops.not_equal(source_ids, 0)
        x = self._embed(self.source_embedding, source_ids, positions_of(source_ids), training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=mask, training=training)
        if self.normalize_first:
            x = self.encoder_norm(x)
        encoded = {"mask": mask}
        # cross-attention keys/values, once per sentence
        for i, block in enumerate(self.decoder_blocks):
            encoded[f"keys_{i}"], encoded[f"values_{i}"] = block.cross_attention.project_kv(x)
        return encoded

    def _memory(self, encoded, i):
        return encoded[f"keys_{i}"], encoded[f"values_{i}"]

    def _logits(self, x):
        if self.normalize_first:
            x = self.decoder_norm(x)
        return ops.cast(self.target_embedding(x, reverse=True), "float32")

    def call(self, inputs, training=False):
        encoded = self.encode(inputs["source"], training=training)
        target_in = inputs["target_in"]
        y = self._embed(self.target_embedding, target_in, positions_of(target_in), training)
        for i, block in enumerate(self.decoder_blocks):
            y, _ = block(y, self._memory(encoded, i), encoded["mask"], training=training)
        return self._logits(y)

    def initial_decoder_state(self, encoded, max_length):
        batch = ops.shape(encoded["mask"])[0]
        heads, head_dim = self.num_heads, self.d_model // self.num_heads
        state = {
            "position": ops.zeros((batch,), "int32"),
            "attention": ops.zeros(ops.shape(encoded["mask"]), "float32"),
        }
        for i in range(len(self.decoder_blocks)):
            for part in ("keys", "values"):
                state[f"cache_{part}_{i}"] = ops.zeros(
                    (batch, max_length, heads, head_dim), self.compute_dtype
                )
        return state

    def decode_step(self, token_ids, state, encoded):
        position = state["position"]
        y = self._embed(self.target_embedding, token_ids[:, None], position[:, None], False)
        new_state = {"position": position + 1}
        weights = None
        for i, block in enumerate(self.decoder_blocks):
            cache = (state[f"cache_keys_{i}"], state[f"cache_values_{i}"])
            y, cache, weights = block.step(
                y, cache, position, self._memory(encoded, i), encoded["mask"]
            )
            new_state[f"cache_keys_{i}"], new_state[f"cache_values_{i}"] = cache
        new_state["attention"] = weights[:, 0, :]  # last layer, mean over heads
        return self._logits(y)[:, 0, :], new_state

    def activations_per_token(self, length: int) -> int:
        decoder_layers = self.num_decoder_layers or self.num_layers
        # self-attention in every layer, cross-attention in the decoder's
        attentions = self.num_layers + 2 * decoder_layers
        return (
            attentions * (self.d_model + self.num_heads * length)  # outputs and score rows
            + (self.num_layers + decoder_layers) * self.ffn_dim
        )

    @property
    def max_positions_limit(self):
        return self.max_positions if self.positions == "learned" else None

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "num_decoder_layers": self.num_decoder_layers,
                "d_model": self.d_model,
                "num_heads": self.num_heads,
                "ffn_dim": self.ffn_dim,
                "dropout": self.dropout,
                "positions": self.positions,
                "max_positions": self.max_positions,
                "normalize_first": self.normalize_first,
                "share_embeddings": self.share_embeddings,
            }
        )
        return config
