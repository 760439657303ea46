"""Commands about runs: list the zoo, train, evaluate, average checkpoints, export."""

from __future__ import annotations

import os

from keras_s2s.commands.base import (
    COUNT,
    Command,
    add_decoding_flags,
    add_lm_flags,
    count,
    duration,
    given_decoding,
    lm_settings,
    no_arguments,
)
from keras_s2s.config import PRECISIONS, STRATEGIES, parse_override


def _train_arguments(train) -> None:
    train.add_argument("model", help="zoo model name or path to a card .yaml")
    train.add_argument(
        "--data",
        nargs="+",
        help="translation: 'demo', a TSV, two aligned files, a split directory, a folder "
        "`keras-s2s encode` wrote or tfds:NAME/CONFIG; speech: 'demo-speech', a manifest or a directory of manifests; "
        "synthesis: 'demo-tts', an LJSpeech-layout folder, a manifest or a directory of manifests",
    )
    train.add_argument("--precision", choices=PRECISIONS)
    train.add_argument("--strategy", choices=STRATEGIES)
    train.add_argument(
        "--workers",
        help="multi-worker training: host:port of every worker, comma-separated, the "
        "same on each (instead of TF_CONFIG); implies --strategy multiworker",
    )
    train.add_argument(
        "--task-index", type=count(0), help="with --workers: this worker's index (0 = the chief)"
    )
    train.add_argument(
        "--devices",
        help="comma-separated devices for --strategy mirrored or hybrid, "
        "e.g. /gpu:0,/gpu:1 (hybrid pipelining: --set training.time_chunks=4)",
    )
    group = train.add_mutually_exclusive_group()
    group.add_argument("--epochs", type=COUNT)
    group.add_argument("--steps", type=COUNT, help="total training steps (instead of --epochs)")
    train.add_argument(
        "--time-limit",
        type=duration,
        metavar="DURATION",
        help="stop when this much training time is spent, counted over restarts: 25m, 2h, 1h30m "
        "(without --epochs/--steps the run trains until then)",
    )
    train.add_argument(
        "--out", help="run directory (default runs/MODEL); an interrupted run there resumes"
    )
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a card setting, e.g. --set units=256 --set training.learning_rate=0.002",
    )


def _evaluate_arguments(evaluate) -> None:
    evaluate.add_argument(
        "--model",
        required=True,
        help="run directory written by `train`, or a zoo preset NAME:PRESET (jasper_english:english)",
    )
    evaluate.add_argument(
        "--out",
        help="write transcripts or translations and eval JSON here (default: the run directory; "
        "for a preset, nothing is written without it)",
    )
    evaluate.add_argument(
        "--data", nargs="+", help="evaluate on the test split of this data instead"
    )
    add_decoding_flags(evaluate)
    add_lm_flags(evaluate)
    evaluate.add_argument(
        "--grid",
        action="store_true",
        help="translation: score beam widths 1, 4, 8 and length penalties 0.6, 1.0 on the dev "
        "split (decoding-grid.json) and name the best; choose the decoding there, never on test",
    )


def _export_arguments(export) -> None:
    export.add_argument("--model", required=True, help="run directory written by `train`")
    export.add_argument(
        "--format",
        choices=("saved_model", "keras", "ctranslate2"),
        default="saved_model",
        help="saved_model: strings (or audio) in, text out, no keras_s2s needed to serve; "
        "keras: a .keras file; ctranslate2: a CTranslate2 model directory (Transformers)",
    )
    export.add_argument(
        "--out", required=True, help="output path (a folder for saved_model, a .keras file)"
    )
    add_decoding_flags(export, beam_width=4, coverage=False)  # decoding inside the SavedModel
    export.add_argument(
        "--quantization",
        choices=("int8", "int8_float32", "int8_float16", "int16", "float16", "bfloat16"),
        help="ctranslate2: the stored weight type (default float32)",
    )


def _average_arguments(average) -> None:
    average.add_argument(
        "--model", required=True, help="run directory written by `train` (finished or not)"
    )
    picked = average.add_mutually_exclusive_group()
    picked.add_argument(
        "--last", type=COUNT, default=3, help="how many of the latest checkpoints (default 3)"
    )
    picked.add_argument(
        "--best", type=COUNT, help="the N checkpoints with the best validation score instead"
    )
    average.add_argument("--out", required=True, help="new run directory for the averaged model")


def _set_tf_config(args) -> None:
    """--workers / --task-index -> TF_CONFIG (read when the multi-worker strategy is created)."""
    from keras_s2s.distribution.strategies import tf_config_for

    if args.workers is None or args.task_index is None:
        raise ValueError("multi-worker training needs both --workers and --task-index")
    if args.strategy not in (None, "multiworker"):
        raise ValueError(f"--workers runs the multiworker strategy, not --strategy {args.strategy}")
    os.environ["TF_CONFIG"] = tf_config_for(args.workers.split(","), args.task_index)
    args.strategy = "multiworker"


def _overrides(args) -> dict:
    overrides = dict(parse_override(item) for item in args.set)
    if args.precision:
        overrides["training.precision"] = args.precision
    if args.strategy:
        overrides["training.strategy"] = args.strategy
    if getattr(args, "time_limit", None):
        overrides["training.time_limit"] = args.time_limit
    return overrides


def _list_models() -> None:
    """Each zoo card's name and description, read without TensorFlow."""
    from keras_s2s.cards import card_path, list_models, read_card

    for name in list_models():
        raw, _ = read_card(card_path(name))
        print(f"{name:16s} {raw.get('description', '')}")


def _train(args) -> None:
    from keras_s2s.training.runner import train

    if args.workers is not None or args.task_index is not None:
        _set_tf_config(args)
    train(
        args.model,
        data=",".join(args.data) if args.data else None,
        out=args.out,
        epochs=args.epochs,
        steps=args.steps,
        overrides=_overrides(args),
        devices=args.devices.split(",") if args.devices else None,
    )


def _evaluate(args) -> None:
    from keras_s2s.training.runner import evaluate_run

    evaluate_run(
        args.model,
        data=",".join(args.data) if args.data else None,
        out=args.out,
        grid=args.grid,
        **given_decoding(args, **lm_settings(args)),
    )


def _average(args) -> None:
    from keras_s2s.training.runner import average_checkpoints

    average_checkpoints(args.model, args.out, last=args.last, best=args.best)


def _export(args) -> None:
    from keras_s2s import tasks
    from keras_s2s.distribution.runtime import runtime_class
    from keras_s2s.files import atomic_write
    from keras_s2s.training.runner import load_model

    if args.format == "saved_model":
        runtime_class().require_saved_model()
    model = load_model(args.model)
    if args.quantization and args.format != "ctranslate2":
        raise ValueError("--quantization is for --format ctranslate2")
    if args.format == "ctranslate2":
        from keras_s2s.export import export_ctranslate2

        export_ctranslate2(model, args.out, quantization=args.quantization)
    elif args.format == "keras":
        if not args.out.endswith(".keras"):
            raise ValueError(f"--out must end with .keras for --format keras, got {args.out}")
        atomic_write(args.out, model.save)
    else:
        from keras_s2s.export import export_saved_model

        options = given_decoding(args)
        tasks.of_model(model).decoding(**options)  # a recognizer's export takes --beam-width only
        export_saved_model(model, args.out, **options)
    print(f"exported {args.model} to {args.out} ({args.format})")


COMMANDS = (
    Command("list", "list the zoo's models", no_arguments, lambda args: _list_models(), False),
    Command("train", "train a zoo model (or a card .yaml) and report held-out results",
            _train_arguments, _train),
    Command("evaluate", "BLEU/chrF (translation), WER/CER (speech) or alignment and mel distances "
            "(synthesis) on held-out data", _evaluate_arguments, _evaluate),
    Command("export", "export a trained model for serving", _export_arguments, _export),
    Command("average", "average the last N epoch checkpoints of a run", _average_arguments,
            _average),
)  # fmt: skip
