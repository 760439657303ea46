"""The README's commands and quickstart stay true."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_ci_runs_exactly_the_readmes_test_command():
    test_command = next(
        line for block in fenced("bash") for line in block.splitlines() if "pytest" in line
    )
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == test_command


def test_main_job_command_names_a_zoo_model_and_the_demo_data():
    from keras_s2s import zoo

    main_job = next(
        line for block in fenced("bash") for line in block.splitlines() if "keras-s2s train" in line
    )
    model = main_job.split("keras-s2s train")[1].split()[0]
    assert model in zoo.list_models() and "--data demo" in main_job


@pytest.mark.slow
def test_python_quickstart_runs_verbatim(tmp_path, monkeypatch, capsys):
    quickstart = fenced("python")[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(quickstart, "README.md quickstart", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.strip(), "the quickstart prints its translations"


def test_the_documents_link_only_to_files_in_the_repository():
    broken = []
    for document in [
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]:
        for target in re.findall(
            r"\]\(([^)#\s]+)(?:#[^)]*)?\)", document.read_text(encoding="utf-8")
        ):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (document.parent / target).resolve()
            if not path.exists() or ROOT.resolve() not in path.parents:
                broken.append(f"{document.relative_to(ROOT)} -> {target}")
    assert broken == []
