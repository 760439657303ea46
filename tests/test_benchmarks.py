"""The benchmark helpers that explain a step's time: the profiler-trace reader and the FLOP count."""

import pathlib
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))

import flops  # noqa: E402
import optrace  # noqa: E402

from keras_s2s import zoo  # noqa: E402


def test_op_classes():
    assert optrace.op_class("_MklMatMul") == "matmul/conv"
    assert optrace.op_class("_MklNativeConv2DBackpropFilter") == "matmul/conv"
    assert optrace.op_class("Cast") == "casts"
    assert optrace.op_class("StatelessRandomUniformV2") == "random (dropout)"
    assert optrace.op_class("ResourceApplyAdam") == "optimizer update"
    assert optrace.op_class("TanhGrad") == "element-wise"
    assert optrace.op_class("SomethingNew") == "other"


def test_profile_is_read_into_op_classes(tmp_path):
    a = tf.random.normal([256, 256])

    @tf.function
    def work(x):
        for _ in range(3):
            x = tf.cast(tf.cast(tf.matmul(x, x), tf.bfloat16), tf.float32)
        return x

    work(a)
    scoped = tf.Variable(a)

    @tf.function
    def scoped_gradient():
        with tf.GradientTape() as tape:
            with tf.name_scope("block"):
                loss = tf.reduce_sum(tf.tanh(scoped) * 3.0)
        return tape.gradient(loss, scoped)

    scoped_gradient()
    with optrace.profiled(str(tmp_path)):
        work(a).numpy()
        scoped_gradient().numpy()
    types = optrace.op_type_seconds(str(tmp_path))
    assert any("MatMul" in name for name in types) and types["Cast"] > 0
    classes = optrace.op_class_seconds(str(tmp_path))
    assert classes["matmul/conv"] > 0 and classes["casts"] > 0
    assert list(classes.values()) == sorted(classes.values(), reverse=True)
    levels = optrace.kernel_concurrency(str(tmp_path))
    assert set(levels) <= set(range(64)) and all(seconds >= 0 for seconds in levels.values())
    kernel_seconds = sum(v for name, v in types.items() if optrace.op_class(name) != "control flow")
    assert sum(k * seconds for k, seconds in levels.items()) == pytest.approx(
        kernel_seconds, rel=1e-6
    )
    scopes = optrace.op_scope_seconds(str(tmp_path), "element-wise")
    assert any(key.startswith("forward block") and key.endswith(" Tanh") for key in scopes), scopes
    assert any(key.startswith("backward block") and key.endswith(" TanhGrad") for key in scopes), (
        scopes
    )
    name = "StatefulPartitionedCall/gradient_tape/model_1/decoder_2_1/attention/Mul"
    assert optrace.op_scope(name, depth=2) == "backward model/decoder"
    empty = tmp_path / "nothing"
    empty.mkdir()
    try:
        optrace.read_xspace(str(empty))
    except FileNotFoundError as error:
        assert "no *.xplane.pb" in str(error)
    else:
        raise AssertionError("an empty folder must be refused")


def test_flop_count_of_a_transformer_matches_a_hand_count():
    model = zoo.load(
        "transformer_demo",
        vocab_size=100,
        num_layers=1,
        d_model=16,
        num_heads=2,
        ffn_dim=32,
        precision="float32",
        strategy="default",
    )
    batch, length, d, f, v = 2, 5, 16, 32, 100
    # encoder: 4 attention projections + 2 FFN matrices; decoder: 8 attention projections + 2 FFN; output = V x d
    weights = 4 * d * d + 2 * d * f + 8 * d * d + 2 * d * f + v * d
    attention = 3 * 4 * batch * length * length * d  # encoder self, decoder self and cross
    expected = 6 * weights * batch * length + 3 * attention
    assert (
        flops.training_flops("transformer", model, {"batch": batch, "length": length}) == expected
    )


def test_the_backend_comparison_runs_both_backends_in_turn(tmp_path):
    """`bench_backends.py` on one tiny card: both workers answer, the table has both timings."""
    import json
    import subprocess

    pytest.importorskip("jax")
    out = tmp_path / "rows.json"
    command = [sys.executable, str(pathlib.Path(flops.__file__).parent / "bench_backends.py")]
    command += ["--cards", "wave2letter_demo", "--precisions", "float32", "--steps", "1"]
    command += ["--repeats", "2", "--warmup", "1", "--seconds", "0.5", "--json", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (row,) = json.loads(out.read_text())
    assert row["card"] == "wave2letter_demo" and row["unit"] == "frames"
    for backend in ("tensorflow", "jax"):
        assert row[backend]["seconds_per_step"] > 0 and row[backend]["compile_seconds"] >= 0
    assert "| wave2letter_demo | float32 |" in result.stdout


def test_a_benchmark_runs_in_turn_from_the_tree_and_from_a_revision(tmp_path):
    """bench_revisions: the script runs alternately from a worktree of the revision and from the
    work tree (each importing its own code); rows pair on their non-float fields."""
    import json
    import subprocess

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("SPEED = 100.0\n")
    (repo / "bench.py").write_text(
        "import json, sys\nfrom pkg import SPEED\n"
        "json.dump([{'engine': 'e', 'batch': 1, 'tokens_per_s': SPEED},"
        " {'engine': 'e', 'batch': 32, 'tokens_per_s': 4 * SPEED}], open(sys.argv[-1], 'w'))\n"
    )

    def git(*args):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1")
    (repo / "pkg" / "__init__.py").write_text("SPEED = 150.0\n")  # this tree: 1.5x faster
    out = tmp_path / "ratios.json"
    script = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_revisions.py"
    subprocess.run(
        [sys.executable, str(script), "--against", "HEAD", "--repository", str(repo),
         "--json", str(out), "--", "bench.py"],
        check=True, capture_output=True,
    )  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert sorted((r["batch"], r["ratio"]) for r in rows) == [(1, 1.5), (32, 1.5)]
    assert {r["against"] for r in rows} == {100.0, 400.0}
    git("worktree", "prune")
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True)
    assert len(listed.stdout.splitlines()) == 1, "the revision's worktree is removed"
