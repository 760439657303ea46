"""GNMT, Transformer and ConvS2S at their demo sizes, in one run:

* training throughput (target tokens/s) in float32, mixed_bfloat16, and each
  with XLA (jit_compile=True);
* decoding throughput (sentences/s), greedy vs beam 4;
* utilisation: the model's training FLOP/s divided by the FLOP/s of a large
  matmul in the same dtype, measured in the same run.

Training configurations are timed interleaved (A/B/C/D/A/B/C/D...) and
reported as medians; compare the ratios, not the absolute numbers (this
machine is shared and absolute times drift).

Model FLOPs are counted analytically (`flops.py`): 6 x (weights applied per
token) x tokens for the dense/convolution/recurrent matmuls (2 forward, 4
backward), plus 3 x the forward FLOPs of attention scores and weighted sums.

    python benchmarks/bench_nmt.py
    python benchmarks/bench_nmt.py --models transformer --batch 32 --repeats 5
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from benchlib import interleaved_step_times, matmul_gflops, median_seconds  # noqa: E402
from flops import training_flops  # noqa: E402

from keras_s2s import zoo  # noqa: E402

CARDS = {"gnmt": "gnmt_demo", "transformer": "transformer_demo", "convs2s": "convs2s_demo"}
CONFIGS = [
    ("float32", False),
    ("mixed_bfloat16", False),
    ("float32", True),
    ("mixed_bfloat16", True),
]


def build(name: str, policy: str, xla: bool, vocab: int) -> keras.Model:
    keras.utils.set_random_seed(0)
    return zoo.load(
        CARDS[name], vocab_size=vocab, precision=policy, strategy="default", jit_compile=xla
    )


def time_decoding(model, source, max_length: int, repeats: int) -> dict:
    result = {}
    for width in (1, 4):
        run = lambda: model.generate(source, max_length=max_length, beam_width=width)  # noqa: E731, B023
        run()  # trace
        result[width] = len(source) / median_seconds(run, repeats)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=list(CARDS), choices=list(CARDS))
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decode-batch", type=int, default=32)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    ids = rng.integers(4, args.vocab, (args.batch, args.length)).astype("int32")
    batch_data = ({"source": ids, "target_in": ids}, ids)
    decode_source = ids[: args.decode_batch].copy()
    decode_source[:, -1] = 3  # EOS
    peak = {"float32": matmul_gflops("float32"), "mixed_bfloat16": matmul_gflops("bfloat16")}
    tokens = args.batch * args.length
    rows, decoding = [], {}
    for name in args.models:
        models = {config: build(name, *config, args.vocab) for config in CONFIGS}
        seconds = interleaved_step_times(models, *batch_data, args.steps, args.repeats)
        flops = training_flops(
            name, models[CONFIGS[0]], {"batch": args.batch, "length": args.length}
        )
        for (policy, xla), step in seconds.items():
            rows.append(
                (
                    name,
                    policy,
                    xla,
                    step,
                    tokens / step,
                    seconds[("float32", False)] / step,
                    flops / step / 1e9,
                    flops / step / 1e9 / peak[policy],
                )
            )
        # untrained models rarely stop early: every sentence decodes `length` steps, for both widths
        decoding[name] = time_decoding(
            models[("mixed_bfloat16", False)], decode_source, args.length, args.repeats
        )
        del models
        keras.backend.clear_session()

    print(
        f"\nTraining: batch {args.batch} x {args.length} tokens, vocab {args.vocab}; "
        f"median of {args.repeats} x {args.steps} interleaved steps"
    )
    print(
        f"{'model':12s} {'policy':15s} {'XLA':4s} {'s/step':>7s} {'tokens/s':>9s} {'vs fp32':>8s} "
        f"{'GFLOP/s':>8s} {'util.':>6s}"
    )
    for name, policy, xla, step, rate, ratio, gflops, util in rows:
        print(
            f"{name:12s} {policy:15s} {'yes' if xla else 'no':4s} {step:7.3f} {rate:9.0f} {ratio:7.2f}x "
            f"{gflops:8.1f} {util:6.1%}"
        )
    print(
        f"\nmatmul 2048^3: float32 {peak['float32']:.0f} GFLOP/s, bfloat16 {peak['mixed_bfloat16']:.0f} GFLOP/s "
        "(util. = model GFLOP/s / matmul GFLOP/s of the same dtype)"
    )
    print(f"\nDecoding (mixed_bfloat16, {args.decode_batch} sentences, {args.length} steps each):")
    print(f"{'model':12s} {'greedy sent/s':>14s} {'beam 4 sent/s':>14s} {'beam/greedy':>12s}")
    for name, result in decoding.items():
        print(f"{name:12s} {result[1]:14.1f} {result[4]:14.1f} {result[4] / result[1]:11.2f}x")


if __name__ == "__main__":
    main()
