"""The JAX pass of the suite: the files that run under both backends, run again with
`KERAS_BACKEND=jax` and `import tensorflow` blocked (conftest.py), as on the GPU machine.

It runs inside the TensorFlow pass, so the README's one test command (`python -m pytest`) runs both.
"""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest
from devices import JAX_PASS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="started from the TensorFlow pass"
)
def test_the_backend_tests_pass_on_jax_with_tensorflow_blocked():
    pytest.importorskip("jax")
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    result = subprocess.run(
        command + [str(ROOT / "tests" / name) for name in JAX_PASS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    summary = result.stdout[-4000:]
    assert result.returncode == 0, summary + result.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary
