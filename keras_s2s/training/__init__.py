"""A whole training run, as `keras-s2s train` does it: `train`, `evaluate_run`, `average_checkpoints`
and `load_model` (the runner), with the callbacks it trains with (backups, the best checkpoint, the
time limit, the non-finite guard) and the memory check before it starts.

The names load on first use.

Example:
    >>> from keras_s2s.training import evaluate_run, train
    >>> train("gnmt_demo", data="demo", out="runs/gnmt", steps=200)["bleu"]
    >>> evaluate_run("runs/gnmt", beam_width=4)["bleu"]
"""

from keras_s2s.backend import lazy_attributes

_PUBLIC = {
    name: "keras_s2s.training.runner"
    for name in ("average_checkpoints", "evaluate_run", "load_model", "train")
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, _PUBLIC)
