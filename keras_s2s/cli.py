"""The `keras-s2s` command: the table of commands (`COMMANDS`, each row from
`keras_s2s.commands`), the parser built from it, and `main`, which runs one and turns errors
into exit codes.

keras-s2s list
keras-s2s train gnmt --data demo --precision auto --steps 2000 --out runs/gnmt --set units=256
keras-s2s evaluate --model runs/gnmt
keras-s2s translate --model runs/gnmt < input.txt
keras-s2s translate --model runs/gnmt --po de.po            # fill a gettext catalog, marked fuzzy
keras-s2s average --model runs/gnmt --last 3 --out runs/gnmt-avg
keras-s2s transcribe --model runs/jasper_demo clip.wav more.wav
keras-s2s synthesize --model runs/tacotron2_demo "The 2 red dogs see a cat." -o dogs.wav
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from keras_s2s import backend
from keras_s2s.commands import runs, speech, synthesis, translation
from keras_s2s.commands.base import Command
from keras_s2s.config import CardError, MissingExtra

ORDER = (  # as `keras-s2s --help` lists them
    "list",
    "train",
    "evaluate",
    "translate",
    "transcribe",
    "speech-corpus",
    "encode",
    "lm",
    "synthesize",
    "export",
    "average",
)
COMMANDS: tuple[Command, ...] = tuple(
    sorted(
        runs.COMMANDS + translation.COMMANDS + speech.COMMANDS + synthesis.COMMANDS,
        key=lambda command: ORDER.index(command.name),
    )
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keras-s2s", description="Fast sequence-to-sequence models for Keras 3."
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and results")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also TensorFlow's own start-up and log lines (hidden unless TF_CPP_MIN_LOG_LEVEL is set)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_arguments(commands.add_parser(command.name, help=command.help))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    command = next(command for command in COMMANDS if command.name == args.command)
    try:
        if (
            command.needs_tensorflow
            and not args.verbose
            and "TF_CPP_MIN_LOG_LEVEL" not in os.environ
        ):
            backend.import_tensorflow_quietly()
        return command.run(args) or 0
    except (CardError, FileNotFoundError, ValueError, MissingExtra) as exc:
        print(f"keras-s2s: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a file that vanished or cannot be written
        # h5py reports a full disk without an errno
        out_of_space = exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc)
        resume = "; what was saved before it stays, and the same command continues from there"
        print(f"keras-s2s: error: {exc}{resume if out_of_space else ''}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        resume = "; run the same command again to resume" if args.command == "train" else ""
        print(f"keras-s2s: interrupted{resume}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
