"""Tiny `keras-s2s train` settings shared by the tests that train through the command line."""


def flags(**settings) -> list[str]:
    """`--set key=value` for each setting, e.g. `flags(units=16)` -> `["--set", "units=16"]`."""
    return [item for key, value in settings.items() for item in ("--set", f"{key}={value}")]


# a 2+2-layer GNMT of 16 units on 300 demo pairs, in float32 (exact, no bfloat16 rounding)
TINY_GNMT = flags(
    units=16,
    num_layers=2,
    num_train=300,
    num_valid=16,
    num_test=8,
    vocab_size=300,
    batch_size=16,
    max_length=48,
    decode_max_length=20,
) + ["--precision", "float32"]

# a Tacotron 2 of 16-32 units (a dict: model arguments and `--set` flags alike)
TINY_TACOTRON = dict(
    embedding_dim=16,
    encoder_channels=16,
    encoder_layers=2,
    encoder_units=8,
    attention_units=16,
    location_filters=4,
    location_kernel=5,
    prenet_units=[16, 16],
    attention_lstm_units=32,
    decoder_lstm_units=32,
    postnet_channels=16,
    postnet_layers=3,
    reduction_factor=2,
)
