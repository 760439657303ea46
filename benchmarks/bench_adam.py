"""Adam's update alone, Keras's against the zoo's fused kernel, at every card's parameter sizes.

For each card, the model is built (not trained) and two copies of its
trainable weights get one Adam update per call from the same random
gradients: once with `keras.optimizers.Adam` (about ten element-wise
kernels per variable) and once with the zoo's `Adam` (`FusedAdamUpdate`:
`tf.raw_ops.ResourceApplyAdam`, one kernel per variable). Timed
interleaved in one run (median); printed: seconds per update of each and
their ratio (compare with the card's step time in bench_speed.py).

    python benchmarks/bench_adam.py --cards gnmt transformer convs2s
    python benchmarks/bench_adam.py --cards gnmt_demo transformer_demo --repeats 20
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from benchlib import interleaved_medians  # noqa: E402

from keras_s2s import zoo  # noqa: E402
from keras_s2s.optimizers import Adam  # noqa: E402


def _update_function(optimizer, gradients, weights):
    return tf.function(lambda: optimizer.apply(gradients, weights))


def update_functions(card: str) -> tuple[dict, int]:
    """{"keras": fn, "fused": fn}, each applying one Adam update to its own copy of the card's weights;
    and the number of parameters."""
    model = zoo.load(card, precision="float32", strategy="default")
    shapes = [tuple(w.shape) for w in model.trainable_weights]
    del model
    keras.backend.clear_session()
    gradients = [tf.random.normal(shape) for shape in shapes]
    functions = {}
    for name, optimizer in (("keras", keras.optimizers.Adam(1e-4)), ("fused", Adam(1e-4))):
        weights = [keras.Variable(tf.random.normal(shape)) for shape in shapes]
        optimizer.build(weights)
        functions[name] = _update_function(optimizer, gradients, weights)
    return functions, sum(int(tf.reduce_prod(shape)) for shape in shapes)


def measure(card: str, repeats: int) -> dict:
    functions, params = update_functions(card)
    return {"params": params, **interleaved_medians(functions, repeats)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", nargs="+", default=["gnmt", "transformer", "convs2s"])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(f"{'card':18s} {'parameters':>12s} {'keras s':>8s} {'fused s':>8s} {'keras/fused':>12s}")
    for card in args.cards:
        r = measure(card, args.repeats)
        print(
            f"{card:18s} {r['params']:12,d} {r['keras']:8.3f} {r['fused']:8.3f} {r['keras'] / r['fused']:11.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
