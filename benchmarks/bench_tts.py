"""Speech synthesis, in one run: Tacotron 2 training step time, float32 vs mixed_bfloat16.

Both policies train the same card on the same batch (random character ids
and log-mel frames of the demo's shape), timed interleaved (median of
`repeats` rounds of `steps` steps each), so that the machine's drift hits
both alike. Also inference speed: decoder steps per second, free-running.

    python benchmarks/bench_tts.py                          # tacotron2_demo, batch 16 x 2 s
    python benchmarks/bench_tts.py --card tacotron2 --batch 4 --seconds 2
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from benchlib import interleaved_step_times  # noqa: E402

from keras_s2s import zoo  # noqa: E402

POLICIES = ("float32", "mixed_bfloat16")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--card", default="tacotron2_demo")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="audio per utterance (80 frames/s)"
    )
    parser.add_argument("--characters", type=int, default=40)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    models = {}
    for policy in POLICIES:
        keras.utils.set_random_seed(0)
        models[policy] = zoo.load(args.card, precision=policy, strategy="default")
    r = models["float32"].reduction_factor
    frames = int(args.seconds * 80) // r * r
    mel = rng.normal(-4.0, 2.0, size=(args.batch, frames, models["float32"].num_mels)).astype(
        "float32"
    )
    vocab = models["float32"].vocabulary.vocab_size
    inputs = {
        "text": rng.integers(1, vocab, (args.batch, args.characters)).astype("int32"),
        "mel": mel,
        "mel_lengths": np.full(args.batch, frames, "int32"),
    }
    medians = interleaved_step_times(models, inputs, mel, args.steps, args.repeats)

    text = ["the quick brown fox jumps over the lazy dog"] * args.batch
    inference = {}
    for policy, model in models.items():
        model.infer(text, max_decoder_steps=20)  # trace
        start = time.perf_counter()
        model.infer(text, max_decoder_steps=100)
        inference[policy] = 100 / (time.perf_counter() - start)

    print(
        f"\nTacotron 2 ({args.card}, {models['float32'].count_params():,} parameters), batch {args.batch} x "
        f"{frames} frames (r={r}, {frames // r} decoder steps) x {args.characters} characters; median of "
        f"{args.repeats} x {args.steps} interleaved steps"
    )
    print(f"{'policy':15s} {'s/step':>7s} {'vs fp32':>8s} {'inference steps/s':>18s}")
    for policy in POLICIES:
        print(
            f"{policy:15s} {medians[policy]:7.3f} {medians['float32'] / medians[policy]:7.2f}x "
            f"{inference[policy]:18.1f}"
        )


if __name__ == "__main__":
    main()
