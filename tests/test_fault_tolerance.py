"""Training survives a killed process: atomic backups, exact resume, no step counted twice,
and no resuming with other settings."""

import json

import keras
import numpy as np

from keras_s2s.training.runner import AtomicBackupAndRestore

def tiny_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 4))
    model.compile(optimizer="adam", loss="mse")
    return model


def test_backups_commit_atomically_and_restore_weights_optimizer_and_epoch(tmp_path):
    x, y = np.ones((8, 4), "float32"), np.zeros((8, 3), "float32")
    model = tiny_model()
    backup = AtomicBackupAndRestore(tmp_path / "backup")
    backup.set_model(model)
    model.fit(x, y, epochs=2, verbose=0)
    backup.on_epoch_end(1)  # as fit would after its second epoch
    saved = [w.numpy().copy() for w in model.weights]
    assert json.loads((tmp_path / "backup" / "latest.json").read_text()) == {"epoch": 2,
                                                                            "weights": "epoch-0002.weights.h5"}
    # a crash while writing the next backup: a half-written file, the pointer not yet moved
    (tmp_path / "backup" / ".tmp-epoch-0003.weights.h5").write_bytes(b"\x89HDF half")
    (tmp_path / "backup" / "epoch-0003.weights.h5").write_bytes(b"not an h5 file")
    restored = tiny_model()
    restarted = AtomicBackupAndRestore(tmp_path / "backup")
    restarted.set_model(restored)
    restarted.on_train_begin()
    assert restored._initial_epoch == 2
    assert int(restored.optimizer.iterations) == int(model.optimizer.iterations)
    for a, b in zip(saved, restored.weights):
        np.testing.assert_array_equal(a, b.numpy())
    restarted.on_epoch_end(2)
    assert sorted(p.name for p in (tmp_path / "backup").iterdir() if not p.name.startswith(".")) == [
        "epoch-0003.weights.h5", "latest.json"]
    restarted.on_train_end()
    assert not (tmp_path / "backup").exists()


# The SIGKILL-and-restart test of a whole training job (two workers) is in test_multiworker.py.
