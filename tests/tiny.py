"""Tiny `keras-s2s train` settings shared by the tests that train through the command line, and a
disk that fills up after a run's first backup."""

import contextlib
from pathlib import Path


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


@contextlib.contextmanager
def disk_full_after_first_backup():
    """Within: room on disk for everything up to a run's first epoch backup, none after it (what
    `keras_s2s.files` sees)."""
    from keras_s2s import files

    real, backups = files.shutil.disk_usage, []

    def filling_disk(path):
        full = bool(backups)
        if Path(path).name == "backup":
            backups.append(path)
        usage = real(path)
        return usage._replace(free=1000) if full else usage

    files.shutil.disk_usage = filling_disk
    try:
        yield
    finally:
        files.shutil.disk_usage = real
