"""DeepSpeech2 (Amodei et al. 2016), as in OpenSeq2Seq's `ds2_large`.

Two 2-D convolutions over (time, frequency) with batch norm and ReLU (the
first strides time by 2), bidirectional recurrent layers (GRU or LSTM) over
the flattened frequency x channels axis, a fully connected ReLU layer and the
output layer. Padded frames are masked in the recurrent layers.

Example:
    >>> model = DeepSpeech2(vocab_size=29, num_features=64, num_rnn_layers=2, rnn_units=64, fc_units=64)
    >>> logits = model({"features": x, "feature_lengths": lengths})     # [B, ceil(T / 2), 29] float32
"""

from __future__ import annotations

import keras
from keras import ops

from keras_s2s.layers.dropout import Dropout
from keras_s2s.layers.recurrent import GRU, LSTM
from keras_s2s.layers.strided_conv import Conv2D
from keras_s2s.models.speech_to_text import SpeechToText


@keras.saving.register_keras_serializable(package="keras_s2s")
class DeepSpeech2(SpeechToText):
    """Args:
    vocab_size, num_features, vocabulary, extractor: see `SpeechToText`.
    conv_filters: int. Filters of both 2-D convolutions.
    num_rnn_layers, rnn_units: int. Bidirectional recurrent layers and units per direction.
    rnn_type: str. `gru` or `lstm`.
    fc_units: int. The fully connected layer (0 = none).
    dropout: float. After the convolutions, recurrent layers and the fully connected layer.
    """

    time_reduction = 2

    def __init__(
        self,
        vocab_size: int = 29,
        num_features: int = 64,
        conv_filters: int = 32,
        num_rnn_layers: int = 5,
        rnn_units: int = 800,
        rnn_type: str = "gru",
        fc_units: int = 1600,
        dropout: float = 0.5,
        vocabulary=None,
        extractor=None,
        **kwargs,
    ):
        super().__init__(
            vocab_size=vocab_size,
            num_features=num_features,
            vocabulary=vocabulary,
            extractor=extractor,
            **kwargs,
        )
        if rnn_type not in ("gru", "lstm"):
            raise ValueError(f"rnn_type must be 'gru' or 'lstm', got {rnn_type!r}")
        self.conv_filters, self.num_rnn_layers, self.rnn_units = (
            conv_filters,
            num_rnn_layers,
            rnn_units,
        )
        self.rnn_type, self.fc_units, self.dropout = rnn_type, fc_units, dropout
        policy = self.dtype_policy
        self.convs = [
            Conv2D(
                conv_filters,
                (11, 41),
                strides=(2, 2),
                padding="same",
                use_bias=False,
                dtype=policy,
                name="conv_0",
            ),
            Conv2D(
                conv_filters,
                (11, 21),
                strides=(1, 2),
                padding="same",
                use_bias=False,
                dtype=policy,
                name="conv_1",
            ),
        ]
        self.conv_norms = [
            keras.layers.BatchNormalization(dtype=policy, name=f"conv_norm_{i}") for i in range(2)
        ]
        cell = GRU if rnn_type == "gru" else LSTM
        self.rnns = [
            keras.layers.Bidirectional(
                cell(rnn_units, return_sequences=True, dtype=policy),
                dtype=policy,
                name=f"birnn_{i}",
            )
            for i in range(num_rnn_layers)
        ]
        self.fc = (
            keras.layers.Dense(fc_units, activation="relu", dtype=policy, name="fc")
            if fc_units
            else None
        )
        self.output_dense = keras.layers.Dense(vocab_size, dtype=policy, name="output")
        self.dropout_layer = Dropout(dropout, dtype=policy)

    def call(self, inputs, training=False):
        x = ops.expand_dims(inputs["features"], -1)  # [B, T, F, 1]
        x = ops.relu(self.conv_norms[0](self.convs[0](x), training=training))
        keep = self.frame_mask(inputs["feature_lengths"], ops.shape(x)[1], x.dtype)
        # padding stays zero, so it never leaks into real frames (see Jasper)
        x = x * keep[..., None]
        x = ops.relu(self.conv_norms[1](self.convs[1](x), training=training)) * keep[..., None]
        shape = ops.shape(x)
        x = ops.reshape(x, (shape[0], shape[1], x.shape[2] * self.conv_filters))
        x = self.dropout_layer(x, training=training)
        mask = keep[:, :, 0] > 0
        for rnn in self.rnns:
            x = self.dropout_layer(rnn(x, mask=mask, training=training), training=training)
        if self.fc is not None:
            x = self.dropout_layer(self.fc(x), training=training)
        return ops.cast(self.output_dense(x), "float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "conv_filters": self.conv_filters,
                "num_rnn_layers": self.num_rnn_layers,
                "rnn_units": self.rnn_units,
                "rnn_type": self.rnn_type,
                "fc_units": self.fc_units,
                "dropout": self.dropout,
            }
        )
        return config
