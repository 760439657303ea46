"""GNMT training step time: float32 vs mixed_bfloat16 vs mixed_float16, and
our zoo GNMT vs a hand-written plain-Keras model of the same dimensions.

Everything is measured in one run, interleaved (A/B/A/B...), and reported as
the median of the repeats; the printed ratios are what to compare (this
machine is shared and absolute times drift).

    python benchmarks/bench_precision.py                 # default size
    python benchmarks/bench_precision.py --units 512 --layers 2 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from benchlib import matmul_gflops  # noqa: E402

from keras_s2s import zoo  # noqa: E402


def handwritten_gnmt(vocab: int, layers: int, units: int) -> keras.Model:
    """The same layers as the zoo GNMT, written as a plain functional Keras model."""
    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    x = keras.layers.Embedding(vocab, units)(source)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(x)
    for i in range(1, layers):
        out = keras.layers.LSTM(units, return_sequences=True)(x)
        x = keras.layers.Add()([out, x]) if i >= 2 else out
    memory = x
    y = keras.layers.Embedding(vocab, units)(target_in)
    for i in range(layers):
        out = keras.layers.LSTM(units, return_sequences=True)(y)
        y = keras.layers.Add()([out, y]) if i >= 2 else out
    query = keras.layers.Dense(units, use_bias=False)(y)
    keys = keras.layers.Dense(units, use_bias=False)(memory)
    context = keras.layers.AdditiveAttention(use_scale=True)([query, memory, keys])
    hidden = keras.layers.Dense(units, activation="tanh")(keras.layers.Concatenate()([y, context]))
    logits = keras.layers.Dense(vocab, dtype="float32")(hidden)
    model = keras.Model({"source": source, "target_in": target_in}, logits)
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def build(kind: str, policy: str, args) -> keras.Model:
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    if kind == "handwritten":
        return handwritten_gnmt(args.vocab, args.layers, args.units)
    return zoo.load(
        "gnmt",
        vocab_size=args.vocab,
        num_layers=args.layers,
        units=args.units,
        dropout=0.0,
        precision=policy,
        strategy="default",
        clipnorm=None,
    )


def make_step(model, batch):
    inputs, labels = batch
    model.train_on_batch(inputs, labels)  # traces and warms up
    model.train_on_batch(inputs, labels)

    def step():
        start = time.perf_counter()
        for _ in range(args.steps):
            model.train_on_batch(inputs, labels)
        return (time.perf_counter() - start) / args.steps

    return step


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=128, help="the gnmt card's batch size")
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--no-float16", action="store_true", help="skip mixed_float16 (slow on CPUs)"
    )
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    ids = rng.integers(4, args.vocab, (args.batch, args.length)).astype("int32")
    batch = ({"source": ids, "target_in": ids}, ids)
    variants = [
        ("zoo", "float32"),
        ("zoo", "mixed_bfloat16"),
        ("handwritten", "float32"),
        ("handwritten", "mixed_bfloat16"),
    ]
    if not args.no_float16:
        variants.append(("zoo", "mixed_float16"))
    steps = {v: make_step(build(*v, args), batch) for v in variants}
    times = {v: [] for v in variants}
    for _ in range(args.repeats):  # interleaved: A/B/C/.../A/B/C
        for v in variants:
            times[v].append(steps[v]())
    median = {v: statistics.median(t) for v, t in times.items()}
    flops = {"float32": matmul_gflops("float32"), "bfloat16": matmul_gflops("bfloat16")}

    print(
        f"\nGNMT {args.layers}+{args.layers} layers x {args.units} units, vocab {args.vocab}, "
        f"batch {args.batch} x {args.length} tokens; median of {args.repeats} x {args.steps} steps"
    )
    print(f"{'model':12s} {'policy':16s} {'s/step':>8s} {'tokens/s':>9s}")
    for (kind, policy), seconds in median.items():
        print(f"{kind:12s} {policy:16s} {seconds:8.3f} {args.batch * args.length / seconds:9.0f}")
    f32, bf16 = median[("zoo", "float32")], median[("zoo", "mixed_bfloat16")]
    print(f"\nspeed-up mixed_bfloat16 / float32 (zoo GNMT):       {f32 / bf16:.2f}x")
    if ("zoo", "mixed_float16") in median:
        print(
            f"speed-up mixed_float16 / float32 (zoo GNMT):        {f32 / median[('zoo', 'mixed_float16')]:.2f}x"
        )
    for policy in ("float32", "mixed_bfloat16"):
        ratio = median[("zoo", policy)] / median[("handwritten", policy)]
        print(f"zoo GNMT step time / hand-written ({policy:14s}): {ratio:.2f}")
    print(
        f"2048^3 matmul: float32 {flops['float32']:.0f} GFLOP/s, bfloat16 {flops['bfloat16']:.0f} GFLOP/s "
        f"({flops['bfloat16'] / flops['float32']:.2f}x)"
    )
