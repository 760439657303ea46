"""Recognizer designs at the English corpus's shapes: training-step cost, one run, interleaved.

Each design is a zoo card plus overrides (JSON); every model trains on the
same synthetic batch (BATCH utterances of SECONDS of 64 log-mel frames a
second x 100, transcripts at WORDS_PER_MINUTE), in the card's precision,
timed A/B/C/A/B/C (median of REPEATS x STEPS steps). Printed per design:
weights, output frames a second, seconds a step, utterances a second and
the ratio to the first design (the baseline). The input pipeline
(features and augmentation, `bench_asr.py`) is the same for every design
and not included: this is what the model itself costs.

    python benchmarks/bench_asr_designs.py jasper_english quartznet_english \\
        'quartznet_english:{"block_strides": [1, 1, 1, 1, 1]}' \\
        'quartznet_english:{"block_strides": [2, 2, 1, 1, 1], "pieces": 256}' \\
        --text english/text/world_english_bible.txt

`"pieces": N` trains a SentencePiece vocabulary of N pieces on --text for
that design (subword CTC targets, about 1.5 pieces a word against 6
characters).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from benchlib import interleaved_medians  # noqa: E402

from keras_s2s import zoo  # noqa: E402
from keras_s2s.text import SubwordVocabulary  # noqa: E402


def design(spec: str) -> tuple[str, dict]:
    """`CARD` or `CARD:{"key": value, ...}` -> (card, overrides)."""
    card, _, overrides = spec.partition(":")
    return card, json.loads(overrides) if overrides else {}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "designs", nargs="+", help="CARD or CARD:{JSON overrides}; the first is the baseline"
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=4.8, help="the English corpus's mean")
    parser.add_argument("--words-per-minute", type=float, default=170)
    parser.add_argument("--text", help="text to learn a subword design's pieces from")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    frames = int(args.seconds * 100) // 8 * 8
    inputs = {
        "features": rng.normal(size=(args.batch, frames, 64)).astype("float32"),
        "feature_lengths": np.full(args.batch, frames, "int32"),
    }
    models, labels = {}, {}
    for spec in args.designs:
        card, overrides = design(spec)
        keras.utils.set_random_seed(0)
        pieces = overrides.pop("pieces", None)
        if pieces:
            if not args.text:
                parser.error(f"{spec}: a subword design needs --text to learn its pieces from")
            lines = Path(args.text).read_text(errors="replace").splitlines()[:20000]
            overrides["vocabulary"] = SubwordVocabulary.train(lines, vocab_size=pieces)
            overrides["data.vocabulary"] = "subword"
        models[spec] = model = zoo.load(card, strategy="default", **overrides)
        # characters: about 6 a word with its space; subwords: about 1.5 pieces a word
        per_word = 6.0 if model.vocab_size <= 32 else 1.5
        length = int(args.seconds / 60 * args.words_per_minute * per_word)
        labels[spec] = rng.integers(1, model.vocab_size, (args.batch, length)).astype("int32")

    def steps(spec):
        for _ in range(args.steps):
            models[spec].train_on_batch(inputs, labels[spec])

    runs = {spec: (lambda spec=spec: steps(spec)) for spec in models}
    seconds = {
        spec: total / args.steps
        for spec, total in interleaved_medians(runs, args.repeats, warmups=1).items()
    }
    base = args.designs[0]
    print(
        f"\nbatch {args.batch} x {args.seconds} s ({frames} frames), median of {args.repeats} x "
        f"{args.steps} steps, interleaved"
    )
    print(
        f"{'design':64s} {'weights':>9s} {'frames/s':>8s} {'s/step':>7s} {'utt/s':>6s} {'vs first':>8s}"
    )
    for spec, model in models.items():
        print(
            f"{spec[:64]:64s} {model.count_params() / 1e6:8.2f}M {100 / model.time_reduction:8.1f} "
            f"{seconds[spec]:7.3f} {args.batch / seconds[spec]:6.1f} {seconds[base] / seconds[spec]:7.2f}x"
        )


if __name__ == "__main__":
    main()
