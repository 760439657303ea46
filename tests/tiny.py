"""Tiny models and `keras-s2s train` settings shared by the tests, and a disk that fills up after a
run's first backup."""

import contextlib
from pathlib import Path


def tiny_gnmt(vocab_size=64, **kwargs):
    """An untrained GNMT of 3 layers of 16 units without dropout (kwargs: other arguments)."""
    from keras_s2s.models import GNMT

    return GNMT(
        **{"vocab_size": vocab_size, "num_layers": 3, "units": 16, "dropout": 0.0, **kwargs}
    )


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
