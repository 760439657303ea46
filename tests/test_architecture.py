"""The layer rule of ARCHITECTURE.md: every import inside keras_s2s points down (or within its own part).

Reads the source with `ast` (imports inside functions included); imports nothing.
"""

import ast
import os
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "keras_s2s"

# Each part of keras_s2s and its layer: a part may import its own modules and parts of lower layers only.
LAYERS = {
    "home": 0,
    "files": 0,
    "token_ids": 0,
    "progress": 0,
    "config": 1,
    "backend": 1,
    "padding": 1,
    "text": 2,
    "schema": 2,
    "precision": 2,
    "presets": 2,
    "plots": 2,
    "audio": 3,
    "layers": 4,
    "decoding": 4,
    "losses": 4,
    "metrics": 4,
    "optimizers": 4,
    "distribution": 4,
    "models": 5,
    "corpora": 5,
    "data": 6,
    "tasks": 7,
    "cards": 8,
    "zoo": 9,
    "export": 9,
    "training": 10,
    "commands": 11,
    "cli": 12,
}


def part_of(module: str) -> str:
    """`keras_s2s.text.tokenizer` -> `data`; `keras_s2s.zoo` -> `zoo`."""
    return module.split(".")[1]


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every keras_s2s import in a file, `from keras_s2s import x` as `keras_s2s.x`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name)
                for alias in node.names
                if alias.name.startswith("keras_s2s.")
            ]
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("keras_s2s")
        ):
            if node.module == "keras_s2s":
                found += [(node.lineno, f"keras_s2s.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def upward_imports() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent)
        if relative.as_posix() == "keras_s2s/__init__.py":
            continue  # the package's lazy facade: names resolved on first use, from any layer
        module = ".".join(relative.with_suffix("").parts)
        here = part_of(module)
        for line, target in imports_of(path):
            there = part_of(target)
            if there == "__version__":
                continue
            if there != here and LAYERS[there] >= LAYERS[here]:
                found.append(
                    f"{relative}:{line} ({here}, layer {LAYERS[here]}) imports {target} "
                    f"({there}, layer {LAYERS[there]})"
                )
    return found


def test_every_part_of_the_package_has_a_layer():
    parts = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert parts == set(LAYERS), (
        f"give each part a layer here and in ARCHITECTURE.md: {parts ^ set(LAYERS)}"
    )


def test_imports_point_down():
    assert upward_imports() == []


# the model core runs on JAX where TensorFlow is absent: TensorFlow only through `keras_s2s.backend.tf`
# (imported on first use) or inside the TensorFlow-only functions that need it
MODEL_CORE = (
    "token_ids",
    "padding",
    "text",
    "audio",
    "layers",
    "models",
    "decoding",
    "losses",
    "metrics",
    "optimizers",
    "precision",
    "zoo",
    "cards",
    "schema",
)


def top_level_tensorflow_imports(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent)
        if relative.parts[1].removesuffix(".py") not in MODEL_CORE:
            continue
        for node in ast.parse(path.read_text()).body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[0] in ("tensorflow", "tensorflow_text") for name in names):
                found.append(f"{relative}:{node.lineno}")
    return found


def test_the_model_core_imports_no_tensorflow_at_the_top():
    assert top_level_tensorflow_imports() == []


def test_the_tensorflow_rule_catches_a_top_level_import(tmp_path):
    fake = tmp_path / "keras_s2s" / "layers"
    fake.mkdir(parents=True)
    (fake / "x.py").write_text("import tensorflow as tf\n\ndef f():\n    import tensorflow\n")
    assert top_level_tensorflow_imports(tmp_path / "keras_s2s") == ["keras_s2s/layers/x.py:1"]


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "keras_s2s"
    (fake / "models").mkdir(parents=True)
    (fake / "models" / "x.py").write_text(
        "def f():\n    from keras_s2s.training.runner import train\n"
    )
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert upward_imports() == [
        "keras_s2s/models/x.py:2 (models, layer 5) imports keras_s2s.training.runner "
        "(training, layer 10)"
    ]


@pytest.mark.parametrize("command", [["--help"], ["list"]])
def test_help_and_list_start_no_tensorflow(command):
    import subprocess
    import sys

    code = (
        "import sys\nfrom keras_s2s import cli\ntry:\n    cli.main(%r)\nexcept SystemExit:\n    pass\n"
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)" % command
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False False"
    if command == ["list"]:
        assert "gnmt_demo" in result.stdout and "Transformer big" in result.stdout


def test_the_lazy_packages_start_no_keras():
    import subprocess
    import sys

    code = (
        "import sys, keras_s2s.data, keras_s2s.distribution, keras_s2s.backend\n"
        "import keras_s2s.text, keras_s2s.audio, keras_s2s.corpora\n"
        "keras_s2s.audio.manifest, keras_s2s.corpora.english_speech\n"
        "print('keras' in sys.modules, 'tensorflow' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


@pytest.mark.skipif(
    os.environ.get("KERAS_BACKEND", "tensorflow") != "tensorflow", reason="TensorFlow's lines"
)
def test_commands_hide_tensorflows_start_up_lines_unless_asked(tmp_path):
    import os
    import subprocess
    import sys

    from keras_s2s import cli

    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    missing = str(tmp_path / "no-run")

    command = [sys.executable, "-m", "keras_s2s.cli", "evaluate", "--model", missing]
    quiet = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert (
        quiet.returncode == 2
        and f"keras-s2s: error: model card not found: {missing}" in quiet.stderr
    )
    start_up = [
        line
        for line in quiet.stderr.splitlines()
        if line[:5] in ("I0000", "W0000", "E0000") or "absl::InitializeLog" in line
    ]
    assert start_up == [], "TensorFlow's C++ start-up lines are hidden"
    assert cli._parser().parse_args(["--verbose", "list"]).verbose, (
        "--verbose leaves TensorFlow's lines on"
    )
