"""Where keras-s2s keeps generated data and downloads: `KERAS_S2S_HOME`, default `~/.keras/keras_s2s`."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The cache directory (created on first use).

    Example:
        >>> home() / "demo-speech"
    """
    path = Path(os.environ.get("KERAS_S2S_HOME") or Path.home() / ".keras" / "keras_s2s")
    path.mkdir(parents=True, exist_ok=True)
    return path


def zoo_dir() -> Path:
    """The folder of the zoo's YAML cards, with the shipped preset archives in `presets/`.

    `zoo/` at the top of a source checkout (also what an editable install
    sees); inside an installed wheel the same files are `keras_s2s/zoo_cards/`.

    Example:
        >>> sorted(p.name for p in zoo_dir().glob("gnmt*.yaml"))
        ['gnmt.yaml', 'gnmt_demo.yaml']
    """
    package = Path(__file__).resolve().parent
    checkout = package.parent / "zoo"
    if (package.parent / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    return package / "zoo_cards"
