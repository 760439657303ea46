"""The tutorial notebooks run top to bottom, and are stored without outputs."""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.ipynb"))


def test_there_are_notebooks_for_each_family():
    assert {p.stem for p in NOTEBOOKS} >= {
        "translation",
        "mixed_precision_and_distribution",
        "speech_recognition",
        "speech_synthesis",
    }


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    notebook = nbformat.read(path, as_version=4)
    assert all(
        not cell.get("outputs") and not cell.get("execution_count")
        for cell in notebook.cells
        if cell.cell_type == "code"
    ), "stored without outputs"
    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = [
        o
        for cell in notebook.cells
        for o in cell.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    assert os.environ["KERAS_S2S_HOME"] == str(tmp_path / "home")
