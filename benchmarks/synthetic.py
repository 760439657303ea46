"""Synthetic training batches for every zoo architecture, shared by the benchmarks (no TensorFlow).

Example:
    >>> inputs, labels, shape, units, unit = synthetic_batch("transformer", model, 64, args, rng)
"""

from __future__ import annotations

import numpy as np
from flops import TEXT

ARCHITECTURES = {  # architecture -> (demo card, full card)
    "gnmt": ("gnmt_demo", "gnmt"),
    "transformer": ("transformer_demo", "transformer"),
    "convs2s": ("convs2s_demo", "convs2s"),
    "deepspeech2": ("deepspeech2_demo", "deepspeech2"),
    "wave2letter": ("wave2letter_demo", "wave2letter"),
    "jasper": ("jasper_demo", "jasper"),
    "tacotron2": ("tacotron2_demo", "tacotron2"),
}


def add_batch_arguments(parser) -> None:
    """The options that shape `synthetic_batch` (shared with bench_levers.py)."""
    parser.add_argument(
        "--models", nargs="+", default=list(ARCHITECTURES), choices=list(ARCHITECTURES)
    )
    parser.add_argument("--length", type=int, default=24, help="tokens per sentence (text)")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="audio per utterance (speech recognition)"
    )
    parser.add_argument(
        "--tts-seconds", type=float, default=2.0, help="audio per utterance (speech synthesis)"
    )
    parser.add_argument("--characters", type=int, default=40, help="characters per sentence (TTS)")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per repeat (demo sizes)")
    parser.add_argument("--repeats", type=int, default=3)


def synthetic_batch(architecture: str, model, batch: int, args, rng):
    """(inputs, labels, shape for the FLOP count, work units per step, unit name)."""
    if architecture in TEXT:
        ids = rng.integers(4, model.vocab_size, (batch, args.length)).astype("int32")
        return (
            {"source": ids, "target_in": ids},
            ids,
            {"batch": batch, "length": args.length},
            batch * args.length,
            "tokens",
        )
    if architecture == "tacotron2":
        r = model.reduction_factor
        frames = int(args.tts_seconds * 80) // r * r
        mel = rng.normal(-4.0, 2.0, (batch, frames, model.num_mels)).astype("float32")
        text = rng.integers(1, model.vocabulary.vocab_size, (batch, args.characters)).astype(
            "int32"
        )
        inputs = {"text": text, "mel": mel, "mel_lengths": np.full(batch, frames, "int32")}
        return (
            inputs,
            mel,
            {"batch": batch, "frames": frames, "characters": args.characters},
            batch * frames,
            "frames",
        )
    frames = int(args.seconds * 100) // 8 * 8
    inputs = {
        "features": rng.normal(size=(batch, frames, model.num_features)).astype("float32"),
        "feature_lengths": np.full(batch, frames, "int32"),
    }
    labels = rng.integers(1, 29, (batch, int(args.seconds * 12))).astype("int32")
    return inputs, labels, {"batch": batch, "frames": frames}, batch * frames, "frames"
