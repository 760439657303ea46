"""Make `import tensorflow` (and tensorflow_text, tf_keras) fail in this process, as on a machine without it.

Import this module before Keras (with KERAS_BACKEND=jax) to run code as it
runs on the GPU machine, which has JAX and no TensorFlow:

    $ KERAS_BACKEND=jax python -c "import tests.no_tensorflow; import keras_s2s.zoo"

`python tests/no_tensorflow.py SCRIPT ARGS...` (or `-m MODULE`, `-c CODE`) runs a script that way.
"""

from __future__ import annotations

import importlib.abc
import runpy
import sys
from pathlib import Path

BLOCKED = ("tensorflow", "tensorflow_text", "tf_keras", "tensorflow_datasets")


class BlockTensorFlow(importlib.abc.MetaPathFinder):
    """A meta-path finder that refuses the TensorFlow packages."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(
                f"No module named {fullname!r} (blocked for this test)", name=fullname
            )
        return None


def install() -> None:
    """Block TensorFlow from now on in this process (idempotent)."""
    if not any(isinstance(finder, BlockTensorFlow) for finder in sys.meta_path):
        sys.meta_path.insert(0, BlockTensorFlow())
    loaded = [name for name in sys.modules if name.split(".")[0] in BLOCKED]
    if loaded:
        raise RuntimeError(f"TensorFlow was imported before the block: {sorted(loaded)[:3]}")


install()

if __name__ == "__main__":
    script, *arguments = sys.argv[1:]
    sys.argv = [script, *arguments]
    if script == "-c":
        sys.argv = ["-c"]
        exec(compile(arguments[0], "<string>", "exec"), {"__name__": "__main__"})
    elif script == "-m":
        module, *arguments = arguments
        sys.argv = [module, *arguments]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, str(Path(script).resolve().parent))  # as `python SCRIPT` does
        runpy.run_path(script, run_name="__main__")
