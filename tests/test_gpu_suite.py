"""The GPU suite's dry run: benchmarks/gpu_suite.sh end to end on this CPU with TensorFlow blocked and
tiny shapes, as it runs on the GPU machine (JAX, no TensorFlow), writing its tables under $OUT."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_gpu_suite_runs_on_jax_without_tensorflow_and_writes_its_tables(tmp_path):
    pytest.importorskip("jax")
    env = {
        **os.environ,
        "DRY_RUN": "1",
        "OUT": str(tmp_path),
        "SUITE_CARDS": "transformer",
        "SUITE_SECONDS": "300",
    }
    env.pop("KERAS_BACKEND", None)  # the suite chooses JAX itself
    result = subprocess.run(
        ["bash", str(ROOT / "benchmarks/gpu_suite.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    log = (tmp_path / "gpu_suite.log").read_text()
    assert "jax" in log and "TIMED OUT" not in log and "exit status" not in log, log[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "gpu_suite.jsonl").read_text().splitlines()]
    ours = [row for row in rows if row.get("card") == "transformer_demo"]
    assert {row["precision"] for row in ours} == {
        "mixed_bfloat16",
        "mixed_float16",
        "tf32",
        "float32",
    }
    assert all("error" not in row and row["units_per_second"] > 0 for row in ours), ours
    tables = (tmp_path / "gpu_tables.md").read_text()
    assert "| transformer_demo | mixed_bfloat16 |" in tables and "gnmt" not in tables
