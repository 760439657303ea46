"""The JAX pass of the suite: the files that run under both backends (devices.JAX_PASS), run again
in a subprocess with `KERAS_BACKEND=jax` and `import tensorflow` blocked (conftest.py), as on the GPU
machine. It runs inside the TensorFlow pass, so the README's one test command runs both.

It is split over two test files (test_jax_pass.py: the model checks of every architecture;
test_jax_pass_rest.py: everything else) so that the suite's two workers share it.

Example:
    >>> run_jax_pass("-k", "model_checks")
"""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest
from devices import JAX_PASS

ROOT = Path(__file__).resolve().parents[1]
# the timeout of the tests that start a JAX process for many tests (each JAX pass half, the backend
# twin): 5-6 minutes alone on a 2-core Zen 3, up to 15 beside the other worker's multi-process tests
# and a training (pytest-timeout's default in setup.cfg is 900 s)
TIMEOUT = 2400


def run_jax_pass(*pytest_args: str) -> None:
    """Run the JAX_PASS files under JAX, selected by `pytest_args`; fail with its summary."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("started from the TensorFlow pass")
    pytest.importorskip("jax")
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    result = subprocess.run(
        command + [str(ROOT / "tests" / name) for name in JAX_PASS] + list(pytest_args),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT - 60,
    )
    summary = result.stdout[-4000:]
    assert result.returncode == 0, summary + result.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary
