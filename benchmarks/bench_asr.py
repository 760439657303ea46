"""Speech recognition, in one run:

* feature extraction throughput: librosa + numpy vs our `tf.signal`
  extractor, eager and in a graph (as `tf.data` runs it), one utterance at a time;
* what each training augmentation of a card (default: jasper_english's) costs
  the input pipeline, alone and all together, beside the extraction itself;
* with `--corpus DIR` (a `keras-s2s speech-corpus` folder): the card's training
  step on real batches with its augmentations, without each costly one, and
  without any, timed interleaved (on 2 cores the input pipeline and the model
  share the CPU, so what augmentation costs shows in the step time);
* training step time of DeepSpeech2, Wave2Letter+ and Jasper at their demo
  sizes, float32 vs mixed_bfloat16, timed interleaved, medians;
* peak accelerator memory per configuration where TensorFlow reports it
  (GPUs); on CPUs TensorFlow does not track allocations, so it is omitted.

    python benchmarks/bench_asr.py
    python benchmarks/bench_asr.py --models jasper --batch 8 --seconds 2
    python benchmarks/bench_asr.py --augment-card jasper_english --models   # input side only
    python benchmarks/bench_asr.py --models --corpus english/corpus \
        --extra-augment '{"pitch_semitones": [-3, 3]}'                    # + steps on the corpus
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from benchlib import interleaved_step_times, median_seconds  # noqa: E402

from keras_s2s import zoo  # noqa: E402
from keras_s2s.audio.augment import augment_audio, augment_features, check_augment  # noqa: E402
from keras_s2s.audio.features import FeatureExtractor, librosa_features  # noqa: E402
from keras_s2s.data.batches import Batching
from keras_s2s.data.speech import (  # noqa: E402
    make_speech_dataset,
    read_speech_splits,
    usable_utterances,
)

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


def one_augmentation_each(settings: dict) -> dict[str, dict]:
    """Each augmentation of a card's `data.augment` alone (a range with its probability)."""
    groups = {
        "speed": ("speed",),
        "pitch": ("pitch_semitones",),
        "vtlp": ("vtlp",),
        "reverb": ("reverb_rt60", "reverb_probability"),
        "band limit": ("band_limit_probability",),
        "codec": ("codec_probability",),
        "noise": ("noise_snr_db",),
        "specaugment": ("freq_masks", "freq_mask_width", "time_masks", "time_mask_width"),
    }
    return {
        name: {key: settings[key] for key in keys if key in settings}
        for name, keys in groups.items()
        if any(key in settings for key in keys)
    }


def augmentation_cost(clips: list[np.ndarray], settings: dict, repeats: int) -> dict:
    """Utterances/s of extraction after no augmentation, each one alone, and all of them: the
    augmentations in NumPy, the features traced, as `tf.data` runs them."""
    extractor = FeatureExtractor(kind="logmel", num_features=64)
    variants = {"none (extraction only)": {}, **one_augmentation_each(settings), "all": settings}
    graph = tf.function(
        lambda audio: extractor(audio, training=True),
        input_signature=[tf.TensorSpec([None], tf.float32)],
    )
    graph(tf.constant(clips[0]))  # trace
    rng, rates = np.random.default_rng(0), {}
    for name, chosen in variants.items():
        chosen = check_augment(dict(chosen))

        def pipeline(audio, chosen=chosen):
            audio = augment_audio(audio, chosen, rng=rng) if chosen else audio
            features = graph(tf.constant(audio)).numpy()
            return augment_features(features, chosen, rng) if chosen else features

        run = lambda pipeline=pipeline: [pipeline(c) for c in clips]  # noqa: E731
        rates[name] = len(clips) / median_seconds(run, repeats)
    return rates


def corpus_step_times(card_name: str, corpus: str, settings: dict, steps: int, repeats: int):
    """Median seconds per training step of the card on the corpus's batches with `settings`,
    without each costly augmentation (pitch, VTLP), and without any; timed interleaved."""
    card = zoo.get_card(card_name)
    costly = {"pitch": ("pitch_semitones",), "vtlp": ("vtlp",)}
    variants = {"all": settings}
    for name, keys in costly.items():
        if any(key in settings for key in keys):
            variants[f"all but {name}"] = {k: v for k, v in settings.items() if k not in keys}
    variants["none"] = {}
    model = zoo.load(card_name)
    # the corpus is read (and every clip's duration checked) once; each variant only maps it
    train, _, _ = read_speech_splits(corpus, num_valid=0, num_test=0)
    usable = usable_utterances(
        train, model.vocabulary, card.data["min_duration"], card.data["max_duration"]
    )
    batches = {}
    for name, chosen in variants.items():
        dataset = make_speech_dataset(
            usable,
            model.extractor,
            model.vocabulary,
            augment=chosen,
            batching=Batching(batch_size=card.data["batch_size"], repeat=True),
        )
        batches[name] = iter(dataset)
        model.train_on_batch(*next(batches[name]))  # trace this batch shape family
    times = {name: [] for name in variants}
    for _ in range(repeats):
        for name, batch in batches.items():
            start = time.perf_counter()
            for _ in range(steps):
                model.train_on_batch(*next(batch))
            times[name].append((time.perf_counter() - start) / steps)
    return {name: float(np.median(values)) for name, values in times.items()}


def peak_memory_mb() -> float | None:
    if not tf.config.list_physical_devices("GPU"):
        return None
    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="*", default=list(CARDS), choices=list(CARDS))
    parser.add_argument("--augment-card", default="jasper_english",
                        help="the card whose data.augment settings are timed")  # fmt: skip
    parser.add_argument("--extra-augment", type=json.loads, default={},
                        help="JSON settings added to the card's augmentation")  # fmt: skip
    parser.add_argument("--corpus", help="a speech corpus folder: time the card's steps on it")
    parser.add_argument("--corpus-steps", type=int, default=20, help="steps per timed stretch")
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
    augment = {**zoo.get_card(args.augment_card).data.get("augment", {}), **args.extra_augment}
    augmenting = augmentation_cost(clips, augment, args.repeats)
    corpus_steps = args.corpus and corpus_step_times(
        args.augment_card, args.corpus, augment, args.corpus_steps, args.repeats
    )

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
        f"\nTraining augmentation of {args.augment_card} (graph, utterances/s, cost vs extraction):"
    )
    plain = augmenting["none (extraction only)"]
    for name, rate in augmenting.items():
        print(f"  {name:34s} {rate:8.1f} utterances/s  {plain / rate:5.2f}x the time")
    audio_per_second = augmenting["all"] * args.seconds
    print(f"  all together: {audio_per_second:.0f} s of audio per second of one core's time")
    if corpus_steps:
        print(
            f"\nTraining steps of {args.augment_card} on {args.corpus}, median of {args.repeats} "
            f"x {args.corpus_steps} interleaved steps:"
        )
        for name, seconds in corpus_steps.items():
            print(f"  {name:34s} {seconds:6.3f} s/step  {corpus_steps['all'] / seconds:5.2f}x")
    if not rows:
        return
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
