"""The GPU scripts' dry runs: benchmarks/gpu_suite.sh and gpu_translation.sh end to end on this CPU
with TensorFlow blocked and tiny shapes, as they run on the GPU machine (JAX, no TensorFlow), writing
their results under $OUT."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def dry_run(script: str, **settings) -> None:
    """Run benchmarks/`script` with DRY_RUN=1 and these environment variables; assert it exits 0."""
    env = {**os.environ, "DRY_RUN": "1", **settings}
    env.pop("KERAS_BACKEND", None)  # the script chooses JAX itself
    result = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.slow
def test_the_gpu_suite_runs_on_jax_without_tensorflow_and_writes_its_tables(tmp_path):
    pytest.importorskip("jax")
    dry_run("gpu_suite.sh", OUT=str(tmp_path), SUITE_CARDS="transformer", SUITE_SECONDS="300")
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


@pytest.mark.slow
def test_the_gpu_translation_run_trains_on_an_encoded_corpus_without_tensorflow(tmp_path):
    """benchmarks/gpu_translation.sh's dry run: `keras-s2s encode` here, then train (time limit),
    evaluate with beam search and plot on JAX with TensorFlow blocked, results under $OUT."""
    pytest.importorskip("jax")
    from keras_s2s import cli
    from keras_s2s.corpora.translation_demo import DemoCorpus

    pairs = [pair for split in DemoCorpus(seed=0).split(300, 12, 10, seed=1) for pair in split]
    (tmp_path / "corpus.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    corpus, out = tmp_path / "ids", tmp_path / "out"
    encode = ["encode", "--data", str(tmp_path / "corpus.tsv"), "--out", str(corpus)]
    assert cli.main(encode + ["--vocab-size", "120", "--num-valid", "12", "--num-test", "10"]) == 0
    dry_run(
        "gpu_translation.sh",
        OUT=str(out),
        CORPUS=str(corpus),
        RUN_DIR=str(tmp_path / "run"),
        TIME_LIMIT="8s",
    )
    log = (out / "gpu_translation.log").read_text()
    assert "== train: exit status 0" in log and "== evaluate (beam 2): exit status 0" in log, log
    assert "encoded corpus" in log and "time limit of 8s reached" in log, log
    assert {p.name for p in out.iterdir()} == {
        "gpu_translation.log",
        "card.yaml",
        "fit.json",
        "history.json",
        "eval.json",
        "eval-beam2.json",
        "dev_bleu.png",
    }
    assert json.loads((out / "eval-beam2.json").read_text())["beam_width"] == 2
    assert json.loads((out / "fit.json").read_text())["training_steps"] >= 1
