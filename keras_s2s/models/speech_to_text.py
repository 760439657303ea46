"""`SpeechToText`: the task base of the CTC speech recognizers.

Inputs are `{"features": [B, T, F], "feature_lengths": [B]}`, labels are
character ids [B, L] (0-padded; 0 is also the CTC blank). The model returns
float32 per-frame logits [B, T', V] with T' = ceil(T / time_reduction). The
CTC loss is computed in float32 from the true input and label lengths in
`compute_loss` (the only place that sees the lengths; `fit` stays Keras's).
Greedy and beam-search CTC decoding and `transcribe` live here once.

Example:
    >>> model = keras_s2s.zoo.load("jasper_demo", vocabulary=data.vocabulary, extractor=data.extractor)
    >>> model.fit(data.train, epochs=1)
    >>> model.transcribe(["clip.wav"])
"""

from __future__ import annotations

import itertools

import numpy as np
from keras import ops

from keras_s2s.audio.io import read_audio
from keras_s2s.audio.segments import audible, audio_seconds, pieces_at_pauses, stream_audio
from keras_s2s.backend import compile_with_weights, is_tensorflow, tf
from keras_s2s.config import check_count
from keras_s2s.models.base import FunctionCache, ZooModel, deserialize_assets, serialize_assets
from keras_s2s.padding import round_up


def ctc_loss(labels, logits, logit_lengths):
    """Per-utterance CTC loss [B] of float32 `logits` [B, T, V] (class 0 is the blank) for 0-padded `labels` [B, L].

    TensorFlow's C++ CTC kernel, which computes loss and gradient in one pass
    and needs sparse labels: `keras.ops.ctc_loss` passes dense labels, which
    take TensorFlow's scan-based path, 14x slower on a CPU (578 vs 41 ms
    forward + backward for 32 utterances of 150 frames) and the largest
    element-wise cost of a speech recognizer's step. Same loss, gradients
    equal within 1e-5. An utterance whose transcript cannot fit its frames
    gets loss 0 and no gradient (PyTorch's `zero_infinity`), where the dense
    path returned a huge loss with a meaningless gradient.

    On other backends `keras.ops.ctc_loss` (JAX: a scan XLA compiles) with the
    same rule for transcripts that cannot fit.

    Example:
        >>> ctc_loss(labels, logits, logit_lengths)   # [B] float32
    """
    if not is_tensorflow():
        return _keras_ctc_loss(labels, logits, logit_lengths)
    # a transcript that cannot fit (too long, or too few frames for the blanks its repeated letters
    # need): the kernel would return inf, so it scores a one-label stand-in, multiplied by 0
    fits = frames_needed(labels) <= tf.cast(logit_lengths, tf.int32)
    stand_in = tf.one_hot(tf.zeros_like(labels[:, 0]), tf.shape(labels)[1], dtype=labels.dtype)
    sparse = tf.sparse.from_dense(tf.where(fits[:, None], labels, stand_in))
    # the kernel's blank is the last class: move class 0 there and every label down by one
    logits = tf.concat([logits[:, :, 1:], logits[:, :, :1]], axis=2)
    sparse = tf.SparseTensor(sparse.indices, sparse.values - 1, sparse.dense_shape)
    losses = tf.compat.v1.nn.ctc_loss(
        sparse, logits, logit_lengths, time_major=False, ignore_longer_outputs_than_inputs=True
    )
    return tf.where(fits, losses, 0.0)


def frames_needed(labels):
    """The fewest frames [B] a CTC alignment of 0-padded `labels` [B, L] takes: one per label, plus a
    blank between each pair of equal neighbours."""
    real = ops.not_equal(labels, 0)
    repeats = ops.logical_and(ops.equal(labels[:, 1:], labels[:, :-1]), real[:, 1:])
    return ops.sum(ops.cast(real, "int32"), axis=1) + ops.sum(ops.cast(repeats, "int32"), axis=1)


def _keras_ctc_loss(labels, logits, logit_lengths):
    label_lengths = ops.sum(ops.cast(ops.not_equal(labels, 0), "int32"), axis=1)
    losses = ops.ctc_loss(labels, logits, label_lengths, logit_lengths, mask_index=0)
    # an impossible transcript: loss 0 and no gradient, as TensorFlow's kernel is asked to do
    return ops.where(frames_needed(labels) <= ops.cast(logit_lengths, "int32"), losses, 0.0)


class SpeechToText(ZooModel):
    """Base of CTC models.

    Args:
        vocab_size: int. Output classes including the blank (characters + 1).
        num_features: int. Feature size F.
        vocabulary: CharVocabulary | None. Saved with the model; needed by `transcribe`.
        extractor: FeatureExtractor | None. Saved with the model; needed by `transcribe`.
    """

    time_reduction = 1  # subclasses: how many input frames make one output frame

    def __init__(
        self,
        vocab_size: int = 29,
        num_features: int = 64,
        vocabulary=None,
        extractor=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if vocabulary is not None and vocabulary.vocab_size != vocab_size:
            raise ValueError(
                f"vocab_size={vocab_size} does not match the vocabulary's {vocabulary.vocab_size}"
            )
        if extractor is not None and extractor.feature_size != num_features:
            raise ValueError(
                f"num_features={num_features} does not match the extractor's {extractor.feature_size}"
            )
        self.vocab_size, self.num_features = vocab_size, num_features
        self.vocabulary, self.extractor = vocabulary, extractor
        self._decoders = FunctionCache()  # beam width (and "features") -> tf.function; not saved
        self.default_decoding, self._default_decoder = None, None  # a preset's LM search

    def build(self, input_shape=None):
        if self.built:
            return
        self.call(
            {
                "features": ops.zeros((1, 16 * self.time_reduction, self.num_features)),
                "feature_lengths": ops.convert_to_tensor([16 * self.time_reduction], "int32"),
            },
            training=False,
        )
        self.built = True

    def output_lengths(self, feature_lengths, reduction: int | None = None):
        """Output frames of each utterance: ceil(input frames / time_reduction) (or `reduction`: an
        inner layer's)."""
        reduction = reduction or self.time_reduction
        return (ops.cast(feature_lengths, "int32") + reduction - 1) // reduction

    def frame_mask(self, feature_lengths, frames, dtype, reduction: int | None = None):
        """[B, frames, 1] of 1 at real output frames (of a layer `reduction` input frames a frame;
        default: the output's), 0 at padding."""
        lengths = self.output_lengths(feature_lengths, reduction)
        real = ops.arange(frames)[None, :] < lengths[:, None]
        return ops.cast(real, dtype)[:, :, None]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Mean CTC loss per utterance, in float32, plus any layer losses."""
        logit_lengths = ops.minimum(self.output_lengths(x["feature_lengths"]), ops.shape(y_pred)[1])
        losses = ctc_loss(ops.cast(y, "int32"), ops.cast(y_pred, "float32"), logit_lengths)
        loss = ops.mean(losses)
        if self.losses:
            loss = loss + ops.sum(self.losses)
        return loss

    # --- decoding ---------------------------------------------------------------------------

    def _logits_and_lengths(self, features, lengths):
        """Inference logits [B, T', classes] and each utterance's output frames [B]."""
        logits = self({"features": features, "feature_lengths": lengths}, training=False)
        return logits, ops.minimum(self.output_lengths(lengths), ops.shape(logits)[1])

    def _decoder(self, beam_width: int):
        if beam_width not in self._decoders:

            def decode(features, lengths):
                logits, out_lengths = self._logits_and_lengths(features, lengths)
                strategy = "greedy" if beam_width == 1 else "beam_search"
                decoded, _ = ops.ctc_decode(
                    logits,
                    out_lengths,
                    strategy=strategy,
                    beam_width=beam_width,
                    top_paths=1,
                    mask_index=0,
                )
                return decoded[0]

            self._decoders[beam_width] = compile_with_weights(
                self, decode, input_signature=self._signature()
            )
        return self._decoders[beam_width]

    def _signature(self):
        """TensorFlow's one-trace signature of the decoding functions (None elsewhere)."""
        if not is_tensorflow():
            return None
        return [
            tf.TensorSpec([None, None, self.num_features], tf.float32),
            tf.TensorSpec([None], tf.int32),
        ]

    def _log_probabilities(self):
        if "log_probabilities" not in self._decoders:

            def log_probabilities(features, lengths):
                logits, out_lengths = self._logits_and_lengths(features, lengths)
                return ops.log_softmax(ops.cast(logits, "float32")), out_lengths

            self._decoders["log_probabilities"] = compile_with_weights(
                self, log_probabilities, input_signature=self._signature()
            )
        return self._decoders["log_probabilities"]

    def decode(self, features, feature_lengths, beam_width: int = 1, lm=None) -> list[str]:
        """Text of each utterance of a padded feature batch: greedy, CTC beam search, or with
        `lm` (a `decoding.ctc_lm.LMDecoder`) beam search fused with its n-gram LM."""
        if self.vocabulary is None:
            raise ValueError(
                "this model has no vocabulary; load it with zoo.load(..., vocabulary=...)"
            )
        if not self.built:
            self.build()
        if lm is not None:
            log_probabilities, lengths = self._log_probabilities()(
                np.asarray(features, np.float32), np.asarray(feature_lengths, np.int32)
            )
            return lm.decode(ops.convert_to_numpy(log_probabilities), ops.convert_to_numpy(lengths))
        ids = ops.convert_to_numpy(
            self._decoder(beam_width)(
                np.asarray(features, np.float32), np.asarray(feature_lengths, np.int32)
            )
        )
        return [self.vocabulary.decode(row[row >= 0]) for row in ids]

    def set_default_decoding(self, lm_path, alpha: float = 0.5, beta: float = 1.0,
                             beam_width: int = 32, lexicon: bool = False,
                             oov_penalty: float = -5.0) -> None:  # fmt: skip
        """The decoding `transcribe` uses unless told otherwise: beam search fused with the word LM
        at `lm_path` (a preset sets its own, tuned; `zoo.load(..., weights=PRESET)`)."""
        self.default_decoding = dict(lm_path=str(lm_path), alpha=alpha, beta=beta,
                                     beam_width=beam_width, lexicon=lexicon,
                                     oov_penalty=oov_penalty)  # fmt: skip
        self._default_decoder = None

    def default_decoder(self, **changes):
        """The `LMDecoder` of `default_decoding` (None without one), with `changes` (e.g.
        `beam_width=8`, `lexicon=False`: a lighter search); built once."""
        if self.default_decoding is None:
            return None
        from keras_s2s.decoding.ctc_lm import LMDecoder

        if changes:
            return LMDecoder(self.vocabulary, **{**self.default_decoding, **changes})
        if self._default_decoder is None:
            self._default_decoder = LMDecoder(self.vocabulary, **self.default_decoding)
        return self._default_decoder

    def transcribe(self, audio: list, batch_size: int = 16, beam_width: int | None = None,
                   lm="default", max_seconds: float = 20.0) -> list[str]:  # fmt: skip
        """Text of each audio file path (or float32 sample array at the extractor's rate).

        Args:
            beam_width: int | None. CTC beam search without an LM (1: greedy, the default when
                the model has no default decoding).
            lm: "default" | LMDecoder | None. "default": the model's `default_decoding` (a
                preset's tuned LM search) unless `beam_width` is given; an `LMDecoder`: beam
                search fused with its LM (its own beam width); None: no LM.
            max_seconds: float. Longer recordings are cut at pauses into pieces of at most this
                long, transcribed in turn and joined: memory stays that of a few pieces.
        """
        if self.extractor is None:
            raise ValueError(
                "this model has no feature extractor; load it with zoo.load(..., extractor=...)"
            )
        if lm == "default":
            lm = self.default_decoder() if beam_width is None else None
        beam_width = 1 if beam_width is None else beam_width
        check_count("beam_width", beam_width)
        long = {i for i, item in enumerate(audio) if self._longer_than(item, max_seconds)}
        short = [item for i, item in enumerate(audio) if i not in long]
        texts = iter(self._transcribe_pieces(short, batch_size, beam_width, lm))
        results = []
        for i, item in enumerate(audio):
            if i not in long:
                results.append(next(texts))
                continue
            rate = self.extractor.sample_rate
            blocks = [item] if isinstance(item, np.ndarray) else stream_audio(item, rate)
            pieces = filter(audible, pieces_at_pauses(blocks, rate, max_seconds))
            said = self._transcribe_pieces(pieces, batch_size, beam_width, lm)
            results.append(" ".join(text for text in said if text))
        return results

    def _longer_than(self, item, seconds: float) -> bool:
        if isinstance(item, np.ndarray):
            return len(item) > seconds * self.extractor.sample_rate
        return audio_seconds(item) > seconds

    def _transcribe_pieces(self, audio, batch_size: int, beam_width: int, lm) -> list[str]:
        """Text of each item of an iterable of paths or sample arrays, `batch_size` at a time."""
        results = []
        for batch, lengths in self._feature_batches(audio, batch_size):
            results += self.decode(batch, lengths, beam_width, lm)
        return results

    def log_probabilities(self, audio: list, batch_size: int = 16) -> list[np.ndarray]:
        """Per-frame CTC log-probabilities [frames, classes] of each audio file path (or sample
        array): compute once, then decode them many ways, e.g. to tune an LM's weights.

        Example:
            >>> frames = model.log_probabilities(["a.wav", "b.wav"])
            >>> texts = [LMDecoder(model.vocabulary, "lm.arpa", alpha=0.3).decode_one(f) for f in frames]
        """
        if not self.built:
            self.build()
        rows = []
        for batch, lengths in self._feature_batches(audio, batch_size):
            log_probabilities, out_lengths = self._log_probabilities()(batch, lengths)
            rows += [
                row[:n]
                for row, n in zip(
                    ops.convert_to_numpy(log_probabilities), ops.convert_to_numpy(out_lengths)
                )
            ]
        return rows

    def _feature_batches(self, audio: list, batch_size: int):
        """Padded feature batches [B, T, F] and their lengths, `batch_size` items at a time."""
        if self.extractor is None:
            raise ValueError(
                "this model has no feature extractor; load it with zoo.load(..., extractor=...)"
            )
        check_count("batch_size", batch_size)
        featurize = self.extractor.numpy_features  # other backends: NumPy
        if is_tensorflow():  # traced once: eager tf.signal is ~4x slower per utterance
            if "features" not in self._decoders:
                self._decoders["features"] = tf.function(
                    self.extractor.__call__, input_signature=[tf.TensorSpec([None], tf.float32)]
                )
            traced = self._decoders["features"]

            def featurize(samples):
                return traced(tf.constant(samples, tf.float32)).numpy()

        items = iter(audio)
        while chunk := list(itertools.islice(items, batch_size)):
            feats = []
            for item in chunk:
                samples = (
                    item
                    if isinstance(item, np.ndarray)
                    else read_audio(item, self.extractor.sample_rate)
                )
                feats.append(featurize(np.asarray(samples, np.float32)))
            lengths = np.array([len(f) for f in feats], np.int32)
            width = round_up(lengths.max())
            batch = np.zeros((len(feats), width, self.num_features), np.float32)
            for row, f in enumerate(feats):
                batch[row, : len(f)] = f
            yield batch, lengths

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_size": self.vocab_size, "num_features": self.num_features})
        return serialize_assets(config, vocabulary=self.vocabulary, extractor=self.extractor)

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_assets(config, ("vocabulary", "extractor")))
