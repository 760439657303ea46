"""Before/after of the speed levers, measured in one run.

Each zoo architecture (demo card, card batch size) is built four times:
float32 and mixed_bfloat16, each with the levers off (Keras's Dropout and
its LSTM/GRU loop, as before they existed) and on (the defaults: 16-bit
dropout draws, the hoisted input projection, Tacotron 2's decoder LSTMs as
`LoopLSTMCell`s). The four train the same
synthetic batch through `fit()`, timed interleaved (median of all steps).
The levers are switched off by swapping the two functions they go through
while a model is traced, so "off" runs exactly Keras's code.

    python benchmarks/bench_levers.py
    python benchmarks/bench_levers.py --models gnmt deepspeech2 --repeats 5
"""

from __future__ import annotations

import contextlib
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from keras_s2s.layers import dropout, recurrent  # noqa: E402

from bench_speed import interleaved_medians, measure_each_model  # noqa: E402

VARIANTS = [("float32", False), ("float32", True), ("mixed_bfloat16", False), ("mixed_bfloat16", True)]


@contextlib.contextmanager
def levers(enabled: bool):
    """With `enabled=False`, zoo layers run Keras's own dropout and recurrence while traced inside."""
    if enabled:
        yield
        return
    saved = dropout.drop, recurrent._hoisting_applies, recurrent._cell_hoisting_applies
    dropout.drop = lambda x, rate, seed: tf.nn.experimental.stateless_dropout(x, rate, seed=seed)
    recurrent._hoisting_applies = lambda layer, training: False
    recurrent._cell_hoisting_applies = lambda cell, training: False
    try:
        yield
    finally:
        dropout.drop, recurrent._hoisting_applies, recurrent._cell_hoisting_applies = saved


def measure(architecture: str, args) -> dict:
    variants = {(policy, enabled): dict(precision=policy, context=lambda enabled=enabled: levers(enabled))
                for policy, enabled in VARIANTS}
    return interleaved_medians(architecture, variants, args)


def main() -> None:
    results = measure_each_model(measure, __doc__)
    print("\nSeconds per step (median), levers off -> on, and the speed-ups (all measured in this run):")
    print(f"{'model':12s} {'fp32 off':>9s} {'fp32 on':>8s} {'bf16 off':>9s} {'bf16 on':>8s} {'on/off fp32':>12s} "
          f"{'on/off bf16':>12s} {'bf16/fp32 off':>14s} {'bf16/fp32 on':>13s}")
    for name, r in results.items():
        f0, f1 = r["float32", False], r["float32", True]
        b0, b1 = r["mixed_bfloat16", False], r["mixed_bfloat16", True]
        print(f"{name:12s} {f0:9.3f} {f1:8.3f} {b0:9.3f} {b1:8.3f} {f0 / f1:11.2f}x {b0 / b1:11.2f}x "
              f"{f0 / b0:13.2f}x {f1 / b1:12.2f}x")


if __name__ == "__main__":
    main()
