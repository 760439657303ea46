"""The `keras-s2s` command.

    keras-s2s list
    keras-s2s train gnmt --data demo --precision auto --steps 2000 --out runs/gnmt --set units=256
    keras-s2s evaluate --model runs/gnmt
    keras-s2s translate --model runs/gnmt < input.txt
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from keras_s2s.config import PRECISIONS, STRATEGIES, CardError, parse_override


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="keras-s2s", description="Fast sequence-to-sequence models for Keras 3.")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and results")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("list", help="list the zoo's models")

    train = commands.add_parser("train", help="train a zoo model (or a card .yaml) and report held-out BLEU")
    train.add_argument("model", help="zoo model name or path to a card .yaml")
    train.add_argument("--data", nargs="+", help="'demo', a TSV file, or two aligned files: train.src train.tgt")
    train.add_argument("--precision", choices=PRECISIONS)
    train.add_argument("--strategy", choices=STRATEGIES)
    train.add_argument("--devices", help="comma-separated devices for --strategy mirrored")
    group = train.add_mutually_exclusive_group()
    group.add_argument("--epochs", type=int)
    group.add_argument("--steps", type=int, help="total training steps (instead of --epochs)")
    train.add_argument("--out", help="run directory (default runs/MODEL); an interrupted run there resumes")
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a card setting, e.g. --set units=256 --set training.learning_rate=0.002")

    evaluate = commands.add_parser("evaluate", help="BLEU/chrF of a trained model on its held-out split")
    evaluate.add_argument("--model", required=True, help="run directory written by `train`")
    evaluate.add_argument("--data", nargs="+", help="evaluate on the test split of this data instead")
    evaluate.add_argument("--beam-width", type=int, default=1, help="1 = greedy (default)")
    evaluate.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha for beam search")

    translate = commands.add_parser("translate", help="translate lines from a file or stdin")
    translate.add_argument("--model", required=True, help="run directory written by `train`")
    translate.add_argument("--input", help="input file (default: stdin)")
    translate.add_argument("--output", help="output file (default: stdout)")
    translate.add_argument("--batch-size", type=int, default=64)
    translate.add_argument("--beam-width", type=int, default=1, help="1 = greedy (default)")
    translate.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha for beam search")
    return parser


def _overrides(args) -> dict:
    overrides = dict(parse_override(item) for item in args.set)
    if args.precision:
        overrides["training.precision"] = args.precision
    if args.strategy:
        overrides["training.strategy"] = args.strategy
    return overrides


def _translate(args) -> None:
    from keras_s2s.training.runner import load_model

    model = load_model(args.model)
    if args.input:
        with open(args.input, encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle]
    else:
        lines = [line.rstrip("\n") for line in sys.stdin]
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        batch = max(1, args.batch_size) * 16
        for start in range(0, len(lines), batch):
            for text in model.translate(lines[start:start + batch], batch_size=args.batch_size,
                                        beam_width=args.beam_width, length_penalty=args.length_penalty):
                out.write(text + "\n")
            if args.output:
                print(f"\rtranslated {min(start + batch, len(lines))}/{len(lines)} lines", end="", file=sys.stderr)
        if args.output:
            print(file=sys.stderr)
    finally:
        if args.output:
            out.close()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    try:
        if args.command == "list":
            from keras_s2s import zoo

            for name in zoo.list_models():
                print(f"{name:16s} {zoo.get_card(name).description}")
        elif args.command == "train":
            from keras_s2s.training.runner import train

            devices = args.devices.split(",") if args.devices else None
            data = ",".join(args.data) if args.data else None
            train(args.model, data=data, out=args.out, epochs=args.epochs, steps=args.steps,
                  overrides=_overrides(args), devices=devices)
        elif args.command == "evaluate":
            from keras_s2s.training.runner import evaluate_run

            evaluate_run(args.model, data=",".join(args.data) if args.data else None,
                         beam_width=args.beam_width, length_penalty=args.length_penalty)
        else:
            _translate(args)
    except (CardError, FileNotFoundError, ValueError) as exc:
        print(f"keras-s2s: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("keras-s2s: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
