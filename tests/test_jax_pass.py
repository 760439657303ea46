"""The JAX pass, first half: every architecture's model checks under JAX (tests/jax_pass.py)."""

import pytest
from jax_pass import TIMEOUT, run_jax_pass


@pytest.mark.timeout(TIMEOUT)
def test_every_architecture_passes_the_model_checks_on_jax_with_tensorflow_blocked():
    run_jax_pass("-k", "model_checks")
