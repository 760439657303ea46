"""The JAX pass, second half: the backend tests other than the model checks (tests/jax_pass.py)."""

import pytest
from jax_pass import TIMEOUT, run_jax_pass


@pytest.mark.timeout(TIMEOUT)
def test_the_other_backend_tests_pass_on_jax_with_tensorflow_blocked():
    run_jax_pass("-k", "not model_checks")
