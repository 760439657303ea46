"""`Seq2SeqLM`: the task base of the translation models.

Training is teacher-forced through plain `fit()`: inputs are
`{"source": ids [B,S], "target_in": ids [B,T]}` (0 = padding; target_in
starts with BOS), labels are target ids ending with EOS. Decoding lives here
once for every architecture: a subclass provides `encode`,
`initial_decoder_state` and `decode_step`.

Example:
    >>> model = keras_s2s.zoo.load("gnmt", tokenizer=data.tokenizer, num_layers=2, units=128)
    >>> model.fit(data.train, epochs=1)
    >>> model.translate(["the dog sees a cat"])
"""

from __future__ import annotations

import logging

import numpy as np
from keras import ops

from keras_s2s import backend
from keras_s2s.config import LENGTH_PENALTY, check_count
from keras_s2s.decoding.beam_search import beam_search, greedy_search, length_penalty
from keras_s2s.models.base import FunctionCache, ZooModel, deserialize_assets, serialize_assets
from keras_s2s.padding import round_up
from keras_s2s.token_ids import BOS_ID, EOS_ID, PAD_ID

# copies of each layer output a float32 training step holds (outputs, masks, gradients): fitted to
# peak memory measured on the three demo translation cards at lengths 64 and 256
ACTIVATION_COPIES = 3

log = logging.getLogger("keras_s2s")
# the most source tokens (EOS included) decoded at once by a model whose positions do not bound it:
# attention memory grows with the source (a 1 MB line asked JAX for 100 TB); longer is cut, by line
MAX_SOURCE_TOKENS = 1024


def positions_of(ids):
    """Position indices [B, T] (0, 1, ...) of a batch of ids [B, T]."""
    return ops.broadcast_to(ops.arange(ops.shape(ids)[1])[None, :], ops.shape(ids))


class Seq2SeqLM(ZooModel):
    """Base of encoder-decoder language models with greedy and beam-search decoding.

    Args:
        vocab_size: int. Size of the target (or joint) vocabulary.
        source_vocab_size: int. Size of a separate source vocabulary (0 = joint).
        tokenizer: SubwordTokenizer | None. Saved with the model; needed by
            `translate`.
        decode_max_length: int. Longest output `generate` produces by default.
    """

    def __init__(
        self,
        vocab_size: int = 8000,
        source_vocab_size: int = 0,
        tokenizer=None,
        decode_max_length: int = 128,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if tokenizer is not None and tokenizer.vocab_size != vocab_size:
            raise ValueError(
                f"vocab_size={vocab_size} does not match the tokenizer's {tokenizer.vocab_size} pieces"
            )
        if tokenizer is not None and tokenizer.source_vocab_size != (
            source_vocab_size or vocab_size
        ):
            raise ValueError(
                f"source_vocab_size={source_vocab_size or vocab_size} does not match the tokenizer's "
                f"{tokenizer.source_vocab_size} source pieces"
            )
        self.vocab_size = vocab_size
        self.source_vocab_size = source_vocab_size  # 0: the vocabulary is joint
        self.tokenizer = tokenizer
        self.decode_max_length = decode_max_length
        # (beam_width, alpha, beta) -> tf.function; not saved with the model
        self._decoders = FunctionCache()
        # what `translate` uses where its caller gives no beam width or length penalty: a preset's
        # tuned search (its metadata's `decoding`, keras_s2s.presets); not saved with the model
        self.default_decoding = {}

    # --- subclass interface ---------------------------------------------------------------

    def encode(self, source_ids, training=False):
        """Encoder outputs: a dict of tensors [B, ...] that `decode_step` reads."""
        raise NotImplementedError

    def initial_decoder_state(self, encoded, max_length):
        """Decoder state before the first step: a dict of tensors [B, ...].

        `max_length` (a scalar tensor) bounds the number of steps, for
        preallocated caches. The state may carry `"attention"` [B, S], the
        last step's alignment (float32), for the coverage penalty.
        """
        raise NotImplementedError

    def decode_step(self, token_ids, state, encoded):
        """One step: ids [B] -> (float32 logits [B, V], new state)."""
        raise NotImplementedError

    @property
    def max_positions_limit(self) -> int | None:
        """Longest source or output sequence the model can represent (None = no limit)."""
        return None

    @property
    def source_limit(self) -> int:
        """Most source tokens (EOS included) a decode reads: the model's positions, else
        `MAX_SOURCE_TOKENS`."""
        return self.max_positions_limit or MAX_SOURCE_TOKENS

    def activations_per_token(self, length: int) -> int | None:
        """Floats a training step keeps per target token of a batch `length` long, before the output
        layer (widths of the layers' outputs, attention rows included); None if not estimated."""
        return None

    def training_step_bytes(self, rows: int, length: int) -> int | None:
        """About how much memory one float32 training step on a [rows, length] batch takes: its
        activations (kept for the gradients; within a factor of 2 of what TensorFlow on a CPU
        measured, docs/reliability.md) and the weights with Adam's two slots.

        Example:
            >>> model.training_step_bytes(96, 64) / 2**30  # transformer_demo
            0.97
        """
        per_token = self.activations_per_token(length)
        if per_token is None:
            return None
        kept = ACTIVATION_COPIES * (per_token + self.vocab_size)  # + the logits
        return 4 * (rows * length * kept + 4 * self.count_params())

    # --- building and config --------------------------------------------------------------

    def build(self, input_shape=None):
        if self.built:
            return
        length = min(8, self.max_positions_limit or 8)
        dummy = {
            "source": ops.ones((1, length), "int32"),
            "target_in": ops.ones((1, length), "int32"),
        }
        self.call(dummy, training=False)  # builds every sublayer
        self.built = True

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "source_vocab_size": self.source_vocab_size,
                "decode_max_length": self.decode_max_length,
            }
        )
        return serialize_assets(config, tokenizer=self.tokenizer)

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_assets(config, ("tokenizer",)))

    # --- decoding -------------------------------------------------------------------------

    def score(self, source_ids, output_ids):
        """Teacher-forced log-probability [B] and length [B] of each output row, up to and including EOS."""
        output_ids = ops.cast(output_ids, "int32")
        bos = ops.full((ops.shape(output_ids)[0], 1), BOS_ID, "int32")
        target_in = ops.concatenate([bos, output_ids[:, :-1]], axis=1)
        logits = self({"source": source_ids, "target_in": target_in}, training=False)
        log_probs = ops.log_softmax(ops.cast(logits, "float32"))
        token_log_probs = ops.take_along_axis(log_probs, output_ids[:, :, None], axis=2)[:, :, 0]
        is_eos = ops.cast(ops.equal(output_ids, EOS_ID), "int32")
        before = ops.cumsum(is_eos, axis=1) - is_eos  # EOS seen before this position
        counted = ops.cast(ops.equal(before, 0), "float32")
        return ops.sum(token_log_probs * counted, axis=1), ops.cast(
            ops.sum(counted, axis=1), "int32"
        )

    def _beam_or_greedy(
        self,
        source_ids,
        limits,
        beam_width: int,
        alpha: float,
        beta: float,
        max_length=None,
        loop_guard: bool = True,
    ):
        """Beam search; without a coverage penalty, keeps the greedy hypothesis where it scores higher."""
        ids, log_probs, lengths = beam_search(
            self, source_ids, beam_width, limits, alpha, beta, max_length, loop_guard
        )
        if beta:  # the coverage-penalized objective is not the model's own: no greedy fallback
            return ids
        greedy = greedy_search(self, source_ids, limits, max_length, loop_guard)
        greedy_log_probs, greedy_lengths = self.score(source_ids, greedy)
        greedy_score = greedy_log_probs / length_penalty(greedy_lengths, alpha)
        better = greedy_score > log_probs / length_penalty(lengths, alpha)
        return ops.where(better[:, None], greedy, ids)

    def output_limits(
        self,
        source_ids,
        max_length: int | None = None,
        max_length_ratio: float | None = None,
        max_length_offset: int = 10,
    ):
        """Most output tokens (EOS included) for each source row [B]: `ratio * source tokens + offset`
        (None: no ratio), never more than `max_length` (default `decode_max_length`) or `max_positions`."""
        cap = int(max_length or self.decode_max_length)
        if self.max_positions_limit is not None:
            cap = min(cap, self.max_positions_limit)
        lengths = ops.sum(ops.cast(ops.not_equal(source_ids, PAD_ID), "int32"), axis=1)
        limits = ops.full(ops.shape(lengths), cap, "int32")
        if max_length_ratio is not None:
            by_ratio = ops.cast(ops.ceil(max_length_ratio * ops.cast(lengths, "float32")), "int32")
            limits = ops.minimum(limits, by_ratio + max_length_offset)
        return ops.maximum(limits, 1)

    def decode_ids(
        self,
        source_ids,
        limits,
        beam_width: int = 1,
        length_penalty: float = 0.0,
        coverage_penalty: float = 0.0,
        max_length=None,
        loop_guard: bool = True,
    ):
        """Decode a batch inside a compiled function (a `tf.function`, a SavedModel, `jax.jit`): source
        ids [B, S] and output limits [B] (`output_limits`) -> output ids [B, L], EOS then 0s, with
        L = `max_length` (a Python int: JAX needs one) or max(limits). `generate` wraps it for NumPy.
        `loop_guard`: no span emitted a third time in a row (`keras_s2s.decoding.loops`)."""
        if beam_width == 1:
            return greedy_search(self, source_ids, limits, max_length, loop_guard)
        return self._beam_or_greedy(
            source_ids,
            limits,
            beam_width,
            float(length_penalty),
            float(coverage_penalty),
            max_length,
            loop_guard,
        )

    def _decoder(self, beam_width: int, alpha: float, beta: float, loop_guard: bool):
        key = (beam_width, alpha, beta, loop_guard)
        if key not in self._decoders:

            def fn(source_ids, limits, max_length=None):
                return self.decode_ids(
                    source_ids, limits, beam_width, alpha, beta, max_length, loop_guard
                )

            signature = None
            if backend.is_tensorflow():  # one trace for all shapes
                tf = backend.tf
                signature = [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.int32)]
            self._decoders[key] = backend.compile_with_weights(
                self, fn, input_signature=signature, static_argnames=("max_length",)
            )
        return self._decoders[key]

    def generate(
        self,
        source_ids,
        max_length: int | None = None,
        beam_width: int = 1,
        length_penalty: float = 0.0,
        coverage_penalty: float = 0.0,
        max_length_ratio: float | None = None,
        max_length_offset: int = 10,
        loop_guard: bool = True,
    ) -> np.ndarray:
        """Decode a padded batch of source ids; returns ids [B, L] (EOS, then 0s).

        Args:
            source_ids: int array [B, S], 0-padded, each row ending with EOS.
            max_length: int | None. Most output tokens, EOS included (default `decode_max_length`).
            beam_width: int. 1 = greedy; more = beam search.
            length_penalty: float. GNMT length-penalty alpha for beam search.
            coverage_penalty: float. GNMT coverage-penalty beta for beam search (0 = off).
            max_length_ratio, max_length_offset: a sentence of n source tokens
                gets at most `ratio * n + offset` output tokens (capped by
                `max_length`); None = `max_length` for every sentence.
            loop_guard: bool. No span of 2-12 tokens a third time in a row unless the
                source repeats one so (`keras_s2s.decoding.loops`); False decodes unguarded.

        Example:
            >>> model.generate(ids, beam_width=4, length_penalty=0.6, max_length_ratio=2.0)
        """
        if beam_width < 1:
            raise ValueError(f"beam_width must be >= 1, got {beam_width}")
        if coverage_penalty and beam_width == 1:
            raise ValueError("coverage_penalty needs beam search (beam_width > 1)")
        if not self.built:
            self.build()  # variables are created eagerly, never inside the decoding tf.function
        source_ids = np.asarray(source_ids, np.int32)
        limit = self.source_limit
        if source_ids.shape[1] > limit and (source_ids[:, limit:] != PAD_ID).any():
            raise ValueError(
                f"a source sentence has more than {limit} tokens, the most this model decodes at "
                f"once ({_limit_reason(self)}); split or shorten it"
            )
        source_ids = source_ids[:, :limit]
        limits = ops.convert_to_numpy(
            self.output_limits(source_ids, max_length, max_length_ratio, max_length_offset)
        )
        decoder = self._decoder(
            beam_width, float(length_penalty), float(coverage_penalty), bool(loop_guard)
        )
        longest = int(limits.max())
        if backend.is_tensorflow():
            ids = decoder(source_ids, limits)
        else:  # a static output width, rounded up so that few widths are compiled
            ids = decoder(source_ids, limits, max_length=round_up(longest))
        return ops.convert_to_numpy(ids)[:, :longest]

    def translate(
        self,
        texts: list[str],
        batch_size: int = 64,
        max_length: int | None = None,
        beam_width: int | None = None,
        length_penalty: float | None = None,
        coverage_penalty: float = 0.0,
        max_length_ratio: float = 2.0,
        max_length_offset: int = 10,
        progress=None,
        first_line: int = 1,
        loop_guard: bool = True,
    ) -> list[str]:
        """Translate raw sentences to detokenized text (greedy, or beam search if beam_width > 1).

        `beam_width` and `length_penalty` left None are the model's `default_decoding` (a
        preset's tuned search, e.g. beam 4), else greedy and `LENGTH_PENALTY`.

        Each sentence gets at most `max_length_ratio * source tokens + max_length_offset`
        output tokens (and never more than `max_length`). A blank sentence stays
        blank; one longer than the model reads (`source_limit`: its positions, else
        `MAX_SOURCE_TOKENS`) is cut to fit, with a warning that names its line
        (`first_line` is the line of `texts[0]`).
        `progress(n)` is called after each batch with the number of sentences done.

        Example:
            >>> model.translate(["the dog sees a cat", ""], beam_width=4)
            ['der hund sieht eine katze', '']
        """
        defaults = {"beam_width": 1, "length_penalty": LENGTH_PENALTY, **self.default_decoding}
        beam_width = defaults["beam_width"] if beam_width is None else beam_width
        length_penalty = defaults["length_penalty"] if length_penalty is None else length_penalty
        check_count("batch_size", batch_size), check_count("beam_width", beam_width)
        if self.tokenizer is None:
            raise ValueError(
                "this model has no tokenizer; load it with zoo.load(..., tokenizer=...)"
            )
        texts = list(texts)
        results: list[str] = [""] * len(texts)
        filled = [i for i in range(len(texts)) if texts[i].strip()]
        order = sorted(filled, key=lambda i: len(texts[i]))  # similar lengths per batch
        limit = self.source_limit
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            ids = [
                row + [EOS_ID] for row in self.tokenizer.source.tokenize([texts[i] for i in chunk])
            ]
            for row, i in enumerate(chunk):
                if len(ids[row]) > limit:
                    log.warning(
                        "line %d (%r...) has %d tokens; this model reads at most %d (%s): "
                        "translating its first %d",
                        first_line + i,
                        texts[i][:40],
                        len(ids[row]),
                        limit,
                        _limit_reason(self),
                        limit - 1,
                    )
                    ids[row] = ids[row][: limit - 1] + [EOS_ID]
            width = round_up(max(len(r) for r in ids))
            batch = np.zeros((len(ids), width), np.int32)
            for row, seq in enumerate(ids):
                batch[row, : len(seq)] = seq
            ids = self.generate(
                batch,
                max_length,
                beam_width=beam_width,
                length_penalty=length_penalty,
                coverage_penalty=coverage_penalty,
                max_length_ratio=max_length_ratio,
                max_length_offset=max_length_offset,
                loop_guard=loop_guard,
            )
            for i, text in zip(chunk, self.tokenizer.target.detokenize(ids)):
                results[i] = text
            if progress is not None:
                progress(len(chunk))
        return results


def _limit_reason(model) -> str:
    if model.max_positions_limit:
        return "the positions its embeddings represent, max_positions"
    return f"keras_s2s.models.seq2seq_lm.MAX_SOURCE_TOKENS, {MAX_SOURCE_TOKENS:,}"
