"""Speech recognition, in one run:

* feature extraction throughput: librosa + numpy vs our `tf.signal`
  extractor, eager and in a graph (as `tf.data` runs it), one utterance at a time;
* training step time of DeepSpeech2, Wave2Letter+ and Jasper at their demo
  sizes, float32 vs mixed_bfloat16, timed interleaved, medians;
* peak accelerator memory per configuration where TensorFlow reports it
  (GPUs); on CPUs TensorFlow does not track allocations, so it is omitted.

    python benchmarks/bench_asr.py
    python benchmarks/bench_asr.py --models jasper --batch 8 --seconds 2
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from benchlib import interleaved_step_times, median_seconds  # noqa: E402

from keras_s2s import zoo  # noqa: E402
from keras_s2s.data.speech_features import FeatureExtractor, librosa_features  # noqa: E402

CARDS = {
    "deepspeech2": "deepspeech2_demo",
    "wave2letter": "wave2letter_demo",
    "jasper": "jasper_demo",
}
POLICIES = ("float32", "mixed_bfloat16")


def feature_throughput(clips: list[np.ndarray], repeats: int) -> dict:
    extractor = FeatureExtractor(kind="logmel", num_features=64, dither=0.0)
    graph = tf.function(extractor.__call__, input_signature=[tf.TensorSpec([None], tf.float32)])
    extractor(tf.constant(clips[0])), graph(tf.constant(clips[0]))  # warm up, trace
    runs = {
        "tf.signal (eager)": lambda: [extractor(tf.constant(c)).numpy() for c in clips],
        "tf.signal (graph, as in tf.data)": lambda: [graph(tf.constant(c)).numpy() for c in clips],
        "librosa + numpy": lambda: [librosa_features(c, extractor) for c in clips],
    }
    return {name: len(clips) / median_seconds(fn, repeats) for name, fn in runs.items()}


def peak_memory_mb() -> float | None:
    if not tf.config.list_physical_devices("GPU"):
        return None
    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=list(CARDS), choices=list(CARDS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each utterance")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    clips = [
        (0.1 * rng.normal(size=int(16000 * args.seconds))).astype("float32") for _ in range(32)
    ]
    features = feature_throughput(clips, args.repeats)

    frames = int(args.seconds * 100) // 8 * 8
    inputs = {
        "features": rng.normal(size=(args.batch, frames, 64)).astype("float32"),
        "feature_lengths": np.full(args.batch, frames, "int32"),
    }
    labels = rng.integers(1, 29, (args.batch, int(args.seconds * 12))).astype("int32")
    rows = []
    for name in args.models:
        models = {}
        for policy in POLICIES:
            keras.utils.set_random_seed(0)
            models[policy] = zoo.load(CARDS[name], precision=policy, strategy="default")
        medians = interleaved_step_times(models, inputs, labels, args.steps, args.repeats)
        for policy in POLICIES:
            rows.append(
                (
                    name,
                    models[policy].count_params(),
                    policy,
                    medians[policy],
                    medians["float32"] / medians[policy],
                    peak_memory_mb(),
                )
            )
        del models
        keras.backend.clear_session()

    print(
        f"\nFeature extraction (log-mel 64, {len(clips)} clips of {args.seconds:.0f} s, median of {args.repeats}):"
    )
    for name, rate in features.items():
        print(f"  {name:34s} {rate:8.1f} utterances/s")
    graph, reference = features["tf.signal (graph, as in tf.data)"], features["librosa + numpy"]
    print(f"  tf.signal in a graph / librosa: {graph / reference:.2f}x")
    print(
        f"\nTraining step: batch {args.batch} x {args.seconds:.0f} s ({frames} frames), "
        f"median of {args.repeats} x {args.steps} interleaved steps"
    )
    print(
        f"{'model':12s} {'params':>10s} {'policy':15s} {'s/step':>7s} {'vs fp32':>8s} {'peak MB':>8s}"
    )
    for name, params, policy, step, ratio, memory in rows:
        shown = f"{memory:8.0f}" if memory is not None else f"{'n/a':>8s}"
        print(f"{name:12s} {params:10,d} {policy:15s} {step:7.3f} {ratio:7.2f}x {shown}")


if __name__ == "__main__":
    main()
