"""The TensorFlow pass checks that JAX computes what TensorFlow computes: every architecture's losses,
outputs and decoded ids from the same weights, both ways, and the shipped presets' transcripts.
A file of its own (not in the JAX pass, where it compared JAX with JAX), so that the suite's
workers run it beside test_backends.py."""

import os
import subprocess
import sys
from pathlib import Path

import backend_twin as twin
import numpy as np
import pytest
from jax_pass import TIMEOUT
from model_testing import assert_same_outputs

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(TIMEOUT)  # 914 s beside the multiworker tests and a training
def test_jax_computes_what_tensorflow_computes_from_the_same_weights(tmp_path):
    pytest.importorskip("jax")
    from keras_s2s.audio.io import resample, write_wav
    from keras_s2s.corpora.espeak import synthesize

    speech = resample(*synthesize("the red dog runs to my friend", voice="en-us"), 16000)
    write_wav(tmp_path / "speech.wav", speech, 16000)
    expected = {}
    for architecture in twin.ARCHITECTURES:
        model = twin.build(architecture)
        inputs, labels = twin.batch(architecture, model)
        model.fit(inputs, labels, epochs=3, verbose=0)  # weights away from their initial values
        model.save_weights(tmp_path / f"{architecture}.weights.h5")
        np.savez(
            tmp_path / f"{architecture}.batch.npz",
            labels=labels,
            **{f"in_{key}": value for key, value in inputs.items()},
        )
        expected[architecture] = twin.outputs(architecture, model, inputs, labels)
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests/no_tensorflow.py"), str(ROOT / "tests/backend_twin.py")]
        + [str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for architecture, tensorflow_outputs in expected.items():
        jax_outputs = dict(np.load(tmp_path / f"{architecture}.jax.npz"))
        assert_same_outputs(tensorflow_outputs, jax_outputs)
        if architecture not in twin.RECURRENT:
            continue
        # the other way: weights trained on JAX, loaded here (losses and outputs; decoded ids of
        # these barely trained models can flip on near-ties, which the first direction checks)
        model = twin.build(architecture)
        model.load_weights(tmp_path / f"{architecture}.jax.weights.h5")
        saved = np.load(tmp_path / f"{architecture}.batch.npz")
        inputs = {key[3:]: saved[key] for key in saved.files if key.startswith("in_")}
        trained = dict(np.load(tmp_path / f"{architecture}.jax-trained.npz"))
        here = twin.outputs(architecture, model, inputs, saved["labels"], searches=())
        assert_same_outputs({key: trained[key] for key in here}, here)
    # the shipped presets (trained on TensorFlow) decode the same on JAX
    presets = twin.preset_outputs(str(tmp_path / "speech.wav"))
    assert_same_outputs(presets, dict(np.load(tmp_path / "presets.jax.npz")))
    assert presets["transcript"][0].startswith("the red dog")  # a sentence the demo corpus lacks
