"""Tacotron 2 (Shen et al. 2018): characters -> mel spectrogram, with location-sensitive attention.

Encoder: character embedding, 3 convolutions (5 wide, batch norm, ReLU,
dropout) and a bidirectional LSTM. Decoder, once per step of
`reduction_factor` frames: the previous frame through the pre-net (dropout
on at inference too), an attention LSTM fed the pre-net output and the last
context, location-sensitive attention, a decoder LSTM fed the attention
LSTM's output and the new context; a linear projection of [decoder output,
context] gives the frames and the stop-token logit. A 5-convolution post-net
adds a residual. `fit` teacher-forces (inputs `{"text", "mel",
"mel_lengths"}`, targets the mel frames); `compute_loss` adds, in float32,
the mel MSE before and after the post-net over real frames, the stop-token
binary cross-entropy over real steps and a few silent steps after them, and
optionally the guided-attention loss (Tachibana et al. 2018), which makes
attention diagonal within a few hundred steps.
`infer` runs the decoder autoregressively in one compiled loop until every
utterance's stop probability passes `stop_threshold` or `max_decoder_steps`.
This file holds the layers, the encoder, one decoder step and the losses; the
loops over the steps (one per backend) are in `models/tacotron_loops.py`, the
guided-attention loss in `losses.py`.

Example:
    >>> model = keras_s2s.zoo.load("tacotron2_demo")
    >>> model.fit(data.train, epochs=1)
    >>> result = model.infer(["The red dog sees a cat."])    # mels, lengths, alignments
    >>> samples = model.synthesize(["The red dog sees a cat."])[0]   # Griffin-Lim, float32
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from keras_s2s.config import check_count
from keras_s2s.layers.dropout import Dropout
from keras_s2s.layers.recurrent import LSTM
from keras_s2s.layers.tacotron import ConvStack, LocationSensitiveAttention, Prenet
from keras_s2s.losses import guided_attention_loss
from keras_s2s.models.base import FunctionCache, ZooModel, deserialize_assets, serialize_assets
from keras_s2s.models.tacotron_loops import inference_function, keras_cell, teacher_forced


@keras.saving.register_keras_serializable(package="keras_s2s")
class Tacotron2(ZooModel):
    """Args:
    vocab_size: int. Input characters + 1 (0 = padding).
    num_mels: int. Mel bands M.
    embedding_dim, encoder_channels, encoder_kernel, encoder_layers, encoder_units: int. Encoder sizes
        (encoder_units per LSTM direction).
    attention_units, location_filters, location_kernel: int. Location-sensitive attention.
    prenet_units: list[int]. Pre-net layer sizes.
    attention_lstm_units, decoder_lstm_units: int.
    postnet_channels, postnet_kernel, postnet_layers: int.
    reduction_factor: int. Frames per decoder step r.
    dropout: float. Encoder convolutions, pre-net and post-net.
    lstm_dropout: float. On the two decoder LSTMs' outputs.
    guided_attention: float. Weight of the guided-attention loss (0 = off).
    guided_attention_width: float. Its g: how far from the diagonal attention may stray.
    stop_tail: int. Steps of silence after the end that are trained as "stop" too (the data
        pipeline pads every utterance with them), so that a model running past the end stops.
    stop_weight: float. Weight of the "stop" steps against the "go on" steps in the stop loss.
    stop_threshold: float. Stop probability that ends an utterance at inference.
    max_decoder_steps: int. Inference limit in decoder steps.
    vocabulary: CharVocabulary | None. Input characters; saved with the model.
    extractor: FeatureExtractor | None. How the mel targets were made (the vocoder inverts it).
    """

    def __init__(
        self,
        vocab_size: int = 38,
        num_mels: int = 80,
        embedding_dim: int = 512,
        encoder_channels: int = 512,
        encoder_kernel: int = 5,
        encoder_layers: int = 3,
        encoder_units: int = 256,
        attention_units: int = 128,
        location_filters: int = 32,
        location_kernel: int = 31,
        prenet_units: list = [256, 256],  # noqa: B006 (copied)
        attention_lstm_units: int = 1024,
        decoder_lstm_units: int = 1024,
        postnet_channels: int = 512,
        postnet_kernel: int = 5,
        postnet_layers: int = 5,
        reduction_factor: int = 1,
        dropout: float = 0.5,
        lstm_dropout: float = 0.1,
        guided_attention: float = 0.0,
        guided_attention_width: float = 0.2,
        stop_tail: int = 4,
        stop_weight: float = 1.0,
        stop_threshold: float = 0.5,
        max_decoder_steps: int = 1000,
        vocabulary=None,
        extractor=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if vocabulary is not None and vocabulary.vocab_size != vocab_size:
            raise ValueError(
                f"vocab_size={vocab_size} does not match the vocabulary's {vocabulary.vocab_size}"
            )
        if extractor is not None and extractor.feature_size != num_mels:
            raise ValueError(
                f"num_mels={num_mels} does not match the extractor's {extractor.feature_size} bands"
            )
        if reduction_factor < 1:
            raise ValueError(f"reduction_factor must be at least 1, got {reduction_factor}")
        self.settings = dict(
            vocab_size=vocab_size,
            num_mels=num_mels,
            embedding_dim=embedding_dim,
            encoder_channels=encoder_channels,
            encoder_kernel=encoder_kernel,
            encoder_layers=encoder_layers,
            encoder_units=encoder_units,
            attention_units=attention_units,
            location_filters=location_filters,
            location_kernel=location_kernel,
            prenet_units=list(prenet_units),
            attention_lstm_units=attention_lstm_units,
            decoder_lstm_units=decoder_lstm_units,
            postnet_channels=postnet_channels,
            postnet_kernel=postnet_kernel,
            postnet_layers=postnet_layers,
            reduction_factor=reduction_factor,
            dropout=dropout,
            lstm_dropout=lstm_dropout,
            guided_attention=guided_attention,
            guided_attention_width=guided_attention_width,
            stop_tail=stop_tail,
            stop_weight=stop_weight,
            stop_threshold=stop_threshold,
            max_decoder_steps=max_decoder_steps,
        )
        self.num_mels, self.reduction_factor = num_mels, reduction_factor
        self.vocabulary, self.extractor = vocabulary, extractor
        policy = self.dtype_policy
        self.embedding = keras.layers.Embedding(
            vocab_size, embedding_dim, dtype=policy, name="embedding"
        )
        self.encoder_convs = ConvStack(
            encoder_channels,
            encoder_kernel,
            encoder_layers,
            "relu",
            dropout,
            dtype=policy,
            name="encoder_convs",
        )
        self.encoder_lstm = keras.layers.Bidirectional(
            LSTM(encoder_units, return_sequences=True, dtype=policy),
            dtype=policy,
            name="encoder_lstm",
        )
        self.prenet = Prenet(prenet_units, dropout, dtype=policy, name="prenet")
        self.attention_lstm = keras.layers.LSTMCell(
            attention_lstm_units, dtype=policy, name="attention_lstm"
        )
        self.attention = LocationSensitiveAttention(
            attention_units, location_filters, location_kernel, dtype=policy, name="attention"
        )
        self.decoder_lstm = keras.layers.LSTMCell(
            decoder_lstm_units, dtype=policy, name="decoder_lstm"
        )
        self.lstm_dropout = Dropout(lstm_dropout, dtype=policy)
        self.frame_projection = keras.layers.Dense(
            num_mels * reduction_factor, dtype=policy, name="frames"
        )
        self.stop_projection = keras.layers.Dense(1, dtype=policy, name="stop")
        self.postnet = ConvStack(
            postnet_channels,
            postnet_kernel,
            postnet_layers,
            "tanh",
            dropout,
            last_channels=num_mels,
            last_activation="linear",
            dtype=policy,
            name="postnet",
        )
        self.loss_trackers = {
            name: keras.metrics.Mean(name=name)
            for name in ("mel_loss", "postnet_loss", "stop_loss", "attention_loss")
        }
        self._functions = FunctionCache()  # inference, traced once per model; not saved

    # --- building -------------------------------------------------------------------------------

    def build(self, input_shape=None):
        if self.built:
            return
        s = self.settings
        memory_size = 2 * s["encoder_units"]
        self.embedding.build((None, None))
        self.encoder_convs.build((None, None, s["embedding_dim"]))
        self.encoder_lstm.build((None, None, s["encoder_channels"]))
        self.prenet.build((None, self.num_mels))
        self.attention_lstm.build((None, s["prenet_units"][-1] + memory_size))
        self.attention.build(s["attention_lstm_units"], memory_size)
        self.decoder_lstm.build((None, s["attention_lstm_units"] + memory_size))
        self.frame_projection.build((None, None, s["decoder_lstm_units"] + memory_size))
        self.stop_projection.build((None, None, s["decoder_lstm_units"] + memory_size))
        self.postnet.build((None, None, self.num_mels))
        self.built = True

    @property
    def metrics(self):
        return [*super().metrics, *self.loss_trackers.values()]

    # --- encoder and one decoder step -------------------------------------------------------------

    def encode(self, text, training=False):
        """Memory [B, L, 2U] and mask [B, L] of character ids [B, L] (0 = padding)."""
        mask = ops.not_equal(text, 0)
        x = self.encoder_convs(self.embedding(text), training=training, keep=mask[:, :, None])
        return self.encoder_lstm(x, mask=mask, training=training), mask

    def initial_state(self, memory):
        batch, length = ops.shape(memory)[0], ops.shape(memory)[1]
        s, dtype = self.settings, self.compute_dtype
        zeros = lambda size: ops.zeros((batch, size), dtype)  # noqa: E731
        return (
            zeros(s["attention_lstm_units"]),
            zeros(s["attention_lstm_units"]),
            zeros(s["decoder_lstm_units"]),
            zeros(s["decoder_lstm_units"]),
            zeros(2 * s["encoder_units"]),
            ops.zeros((batch, length), "float32"),
            ops.zeros((batch, length), "float32"),
        )

    def decoder_step(
        self, frame_features, state, memory, keys, mask, training=False, cells=None, masks=None
    ):
        """One step: pre-net features [B, P] -> (new state, [decoder output, context] [B, D], weights [B, L]).

        `cells`: the attention and decoder LSTMs as functions (inputs, (h, c)) -> (h, c); default the
        Keras cells (teacher forcing passes `LoopLSTMCell` steps). `masks`: the two LSTM outputs'
        dropout masks for this step, drawn before a scan (default: `lstm_dropout` draws them).
        """
        attention_h, attention_c, decoder_h, decoder_c, context, weights, cumulative = state
        attention_cell, decoder_cell = cells or (
            keras_cell(self.attention_lstm, training),
            keras_cell(self.decoder_lstm, training),
        )
        attention_h, attention_c = attention_cell(
            [frame_features, context], (attention_h, attention_c)
        )
        if masks is None:
            query = self.lstm_dropout(attention_h, training=training)
        else:
            query = attention_h * masks[0]
        context, weights = self.attention(query, keys, memory, weights, cumulative, mask)
        decoder_h, decoder_c = decoder_cell([query, context], (decoder_h, decoder_c))
        if masks is None:
            decoder_out = self.lstm_dropout(decoder_h, training=training)
        else:
            decoder_out = decoder_h * masks[1]
        output = ops.concatenate([decoder_out, context], -1)
        return (
            (
                attention_h,
                attention_c,
                decoder_h,
                decoder_c,
                context,
                weights,
                cumulative + weights,
            ),
            output,
            weights,
        )

    def postnet_residual(self, frames, training=False, keep=None):
        return frames + self.postnet(frames, training=training, keep=keep)

    # --- teacher forcing --------------------------------------------------------------------------

    def call(self, inputs, training=False):
        """Teacher-forced outputs: {"mel", "mel_postnet": [B, T, M], "stop": [B, ceil(T/r)],
        "alignment": [B, ceil(T/r), L]}."""
        memory, mask = self.encode(inputs["text"], training)
        keys = self.attention.keys(memory)
        mel = ops.cast(inputs["mel"], self.compute_dtype)
        batch, frames, r = ops.shape(mel)[0], ops.shape(mel)[1], self.reduction_factor
        steps = (
            frames + r - 1
        ) // r  # the last step may reach past the end: its extra frames are cut off
        # the last frame of the step before
        previous = ops.concatenate(
            [ops.zeros((batch, 1, self.num_mels), mel.dtype), mel[:, r - 1 : (steps - 1) * r : r]],
            axis=1,
        )
        features = ops.transpose(self.prenet(previous, training=training), (1, 0, 2))
        outputs, alignments = teacher_forced(
            self, features, memory, keys, mask, training, steps, batch
        )
        mel_out = ops.reshape(self.frame_projection(outputs), (batch, steps * r, self.num_mels))[
            :, :frames
        ]
        keep = None
        if "mel_lengths" in inputs:
            keep = (
                ops.arange(frames)[None, :] < ops.cast(inputs["mel_lengths"], "int32")[:, None]
            )[:, :, None]
        return {
            "mel": mel_out,
            "mel_postnet": self.postnet_residual(mel_out, training, keep),
            "stop": self.stop_projection(outputs)[..., 0],
            "alignment": alignments,
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Mel MSE before + after the post-net over real frames, stop-token BCE over the real steps and
        `stop_tail` steps of silence after them (the last real step and those are "stop", weighted
        `stop_weight`), and the weighted guided-attention loss, in float32. Padding beyond
        `stop_tail` steps never changes the loss."""
        target = ops.cast(y, "float32")
        lengths = ops.cast(x["mel_lengths"], "int32")
        frames, r = ops.shape(target)[1], self.reduction_factor
        real = ops.cast(ops.arange(frames)[None, :] < lengths[:, None], "float32")[:, :, None]
        count = ops.sum(real) * self.num_mels

        def masked_mse(prediction):
            return ops.sum(ops.square(ops.cast(prediction, "float32") - target) * real) / count

        mel_loss, postnet_loss = masked_mse(y_pred["mel"]), masked_mse(y_pred["mel_postnet"])
        step = ops.arange(ops.shape(y_pred["stop"])[1])[None, :]
        last_step = ((lengths - 1) // r)[:, None]  # the step that holds the last real frame: "stop"
        counted = ops.cast(step <= last_step + self.settings["stop_tail"], "float32")
        stop_target = ops.cast(step >= last_step, "float32")
        weights = counted * (1.0 + (self.settings["stop_weight"] - 1.0) * stop_target)
        stop_losses = ops.binary_crossentropy(
            stop_target, ops.cast(y_pred["stop"], "float32"), from_logits=True
        )
        stop_loss = ops.sum(stop_losses * weights) / ops.sum(counted)
        attention_loss = guided_attention_loss(
            y_pred["alignment"], x["text"], lengths, r, self.settings["guided_attention_width"]
        )
        loss = (
            mel_loss + postnet_loss + stop_loss + self.settings["guided_attention"] * attention_loss
        )
        for name, value in zip(
            self.loss_trackers, (mel_loss, postnet_loss, stop_loss, attention_loss)
        ):
            self.loss_trackers[name].update_state(value)
        if self.losses:
            loss = loss + ops.sum(self.losses)
        return loss

    # --- inference --------------------------------------------------------------------------------

    def infer(
        self, texts: list[str], max_decoder_steps: int | None = None, normalize: bool = True
    ) -> list[dict]:
        """Mel spectrogram of each text, free-running.

        Returns per text {"mel": [T, M] float32 log-mel, "alignment": [T/r, L],
        "stopped": whether the stop token fired before the step limit}.
        """
        from keras_s2s.text.normalization import normalize_text

        if self.vocabulary is None:
            raise ValueError(
                "this model has no vocabulary; load it with zoo.load(..., vocabulary=...)"
            )
        if max_decoder_steps is not None:
            check_count("max_decoder_steps", max_decoder_steps)
        if not self.built:
            self.build()
        spoken = [normalize_text(t) if normalize else t for t in texts]
        empty = [t for t, s in zip(texts, spoken) if not any(c.isalpha() for c in s)]
        if empty:
            raise ValueError(
                f"nothing to say in {empty[0]!r}: the text has no letters after normalization"
            )
        ids = [self.vocabulary.encode(s) for s in spoken]
        batch = np.zeros((len(ids), max(map(len, ids))), np.int32)
        for row, sequence in enumerate(ids):
            batch[row, : len(sequence)] = sequence
        limit = int(max_decoder_steps or self.settings["max_decoder_steps"])
        mel, lengths, alignments = (
            ops.convert_to_numpy(t) for t in inference_function(self)(batch, np.int32(limit))
        )
        r = self.reduction_factor
        return [
            {
                "mel": mel[i, : lengths[i]],
                "alignment": alignments[i, : math.ceil(lengths[i] / r), : len(ids[i])],
                "stopped": bool(lengths[i] < limit * r),
            }
            for i in range(len(ids))
        ]

    def synthesize(
        self, texts: list[str], vocoder=None, batch_size: int = 8, **infer_args
    ) -> list[np.ndarray]:
        """Float32 waveforms of each text at the extractor's rate (default vocoder: Griffin-Lim)."""
        from keras_s2s.decoding.vocoder import GriffinLim

        if vocoder is None:
            if self.extractor is None:
                raise ValueError(
                    "this model has no mel extractor; load it with zoo.load(..., extractor=...)"
                )
            vocoder = GriffinLim(self.extractor)
        check_count("batch_size", batch_size)
        results = []
        for start in range(0, len(texts), batch_size):
            results += [
                vocoder(item["mel"])
                for item in self.infer(texts[start : start + batch_size], **infer_args)
            ]
        return results

    # --- saving -----------------------------------------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update(self.settings)
        return serialize_assets(config, vocabulary=self.vocabulary, extractor=self.extractor)

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_assets(config, ("vocabulary", "extractor")))
