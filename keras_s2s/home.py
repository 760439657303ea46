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
