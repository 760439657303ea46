"""What the commands share: the `Command` row of the table, argparse types for counts, numbers
and durations, the decoding and LM flags, and loading a trained model for a task.

Example:
    >>> Command("average", "average checkpoints", average_arguments, average)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Callable

from keras_s2s.config import LENGTH_PENALTY, check_count, parse_duration


def count(minimum: int = 1):
    """An argparse type: a whole number of at least `minimum` (a count of steps, sentences, beams, ...)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        try:
            return check_count("the value", value, minimum)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


COUNT = count()


def finite(text: str) -> float:
    """An argparse type: a finite number (a weight or penalty; nan and inf make no sense)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def duration(text: str) -> str:
    """An argparse type: a duration such as 25m, 2h or 1h30m (kept as written, for the card)."""
    try:
        parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_lm_flags(parser) -> None:
    """--lm, --alpha, --beta: a recognizer's beam search fused with a word LM."""
    parser.add_argument(
        "--lm",
        help="an ARPA word LM (keras-s2s lm; plain or .arpa.gz): CTC beam search fused with it; "
        "'preset': the LM of a zoo preset given as --model NAME:PRESET",
    )
    parser.add_argument("--alpha", type=finite,
                        help="LM weight (with --lm; default 0.5, or the preset's tuned one)")  # fmt: skip
    parser.add_argument("--beta", type=finite,
                        help="word insertion bonus (with --lm; default 1.0, or the preset's)")  # fmt: skip
    lexicon = parser.add_mutually_exclusive_group()
    lexicon.add_argument("--lexicon", action="store_const", const=True, dest="lexicon",
                         help="hold the LM search to the LM's words (a word outside them costs "
                         "--oov-penalty; default: the preset's setting, else off)")  # fmt: skip
    lexicon.add_argument("--no-lexicon", action="store_const", const=False, dest="lexicon",
                         help="spell words freely, as without a lexicon")  # fmt: skip
    parser.add_argument("--oov-penalty", type=finite,
                        help="ln cost of a word outside the lexicon (default -5, or the preset's)")  # fmt: skip


def add_decoding_flags(parser, beam_width: int = 1, coverage: bool = True) -> None:
    """--beam-width, --length-penalty (and --coverage-penalty): how a model decodes. Unset flags stay
    None: the task's `decoding_options` hold the defaults and refuse another task's option."""
    parser.add_argument("--beam-width", type=COUNT,
                        help=f"hypotheses kept by the beam search (1 = greedy; default {beam_width}, "
                        "or the zoo preset's own)")  # fmt: skip
    parser.add_argument("--length-penalty", type=finite,
                        help=f"GNMT alpha of a translation beam search (default {LENGTH_PENALTY})")  # fmt: skip
    if coverage:
        parser.add_argument("--coverage-penalty", type=finite,
                            help="GNMT beta for a translation model's beam search (default 0: off)")  # fmt: skip
        parser.add_argument("--no-loop-guard", dest="loop_guard", action="store_false", default=None,
                            help="let a translation model emit a span a third time in a row (by "
                            "default blocked unless the source repeats one so)")  # fmt: skip


def given_decoding(args, **more) -> dict:
    """The decoding options given on the command line (flags left unset are not in it)."""
    names = ("beam_width", "length_penalty", "coverage_penalty", "loop_guard")
    given = {name: getattr(args, name, None) for name in names}
    return {name: value for name, value in {**given, **more}.items() if value is not None}


def lm_settings(args) -> dict:
    """The word-LM options given (`lm`, `alpha`, `beta`; unset ones left out). `--lm preset` is the
    word LM that ships in the zoo preset given as --model NAME:PRESET, with the weight and bonus
    tuned for it (unless given)."""
    given = {
        name: getattr(args, name) for name in ("lm", "alpha", "beta", "lexicon", "oov_penalty")
    }
    if args.lm == "preset":
        from keras_s2s import zoo
        from keras_s2s.presets import read_metadata

        preset = zoo.split_preset(args.model)
        if preset is None:
            raise ValueError("--lm preset needs --model NAME:PRESET, a zoo preset that ships an LM")
        folder = zoo.preset_directory(*preset)
        path = folder / "lm.arpa.gz"
        if not path.is_file():
            raise FileNotFoundError(f"{args.model}: the preset ships no word LM (lm.arpa.gz)")
        tuned = read_metadata(folder).get("lm", {})
        given["lm"] = str(path)
        for name in ("alpha", "beta", "lexicon", "oov_penalty"):  # the preset's, unless given
            if given[name] is None:
                given[name] = tuned.get(name)
    return {name: value for name, value in given.items() if value is not None}


def load_for(task: str, run_dir: str):
    """The model of a run directory (or of a zoo preset NAME:PRESET), if it belongs to `task`; else
    a ValueError saying what it holds."""
    from keras_s2s import tasks, zoo
    from keras_s2s.training.runner import load_model

    preset = zoo.split_preset(run_dir)
    model = zoo.load(preset[0], weights=preset[1]) if preset else load_model(run_dir)
    return tasks.get(task).require(model, run_dir)


def no_arguments(parser) -> None:
    pass


@dataclasses.dataclass(frozen=True)
class Command:
    """A `keras-s2s` command: `add_arguments(parser)` declares its arguments, `run(args)` runs it
    (an exit code, or None for 0). A new command is one more row of `COMMANDS`."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int | None]
    needs_tensorflow: bool = True  # TensorFlow's start-up lines are hidden before it runs
