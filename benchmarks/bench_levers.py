"""Before/after of the speed levers, measured in one run.

Each zoo architecture (demo card, card batch size) is built four times:
float32 and mixed_bfloat16, each with the levers off (Keras's Dropout and
its LSTM/GRU loop, as before they existed) and on (the defaults: 16-bit
dropout draws, the hoisted input projection, Tacotron 2's decoder LSTMs as
`LoopLSTMCell`s, Adam's update as one fused kernel per variable, the
speech recognizers' CTC loss from TensorFlow's CTC kernel);
`--off` names the levers to switch off, to measure one alone. The four
train the same synthetic batch through `fit()`, timed interleaved (median
of all steps). The levers are switched off by swapping the functions they
go through while a model is traced (and its optimizer built), so "off"
runs exactly Keras's code.

    python benchmarks/bench_levers.py
    python benchmarks/bench_levers.py --models gnmt deepspeech2 --repeats 5
    python benchmarks/bench_levers.py --off fused-adam --models transformer
"""

from __future__ import annotations

import contextlib
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_speed import interleaved_medians, measure_each_model  # noqa: E402

from keras_s2s import optimizers  # noqa: E402
from keras_s2s.layers import dropout, recurrent  # noqa: E402
from keras_s2s.models import speech_to_text  # noqa: E402

VARIANTS = [
    ("float32", False),
    ("float32", True),
    ("mixed_bfloat16", False),
    ("mixed_bfloat16", True),
]


def _keras_ctc_loss(labels, logits, logit_lengths):
    label_lengths = keras.ops.sum(keras.ops.cast(labels != 0, "int32"), axis=1)
    return keras.ops.ctc_loss(labels, logits, label_lengths, logit_lengths, mask_index=0)


def _keras_adam_build(self, variables):
    keras.optimizers.Adam.build(self, variables)


def _keras_adam_update_step(self, gradient, variable, learning_rate):
    keras.optimizers.Adam.update_step(self, gradient, variable, learning_rate)


# lever -> the (owner, attribute, Keras's own behaviour) swaps that switch it off
LEVERS = {
    "dropout": [
        (
            dropout,
            "drop",
            lambda x, rate, seed: tf.nn.experimental.stateless_dropout(x, rate, seed=seed),
        )
    ],
    "hoisting": [
        (recurrent, "_hoisting_applies", lambda layer, training: False),
        (recurrent, "cell_hoisting_applies", lambda cell, training: False),
    ],
    "ctc-kernel": [(speech_to_text, "ctc_loss", _keras_ctc_loss)],
    "fused-adam": [
        (optimizers.FusedAdamUpdate, "build", _keras_adam_build),
        (optimizers.FusedAdamUpdate, "update_step", _keras_adam_update_step),
    ],
}


@contextlib.contextmanager
def levers(enabled: bool, which=tuple(LEVERS)):
    """With `enabled=False`, zoo models traced inside run Keras's own code for the levers named in `which`."""
    swaps = [] if enabled else [swap for name in which for swap in LEVERS[name]]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in swaps]
    for owner, name, replacement in swaps:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def measure(architecture: str, args) -> dict:
    which = args.off or tuple(LEVERS)
    variants = {
        (policy, enabled): dict(
            precision=policy, context=lambda enabled=enabled: levers(enabled, which)
        )
        for policy, enabled in VARIANTS
    }
    return interleaved_medians(architecture, variants, args)


def main() -> None:
    results = measure_each_model(
        measure,
        __doc__,
        extra_arguments=lambda parser: parser.add_argument(
            "--off",
            nargs="+",
            choices=list(LEVERS),
            help="switch off only these levers (default: all)",
        ),
    )
    print(
        "\nSeconds per step (median), levers off -> on, and the speed-ups (all measured in this run):"
    )
    print(
        f"{'model':12s} {'fp32 off':>9s} {'fp32 on':>8s} {'bf16 off':>9s} {'bf16 on':>8s} {'on/off fp32':>12s} "
        f"{'on/off bf16':>12s} {'bf16/fp32 off':>14s} {'bf16/fp32 on':>13s}"
    )
    for name, r in results.items():
        f0, f1 = r["float32", False], r["float32", True]
        b0, b1 = r["mixed_bfloat16", False], r["mixed_bfloat16", True]
        print(
            f"{name:12s} {f0:9.3f} {f1:8.3f} {b0:9.3f} {b1:8.3f} {f0 / f1:11.2f}x {b0 / b1:11.2f}x "
            f"{f0 / b0:13.2f}x {f1 / b1:12.2f}x"
        )


if __name__ == "__main__":
    main()
