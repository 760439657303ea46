"""`pip install .` (not editable) into a fresh virtual environment ships the zoo cards."""

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv_and_load_from_elsewhere(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # TensorFlow & co. come from this interpreter's site-packages (no network needed, and no .pth hooks such
    # as an editable install of keras_s2s); keras_s2s itself comes from the wheel built here
    venv_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(venv_site, "_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import keras_s2s, pathlib;"
        "m = keras_s2s.zoo.load('gnmt', num_layers=2, units=8, vocab_size=50, precision='float32');"
        "print(pathlib.Path(keras_s2s.__file__).resolve());"
        "print(m.count_params(), keras_s2s.zoo.list_models())"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    result = subprocess.run(
        [str(python), "-c", code],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    location, summary = result.stdout.strip().splitlines()[-2:]
    assert str(venv.resolve()) in location, (
        f"imported from {location}, not from the installed wheel"
    )
    assert "gnmt" in summary and int(summary.split()[0]) > 0
    scripts = venv / "bin" / "keras-s2s"
    listed = subprocess.run(
        [str(scripts), "list"], cwd=elsewhere, capture_output=True, text=True, timeout=300, env=env
    )
    assert listed.returncode == 0 and "gnmt " in listed.stdout, listed.stderr
