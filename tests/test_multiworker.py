"""Multi-worker training with real worker processes on 127.0.0.1: identical weights, the single-process
loss, chief-only writes, and a job that survives a SIGKILLed worker."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from devices import FAST_XLA_COMPILE

from keras_s2s.cli import main
from keras_s2s.training.runner import load_model

WORKER_SCRIPT = """
import json, os, sys
import numpy as np
sys.path.insert(0, {tests!r})
os.environ["TF_CONFIG"] = {tf_config!r}
from keras_s2s.distribution import get_strategy
strategy = get_strategy("multiworker")  # before TensorFlow runs anything
from test_multiworker import train_tiny_gnmt
loss, weights = train_tiny_gnmt(strategy)
np.savez({out!r}, loss=loss, *weights)
_, weights = train_tiny_gnmt(strategy, accumulate_steps=2)  # the same updates from micro-batches of 8
np.savez({out!r}.replace(".npz", "_accumulated.npz"), *weights)
"""


# on JAX each worker feeds its own rows of every global batch (BucketedBatches does the same)
JAX_WORKER_SCRIPT = """
import json, os, sys
sys.path.insert(0, {tests!r})
import no_tensorflow
import numpy as np
os.environ["TF_CONFIG"] = {tf_config!r}
from keras_s2s.distribution import get_strategy
strategy = get_strategy("multiworker")
from test_multiworker import train_tiny_gnmt
loss, weights = train_tiny_gnmt(strategy, rows=({index}, 2), initial={initial!r})
np.savez({out!r}, loss=loss, *weights)
"""


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ",".join(f"127.0.0.1:{p}" for p in ports)


def train_tiny_gnmt(strategy, steps=3, accumulate_steps=1, rows=None, initial=None):
    """A tiny GNMT trained `steps` updates on fixed, unpadded batches (global batch 16, in `accumulate_steps`
    micro-batches); returns (last loss, weights). `rows` (JAX workers): (index, count) of this
    worker's share of every global batch, fed as NumPy arrays. `initial`: an .npz file of the
    weights to start from (written there first if it does not exist: backends draw differently)."""
    import keras

    from keras_s2s import zoo

    rng = np.random.default_rng(0)
    source = rng.integers(4, 50, (48, 8)).astype("int32")
    target = rng.integers(4, 50, (48, 8)).astype("int32")
    keras.utils.set_random_seed(11)
    model = zoo.load(
        "gnmt",
        vocab_size=50,
        num_layers=2,
        units=16,
        dropout=0.0,
        precision="float32",
        strategy=strategy,
        learning_rate=0.01,
        schedule="constant",
        accumulate_steps=accumulate_steps,
    )
    if initial is not None and os.path.exists(initial):
        saved = np.load(initial)
        model.set_weights([saved[f"arr_{i}"] for i in range(len(saved.files))])
    elif initial is not None:
        np.savez(initial, *[np.asarray(w) for w in model.get_weights()])
    if rows is not None:
        index, count = rows
        mine = np.arange(16 * steps).reshape(steps, 16)[:, index::count].ravel()
        with strategy.scope():
            inputs = {"source": source[mine], "target_in": target[mine]}
            history = model.fit(inputs, target[mine], 16 // count, verbose=0, shuffle=False)
        return history.history["loss"][-1], [np.asarray(w.value) for w in model.weights]
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(({"source": source, "target_in": target}, target))
    dataset = dataset.batch(16 // accumulate_steps).take(steps * accumulate_steps)
    history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    return history.history["loss"][-1], [w.numpy() for w in model.weights]


def start_workers(script_for, tmp_path, env=None):
    workers = free_ports(2)
    processes = []
    for index in range(2):
        script = tmp_path / f"worker{index}.py"
        script.write_text(script_for(workers, index))
        processes.append(
            subprocess.Popen(
                [sys.executable, str(script)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    return processes


def identical_results(processes, tmp_path):
    """Wait for two workers that each saved `w{index}.npz`; check them equal; the first one's."""
    for process in processes:
        output = process.communicate(timeout=300)[0]
        assert process.returncode == 0, output[-3000:]
    first, second = (np.load(tmp_path / f"w{i}.npz") for i in range(2))
    for key in first.files:  # one model, two workers
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    return first


def test_two_workers_end_with_identical_weights_and_the_single_process_loss(tmp_path):
    """...with and without gradient accumulation (2 micro-batches of 8 = one global batch of 16)."""
    from keras_s2s.distribution.strategies import tf_config_for

    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    processes = start_workers(
        lambda workers, i: WORKER_SCRIPT.format(
            tests=tests,
            tf_config=tf_config_for(workers.split(","), i),
            out=str(tmp_path / f"w{i}.npz"),
        ),
        tmp_path,
        env,
    )
    first = identical_results(processes, tmp_path)

    from keras_s2s.distribution import get_strategy

    loss, weights = train_tiny_gnmt(get_strategy("default"))  # one process, the same global batches
    assert float(first["loss"]) == pytest.approx(loss, rel=1e-4)
    accumulated = [np.load(tmp_path / f"w{i}_accumulated.npz") for i in range(2)]
    for index, expected in enumerate(weights):
        np.testing.assert_allclose(first[f"arr_{index}"], expected, atol=1e-4)
        np.testing.assert_array_equal(
            accumulated[0][f"arr_{index}"], accumulated[1][f"arr_{index}"]
        )
        np.testing.assert_allclose(accumulated[0][f"arr_{index}"], expected, atol=1e-4)


def test_two_jax_workers_end_with_identical_weights_and_the_single_process_loss(tmp_path):
    """The same on JAX's distributed runtime (Gloo on CPUs), against TensorFlow's single process."""
    pytest.importorskip("jax")
    from keras_s2s.distribution import get_strategy, tf_config_for

    tests = os.path.dirname(os.path.abspath(__file__))
    initial = str(tmp_path / "initial.npz")  # TensorFlow's initial weights, for both backends
    loss, weights = train_tiny_gnmt(get_strategy("default"), initial=initial)
    env = dict(os.environ, KERAS_BACKEND="jax", XLA_FLAGS=FAST_XLA_COMPILE)
    processes = start_workers(
        lambda workers, i: JAX_WORKER_SCRIPT.format(
            tests=tests,
            tf_config=tf_config_for(workers.split(","), i),
            index=i,
            initial=initial,
            out=str(tmp_path / f"w{i}.npz"),
        ),
        tmp_path,
        env,
    )
    first = identical_results(processes, tmp_path)
    assert float(first["loss"]) == pytest.approx(loss, rel=1e-4)
    for index, expected in enumerate(weights):
        np.testing.assert_allclose(first[f"arr_{index}"], expected, atol=1e-4)


EPOCHS, STEPS = 4, 3
# the best epoch's weights, however small its lead
TRAIN = [
    "train",
    "gnmt_demo",
    "--data",
    "demo",
    "--epochs",
    str(EPOCHS),
    "--precision",
    "float32",
    "--set",
    "units=16",
    "--set",
    "num_layers=2",
    "--set",
    "vocab_size=300",
    "--set",
    "num_train=600",
    "--set",
    "num_valid=16",
    "--set",
    "num_test=8",
    "--set",
    "batch_size=16",
    "--set",
    f"steps_per_epoch={STEPS}",
    "--set",
    "max_length=24",
    "--set",
    "decode_max_length=20",
    "--set",
    "training.validation.min_delta=0",
]


def start_job(run, tmp_path, name, backend="tensorflow"):
    """Two `keras-s2s train` workers (index 0 = the chief) writing to `run`; their scratch in
    tmp_path/name. On `jax`, with TensorFlow blocked (JAX's distributed runtime, Gloo on CPUs)."""
    scratch = tmp_path / name
    scratch.mkdir()
    env = dict(
        os.environ,
        KERAS_S2S_HOME=str(tmp_path / "home"),
        TF_CPP_MIN_LOG_LEVEL="2",
        TMPDIR=str(scratch),
        KERAS_BACKEND=backend,
        XLA_FLAGS=FAST_XLA_COMPILE,  # no device-count flag: one device per worker
    )
    blocker = [os.path.join(os.path.dirname(__file__), "no_tensorflow.py")]
    workers = free_ports(2)
    return [
        subprocess.Popen(
            [
                sys.executable,
                *(blocker if backend == "jax" else []),
                "-m",
                "keras_s2s.cli",
                *TRAIN,
                "--out",
                str(run),
                "--workers",
                workers,
                "--task-index",
                str(i),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ], scratch


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_a_job_with_a_killed_worker_resumes_from_the_chiefs_backup(
    backend, tmp_path, capsys, monkeypatch
):
    if backend == "jax":
        pytest.importorskip("jax")
    run = tmp_path / "run"
    (chief, worker), _ = start_job(run, tmp_path, "first", backend)
    pointer = run / "backup" / "latest.json"
    deadline = time.time() + 300
    while time.time() < deadline and chief.poll() is None:
        if pointer.is_file() and json.loads(pointer.read_text())["epoch"] >= 2:
            break
        time.sleep(0.02)
    assert chief.poll() is None, (
        "the job ended before a worker could be killed:\n" + chief.stdout.read()
    )
    worker.send_signal(signal.SIGKILL)  # the chief now waits on a collective with a dead peer:
    chief.send_signal(signal.SIGKILL)  # the job is lost, as a scheduler would see it
    worker.wait(), chief.wait()
    killed_at = json.loads(pointer.read_text())["epoch"]
    assert 2 <= killed_at < EPOCHS and not (run / "model.keras").exists()

    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path / "home"))
    # the run's settings are kept
    assert main([*TRAIN, "--out", str(run), "--set", "units=24"]) == 2
    assert "model.units (16 -> 24)" in capsys.readouterr().err

    (chief, worker), scratch = start_job(run, tmp_path, "second", backend)  # the job restarts
    outputs = [p.communicate(timeout=600)[0] for p in (chief, worker)]
    assert chief.returncode == 0 and worker.returncode == 0, outputs[0][-3000:] + outputs[1][-3000:]
    for output in outputs:  # both workers restored the chief's backup
        assert f"resuming from the backup after epoch {killed_at}" in output
    assert "the chief saves and evaluates" in outputs[1] and "held-out BLEU" in outputs[0]
    if backend == "jax":  # together, so the worker does not wait at exit for the chief's evaluation
        assert all("leaving the job's distributed runtime" in output for output in outputs)
    fit = json.loads((run / "fit.json").read_text())  # model.keras holds the best epoch's state
    assert fit["training_steps"] == EPOCHS * STEPS, "no step lost, none counted twice"
    best_epoch = json.loads((run / "checkpoints" / "best.json").read_text())["best_epoch"]
    assert (
        int(load_model(run).optimizer.iterations) == best_epoch * STEPS
        and fit["weights_epoch"] == best_epoch
    )
    history = json.loads((run / "history.json").read_text())
    # the epochs before the kill (from the backup) and those after
    assert len(history["loss"]) == EPOCHS
    assert (
        json.loads((run / "preset" / "metadata.json").read_text())["training_steps"]
        == EPOCHS * STEPS
    )
    assert (
        not (run / "backup").exists()
        and len(list((run / "checkpoints").glob("epoch-*.weights.h5"))) == EPOCHS
    )
    assert not list(scratch.iterdir()), "the non-chief's scratch folder is removed"


def test_worker_flags_are_checked(capsys, tmp_path):
    out = str(tmp_path / "r")
    assert main(["train", "gnmt", "--out", out, "--workers", "127.0.0.1:1,127.0.0.1:2"]) == 2
    assert "needs both --workers and --task-index" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                "gnmt",
                "--out",
                out,
                "--workers",
                "127.0.0.1,127.0.0.1:2",
                "--task-index",
                "0",
            ]
        )
        == 2
    )
    assert "'127.0.0.1' is not host:port" in capsys.readouterr().err
    assert (
        main(["train", "gnmt", "--out", out, "--workers", "127.0.0.1:1", "--task-index", "1"]) == 2
    )
    assert "not a worker index (0..0)" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                "gnmt",
                "--out",
                out,
                "--workers",
                "127.0.0.1:1",
                "--task-index",
                "0",
                "--strategy",
                "mirrored",
            ]
        )
        == 2
    )
    assert "not --strategy mirrored" in capsys.readouterr().err
    assert "TF_CONFIG" not in os.environ
