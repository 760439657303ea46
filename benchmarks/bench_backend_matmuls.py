"""The Transformer demo step's matmuls on each backend's CPU kernels: TensorFlow (oneDNN) against JAX (XLA:CPU).

Every dense layer and attention product of `transformer_demo` at `bench_backends.py`'s batch (96 x 24
tokens a side), forward and both gradients, float32, each compiled alone (`tf.function` / `jax.jit`)
and timed in turn, TensorFlow then JAX, in one process; the step's sum weighs each shape by how often
one training step runs it. It tells how much of the JAX/TensorFlow step-time gap is the kernels.

    python benchmarks/bench_backend_matmuls.py --repeats 20
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from benchlib import interleaved_medians  # noqa: E402

BATCH, LENGTH, D_MODEL, NUM_HEADS, FFN, VOCAB, LAYERS = 96, 24, 256, 4, 1024, 2000, 3
TOKENS, BATCH_HEADS, HEAD_DIM = BATCH * LENGTH, BATCH * NUM_HEADS, D_MODEL // NUM_HEADS
ATTENTION_BLOCKS = 3 * LAYERS  # encoder self, decoder self, decoder cross
# (name, lhs shape, rhs shape, times per step): a batched shape is [batch, rows, inner] @ [batch, inner, cols]
SHAPES = [
    ("attention projections", (TOKENS, D_MODEL), (D_MODEL, D_MODEL), 4 * ATTENTION_BLOCKS),
    ("feed-forward in", (TOKENS, D_MODEL), (D_MODEL, FFN), 2 * LAYERS),
    ("feed-forward out", (TOKENS, FFN), (FFN, D_MODEL), 2 * LAYERS),
    ("output logits", (TOKENS, D_MODEL), (D_MODEL, VOCAB), 1),
    (
        "attention scores",
        (BATCH_HEADS, LENGTH, HEAD_DIM),
        (BATCH_HEADS, HEAD_DIM, LENGTH),
        ATTENTION_BLOCKS,
    ),
    (
        "attention values",
        (BATCH_HEADS, LENGTH, LENGTH),
        (BATCH_HEADS, LENGTH, HEAD_DIM),
        ATTENTION_BLOCKS,
    ),
]


def tf_runner(lhs: np.ndarray, rhs: np.ndarray):
    """`fn()` running forward and both gradients of lhs @ rhs in a `tf.function`."""
    a, b = tf.constant(lhs), tf.constant(rhs)

    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            loss = tf.reduce_sum(tf.matmul(a, b))
        return tape.gradient(loss, [a, b])

    return lambda: [g.numpy() for g in step(a, b)]


def jax_runner(lhs: np.ndarray, rhs: np.ndarray):
    """`fn()` running forward and both gradients of lhs @ rhs under `jax.jit`."""
    a, b = jnp.asarray(lhs), jnp.asarray(rhs)
    step = jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.matmul(a, b)), argnums=(0, 1)))
    return lambda: jax.block_until_ready(step(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per shape and backend")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(
        "| matmul | lhs @ rhs | per step | TF ms | JAX ms | JAX / TF |\n| --- | --- | --- | --- | --- | --- |"
    )
    totals = {"tensorflow": 0.0, "jax": 0.0}
    for name, lhs_shape, rhs_shape, count in SHAPES:
        lhs = rng.standard_normal(lhs_shape, dtype=np.float32)
        rhs = rng.standard_normal(rhs_shape, dtype=np.float32)
        seconds = interleaved_medians(
            {"tensorflow": tf_runner(lhs, rhs), "jax": jax_runner(lhs, rhs)},
            args.repeats,
            warmups=2,
        )
        for key in totals:
            totals[key] += count * seconds[key]
        print(
            f"| {name} | {lhs_shape} @ {rhs_shape} | {count} | {seconds['tensorflow'] * 1e3:.2f} | "
            f"{seconds['jax'] * 1e3:.2f} | {seconds['jax'] / seconds['tensorflow']:.2f}x |"
        )
    print(
        f"| **one step's matmuls** | | | {totals['tensorflow'] * 1e3:.1f} | {totals['jax'] * 1e3:.1f} | "
        f"**{totals['jax'] / totals['tensorflow']:.2f}x** |"
    )


if __name__ == "__main__":
    main()
