"""Training survives a killed process: atomic backups, exact resume, no step counted twice,
and no resuming with other settings."""

import json
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_s2s.training.runner import AtomicBackupAndRestore, load_model

EPOCHS, STEPS = 6, 30
COMMAND = [sys.executable, "-m", "keras_s2s.cli", "train", "gnmt_demo", "--data", "demo", "--epochs", str(EPOCHS),
           "--precision", "float32", "--set", "units=16", "--set", "num_layers=2", "--set", "vocab_size=300",
           "--set", "num_train=2000", "--set", "num_valid=32", "--set", "num_test=16", "--set", "batch_size=16",
           "--set", f"steps_per_epoch={STEPS}", "--set", "max_length=24"]


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


@pytest.mark.slow
def test_a_killed_training_run_resumes_and_finishes_the_planned_steps(tmp_path):
    env = dict(os.environ, KERAS_S2S_HOME=str(tmp_path / "home"), TF_CPP_MIN_LOG_LEVEL="2")
    run = tmp_path / "run"
    command = COMMAND + ["--out", str(run)]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pointer = run / "backup" / "latest.json"
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None:
        if pointer.is_file() and json.loads(pointer.read_text())["epoch"] >= 2:
            break
        time.sleep(0.02)
    assert first.poll() is None, "the first run ended before it could be killed:\n" + first.stdout.read()
    first.send_signal(signal.SIGKILL)
    first.wait()
    killed_at = json.loads(pointer.read_text())["epoch"]
    assert 2 <= killed_at < EPOCHS and not (run / "model.keras").exists()
    assert (run / "backup" / json.loads(pointer.read_text())["weights"]).is_file()

    changed = subprocess.run(command + ["--set", "units=24"], env=env, capture_output=True, text=True, timeout=300)
    assert changed.returncode == 2 and "model.units (16 -> 24)" in changed.stderr, changed.stderr
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"resuming from the backup after epoch {killed_at}" in second.stdout + second.stderr
    model = load_model(run)
    assert int(model.optimizer.iterations) == EPOCHS * STEPS, "no step lost, none counted twice"
    history = json.loads((run / "history.json").read_text())
    assert len(history["loss"]) == EPOCHS - killed_at  # the resumed run trained only the missing epochs
    metadata = json.loads((run / "preset" / "metadata.json").read_text())
    assert metadata["training_steps"] == EPOCHS * STEPS
    assert not (run / "backup").exists() and len(list((run / "checkpoints").glob("epoch-*.weights.h5"))) == EPOCHS
