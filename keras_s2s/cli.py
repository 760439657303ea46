"""The `keras-s2s` command.

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
import dataclasses
import errno
import importlib
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable

from keras_s2s.config import (
    LENGTH_PENALTY,
    PRECISIONS,
    STRATEGIES,
    CardError,
    MissingExtra,
    check_count,
    parse_duration,
    parse_override,
)
from keras_s2s.files import read_text


def _count(minimum: int = 1):
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


COUNT = _count()


def _finite(text: str) -> float:
    """An argparse type: a finite number (a weight or penalty; nan and inf make no sense)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _duration(text: str) -> str:
    """An argparse type: a duration such as 25m, 2h or 1h30m (kept as written, for the card)."""
    try:
        parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _add_lm_flags(parser) -> None:
    """--lm, --alpha, --beta: a recognizer's beam search fused with a word LM."""
    parser.add_argument(
        "--lm",
        help="an ARPA word LM (keras-s2s lm; plain or .arpa.gz): CTC beam search fused with it; "
        "'preset': the LM of a zoo preset given as --model NAME:PRESET",
    )
    parser.add_argument("--alpha", type=_finite,
                        help="LM weight (with --lm; default 0.5, or the preset's tuned one)")  # fmt: skip
    parser.add_argument("--beta", type=_finite,
                        help="word insertion bonus (with --lm; default 1.0, or the preset's)")  # fmt: skip
    lexicon = parser.add_mutually_exclusive_group()
    lexicon.add_argument("--lexicon", action="store_const", const=True, dest="lexicon",
                         help="hold the LM search to the LM's words (a word outside them costs "
                         "--oov-penalty; default: the preset's setting, else off)")  # fmt: skip
    lexicon.add_argument("--no-lexicon", action="store_const", const=False, dest="lexicon",
                         help="spell words freely, as without a lexicon")  # fmt: skip
    parser.add_argument("--oov-penalty", type=_finite,
                        help="ln cost of a word outside the lexicon (default -5, or the preset's)")  # fmt: skip


def _add_decoding_flags(parser, beam_width: int = 1, coverage: bool = True) -> None:
    """--beam-width, --length-penalty (and --coverage-penalty): how a model decodes. Unset flags stay
    None: the task's `decoding_options` hold the defaults and refuse another task's option."""
    parser.add_argument("--beam-width", type=COUNT,
                        help=f"hypotheses kept by the beam search (1 = greedy; default {beam_width})")  # fmt: skip
    parser.add_argument("--length-penalty", type=_finite,
                        help=f"GNMT alpha of a translation beam search (default {LENGTH_PENALTY})")  # fmt: skip
    if coverage:
        parser.add_argument("--coverage-penalty", type=_finite,
                            help="GNMT beta for a translation model's beam search (default 0: off)")  # fmt: skip
        parser.add_argument("--no-loop-guard", dest="loop_guard", action="store_false", default=None,
                            help="let a translation model emit a span a third time in a row (by "
                            "default blocked unless the source repeats one so)")  # fmt: skip


def _decoding(args, **more) -> dict:
    """The decoding options given on the command line (flags left unset are not in it)."""
    names = ("beam_width", "length_penalty", "coverage_penalty", "loop_guard")
    given = {name: getattr(args, name, None) for name in names}
    return {name: value for name, value in {**given, **more}.items() if value is not None}


def _no_arguments(parser) -> None:
    pass


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
        "--task-index", type=_count(0), help="with --workers: this worker's index (0 = the chief)"
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
        type=_duration,
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
    _add_decoding_flags(evaluate)
    _add_lm_flags(evaluate)
    evaluate.add_argument(
        "--grid",
        action="store_true",
        help="translation: score beam widths 1, 4, 8 and length penalties 0.6, 1.0 on the dev "
        "split (decoding-grid.json) and name the best; choose the decoding there, never on test",
    )


def _translate_arguments(translate) -> None:
    translate.add_argument("--model", required=True, help="run directory written by `train`")
    source = translate.add_mutually_exclusive_group()
    source.add_argument("--input", help="input file (default: stdin)")
    source.add_argument(
        "--po",
        metavar="FILE.po",
        help="a gettext catalog: its untranslated messages are filled and marked fuzzy for "
        "review (placeholders, markup, accelerators, plurals and line breaks kept; the other "
        "entries byte for byte); written back in place unless --output is given",
    )
    translate.add_argument("--output", help="output file (default: stdout; with --po, FILE.po)")
    translate.add_argument("--batch-size", type=COUNT, default=64)
    _add_decoding_flags(translate)
    translate.add_argument(
        "--engine",
        choices=("native", "ctranslate2"),
        default="native",
        help="native: the Keras model (default); ctranslate2: CTranslate2 (Transformers; "
        "--model is a run directory, exported once to RUN/ctranslate2, or an export)",
    )
    translate.add_argument(
        "--compute-type",
        default="default",
        help="native engine: float32, bfloat16, int8 (Keras int8 weights) "
        "(default: as trained); ctranslate2: int8, int8_float32, float32, bfloat16, ... "
        "(default: as stored)",
    )


def _transcribe_arguments(transcribe) -> None:
    transcribe.add_argument(
        "--model",
        required=True,
        help="run directory of a speech recognizer, or a zoo preset NAME:PRESET (jasper_english:english)",
    )
    transcribe.add_argument(
        "audio", nargs="+", help="audio files (WAV, FLAC, ...), resampled as needed"
    )
    transcribe.add_argument(
        "--beam-width",
        type=COUNT,
        help="hypotheses the search keeps (default: the preset's LM search, 32; 1 = greedy "
        "CTC decoding, the default of a run without --lm)",
    )
    transcribe.add_argument("--no-lm", action="store_true",
                            help="no word LM, not even a preset's own (greedy, or CTC beam search "
                            "with --beam-width)")  # fmt: skip
    transcribe.add_argument("--max-seconds", type=_finite, default=20.0,
                            help="longer recordings are cut at pauses into pieces of at most this "
                            "long and decoded in turn (default 20)")  # fmt: skip
    _add_lm_flags(transcribe)


def _speech_corpus_arguments(corpus) -> None:
    corpus.add_argument("--text", nargs="+", required=True,
                        help="text files: plain text, Debian Translation-en, diatheke Bible verses")  # fmt: skip
    corpus.add_argument("--out", required=True, help="the corpus folder (run again to resume)")
    corpus.add_argument("--num-valid", type=_count(0), default=500)
    corpus.add_argument("--num-test", type=_count(0), default=500)
    corpus.add_argument("--max-sentences", type=_count(1),
                        help="use only this many sentences (seeded sample)")  # fmt: skip
    corpus.add_argument("--shard-size", type=COUNT, default=1000)
    corpus.add_argument("--workers", type=COUNT, default=1, help="synthesizing processes")
    corpus.add_argument("--seed", type=_count(0), default=0)
    corpus.add_argument("--flite-voices", nargs="+", default=[], metavar="VOICE",
                        help="flite voices (kal, kal16, awb, rms, slt) that speak --flite-share "
                             "of the training sentences (Debian's flite)")  # fmt: skip
    corpus.add_argument("--flite-share", type=_finite, default=0.0,
                        help="share of training sentences spoken by flite (default 0)")  # fmt: skip
    corpus.add_argument("--festival-voices", nargs="+", default=[], metavar="VOICE",
                        help="Festival voices (kal_diphone, rab_diphone, ...) that speak "
                             "--festival-share of the training sentences (Debian's festival)")  # fmt: skip
    corpus.add_argument("--festival-share", type=_finite, default=0.0,
                        help="share of training sentences spoken by Festival (default 0)")  # fmt: skip
    corpus.add_argument("--rhvoice-voices", nargs="+", default=[], metavar="VOICE",
                        help="RHVoice voices (alan, bdl, clb, evgeniy-eng, lyubov, slt) that speak "
                             "--rhvoice-share of the training sentences (Debian's rhvoice-english)")  # fmt: skip
    corpus.add_argument("--rhvoice-share", type=_finite, default=0.0,
                        help="share of training sentences spoken by RHVoice (default 0)")  # fmt: skip


def _encode_arguments(encode) -> None:
    encode.add_argument("--data", required=True,
                        help="the corpus: a TSV, a directory of splits, or aligned files a.src,a.tgt")  # fmt: skip
    encode.add_argument("--out", required=True, help="the folder to write (must not exist yet)")
    encode.add_argument("--vocab-size", type=COUNT,
                        help="subword vocabulary size (default: fitted to the corpus)")  # fmt: skip
    encode.add_argument("--tokenization", choices=("sentencepiece", "pretokenized"),
                        default="sentencepiece")  # fmt: skip
    encode.add_argument("--separate-vocabularies", action="store_true",
                        help="a source and a target vocabulary instead of one joint one")  # fmt: skip
    encode.add_argument("--source-vocab-size", type=COUNT,
                        help="with --separate-vocabularies (default --vocab-size)")  # fmt: skip
    encode.add_argument("--direction", help="src-tgt languages of a split directory, e.g. en-de")
    encode.add_argument("--num-valid", type=_count(1), default=500,
                        help="validation pairs cut from the training split when it has none")  # fmt: skip
    encode.add_argument("--num-test", type=_count(1), default=500,
                        help="test pairs cut from the training split when it has none")  # fmt: skip
    encode.add_argument("--seed", type=_count(0), default=0)


def _lm_arguments(lm) -> None:
    lm.add_argument("--text", nargs="+", required=True,
                    help="manifests (.csv/.tsv: their transcripts) or text files, one sentence a line")  # fmt: skip
    lm.add_argument("--out", required=True, help="the ARPA file to write")
    lm.add_argument("--order", type=_count(2), default=3,
                    help="n-gram order, 2 or more (KenLM reads bigram models and up); default 3")  # fmt: skip
    lm.add_argument("--prune", type=_count(1), nargs="*", default=[],
                    help="from order 2 up: keep n-grams counted at least this often, e.g. 1 2")  # fmt: skip
    lm.add_argument("--general-words",
                    help="also know these words as unigrams with their frequency in general English: "
                    "wordfreq:N (pip install wordfreq) or a word<TAB>share file")  # fmt: skip


def _synthesize_arguments(synthesize) -> None:
    synthesize.add_argument("--model", required=True, help="run directory of a speech synthesizer")
    synthesize.add_argument("text", nargs="*", help="text to say (or --input)")
    synthesize.add_argument("--input", help="a text file: one utterance per non-empty line")
    synthesize.add_argument(
        "-o",
        "--output",
        required=True,
        help="a .wav file for one text; a folder (0001.wav, ...) for several",
    )
    synthesize.add_argument(
        "--plot", action="store_true", help="also write NAME-alignment.png and NAME-mel.png"
    )
    synthesize.add_argument(
        "--iterations", type=COUNT, default=60, help="Griffin-Lim iterations (default 60)"
    )
    synthesize.add_argument(
        "--max-decoder-steps", type=COUNT, help="step limit (default: the model's)"
    )
    synthesize.add_argument("--batch-size", type=COUNT, default=8)


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
    _add_decoding_flags(export, beam_width=4, coverage=False)  # decoding inside the SavedModel
    export.add_argument(
        "--quantization",
        choices=("int8", "int8_float32", "int8_float16", "int16", "float16", "bfloat16"),
        help="ctranslate2: the stored weight type (default float32)",
    )


def _average_arguments(average) -> None:
    average.add_argument("--model", required=True, help="run directory written by `train`")
    picked = average.add_mutually_exclusive_group()
    picked.add_argument(
        "--last", type=COUNT, default=3, help="how many of the latest checkpoints (default 3)"
    )
    picked.add_argument(
        "--best", type=COUNT, help="the N checkpoints with the best validation score instead"
    )
    average.add_argument("--out", required=True, help="new run directory for the averaged model")


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


def _text_lines(handle, name: str):
    """The lines of a binary `handle` as text, without line ends; a clear error naming `name` and the
    line for bytes that are not UTF-8."""
    for number, raw in enumerate(handle, 1):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
            yield line.removeprefix("\ufeff") if number == 1 else line  # a byte order mark
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{name}, line {number}: not UTF-8 text ({error.reason} at byte {error.start}); "
                "is it a binary file?"
            ) from None


def _chunks(lines, size: int):
    chunk = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Progress:
    """`translated N[/TOTAL] lines, X lines/s` on stderr, rewritten in place."""

    def __init__(self, total: int | None, enabled: bool, verb: str = "translated"):
        self.total, self.enabled, self.done, self.start, self.verb = (
            total,
            enabled,
            0,
            time.time(),
            verb,
        )

    def __call__(self, count: int) -> None:
        self.done += count
        if self.enabled:
            rate = self.done / max(time.time() - self.start, 1e-9)
            total = f"/{self.total}" if self.total else ""
            print(
                f"\r{self.verb} {self.done}{total} lines, {rate:.1f} lines/s",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.enabled and self.done:
            print(file=sys.stderr)


def _translate(args) -> None:
    """Stream the input in chunks: memory stays flat however long the input is."""
    from keras_s2s import tasks
    from keras_s2s.files import atomic_write

    if args.input and not os.path.isfile(args.input):
        raise FileNotFoundError(f"{args.input}: input file not found")
    if args.po:  # a malformed catalog is named before the model loads
        from keras_s2s.text.catalogs import read_catalog

        read_catalog(args.po)
    options = {
        "batch_size": args.batch_size,
        **tasks.get("translation").decoding(**_decoding(args)),
    }
    if args.engine == "ctranslate2":
        from keras_s2s.export.ctranslate2 import translator_for

        if options.pop("coverage_penalty"):
            raise ValueError("--coverage-penalty is a native-engine option (CTranslate2 has none)")
        options.pop("loop_guard")  # CTranslate2 has no loop guard: it decodes unguarded
        model = translator_for(args.model, compute_type=args.compute_type)
    else:
        from keras_s2s.export.native import check_compute_type, with_compute_type

        check_compute_type(args.compute_type)  # before the model loads
        model = with_compute_type(_load_for("translation", args.model), args.compute_type)
    if args.po:
        return _fill_catalog(args, model, options)
    source = open(args.input, "rb") if args.input else sys.stdin.buffer
    if args.input:
        with open(args.input, "rb") as counted:
            total = sum(1 for _ in counted)
    else:
        total = None
    progress = _Progress(total, enabled=bool(args.output) or sys.stderr.isatty())
    options["progress"] = progress

    def write_all(out) -> None:
        line = 1
        for chunk in _chunks(_text_lines(source, args.input or "stdin"), args.batch_size * 16):
            out.writelines(
                text + "\n" for text in model.translate(chunk, first_line=line, **options)
            )
            out.flush()
            line += len(chunk)

    try:
        if args.output:  # all or nothing: an interrupted run leaves no half-written file

            def write(path):
                with open(path, "w", encoding="utf-8") as out:
                    write_all(out)

            atomic_write(args.output, write)
        else:
            write_all(sys.stdout)
    finally:
        progress.close()
        if args.input:
            source.close()


def _fill_catalog(args, model, options) -> None:
    """`translate --po`: the catalog's untranslated messages filled, one summary line on stderr."""
    from keras_s2s.text.catalogs import fill_catalog

    progress = _Progress(None, enabled=sys.stderr.isatty())
    options["progress"] = progress
    try:
        report = fill_catalog(args.po, lambda texts: model.translate(texts, **options), args.output)
    finally:
        progress.close()
    for failure in report.failed:
        print(f"{failure}: left untranslated", file=sys.stderr)
    print(report.summary(args.output or args.po), file=sys.stderr)


def _load_for(task: str, run_dir: str):
    """The model of a run directory (or of a zoo preset NAME:PRESET), if it belongs to `task`; else
    a ValueError saying what it holds."""
    from keras_s2s import tasks, zoo
    from keras_s2s.training.runner import load_model

    preset = zoo.split_preset(run_dir)
    model = zoo.load(preset[0], weights=preset[1]) if preset else load_model(run_dir)
    return tasks.get(task).require(model, run_dir)


def _lm_settings(args) -> dict:
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


def _export(args) -> None:
    from keras_s2s import backend, tasks
    from keras_s2s.files import atomic_write
    from keras_s2s.training.runner import load_model

    if args.format == "saved_model" and backend.configured_name() != "tensorflow":
        raise ValueError(
            f"--format saved_model needs Keras's TensorFlow backend (this runs on "
            f"{backend.configured_name()!r}): run the export with KERAS_BACKEND=tensorflow where "
            "TensorFlow is installed (the run's weights load there), or use --format keras"
        )
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

        options = _decoding(args)
        tasks.of_model(model).decoding(**options)  # a recognizer's export takes --beam-width only
        export_saved_model(model, args.out, **options)
    print(f"exported {args.model} to {args.out} ({args.format})")


def _speech_corpus(args) -> None:
    import random

    from keras_s2s.corpora.english_speech import EnglishSpeech
    from keras_s2s.text.english import speakable_sentences

    sentences = list(speakable_sentences(args.text))
    if args.max_sentences and args.max_sentences < len(sentences):
        sentences = random.Random(args.seed).sample(sentences, args.max_sentences)
    print(f"{len(sentences):,} speakable sentences in {', '.join(args.text)}")
    corpus = EnglishSpeech(
        sentences,
        num_valid=args.num_valid,
        num_test=args.num_test,
        seed=args.seed,
        shard_size=args.shard_size,
        flite_voices=args.flite_voices,
        flite_share=args.flite_share,
        festival_voices=args.festival_voices,
        festival_share=args.festival_share,
        rhvoice_voices=args.rhvoice_voices,
        rhvoice_share=args.rhvoice_share,
    )
    folder = corpus.build(args.out, workers=args.workers, progress=True)
    print(f"wrote {folder}: train.csv, valid.csv, test.csv")


def _encode(args) -> None:
    from keras_s2s.data.parallel import encode_corpus

    manifest = encode_corpus(
        args.data,
        args.out,
        vocab_size=args.vocab_size,
        tokenization=args.tokenization,
        shared_vocabulary=not args.separate_vocabularies,
        source_vocab_size=args.source_vocab_size,
        num_valid=args.num_valid,
        num_test=args.num_test,
        seed=args.seed,
        direction=args.direction,
    )
    pairs, tokens = manifest["pairs"], manifest["tokens"]
    size = sum(path.stat().st_size for path in Path(args.out).iterdir())
    print(
        f"wrote {args.out} ({size / 2**20:.1f} MiB): {pairs['train']:,} training pairs as "
        f"{tokens['source']:,} + {tokens['target']:,} token ids, {pairs['valid']:,} valid and "
        f"{pairs['test']:,} test pairs as text, a {manifest['vocab_size']:,}-piece vocabulary; "
        f"train on it with --data {args.out}"
    )


def _estimate_lm(args) -> None:
    from keras_s2s.audio.manifest import read_manifest
    from keras_s2s.decoding.ngram_lm import KneserNeyLM
    from keras_s2s.text.characters import normalize_transcript
    from keras_s2s.text.english import general_word_frequencies

    sentences = []
    for path in args.text:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: text file not found")
        if path.endswith((".csv", ".tsv")):
            sentences += [u.transcript for u in read_manifest(path, check_files=False)]
        else:
            sentences += [line for line in read_text(path).splitlines() if line.strip()]
    sentences = [normalize_transcript(s) for s in sentences]
    general = args.general_words and general_word_frequencies(args.general_words)  # before the work
    lm = KneserNeyLM.estimate(sentences, order=args.order, prune=tuple(args.prune))
    if general:
        lm = lm.with_words(general)
    lm.write_arpa(args.out)
    sizes = ", ".join(f"{len(t):,} {n}-grams" for n, t in enumerate(lm.probabilities, 1))
    print(f"wrote {args.out}: {len(sentences):,} sentences, {sizes}")


def _transcribe(args) -> int:
    """Print each file's transcript; a file that cannot be read is reported and the rest transcribed.
    A preset's own decoding (its LM search, tuned) is the default; flags turn it down."""
    from keras_s2s.audio.io import AudioError
    from keras_s2s.audio.segments import audio_seconds

    if args.no_lm and args.lm:
        raise ValueError("--no-lm and --lm ask for opposite things: give one")
    model = _load_for("recognition", args.model)
    readable = []
    for path in args.audio:
        try:
            audio_seconds(path)
            readable.append(path)
        except AudioError as error:
            print(f"keras-s2s: error: {error}", file=sys.stderr)
    failed = len(args.audio) - len(readable)
    beam_width, lm = _speech_search(model, args)
    texts = (
        model.transcribe(readable, beam_width=beam_width, lm=lm, max_seconds=args.max_seconds)
        if readable
        else []
    )
    for path, text in zip(readable, texts):
        print(f"{path}\t{text}" if len(args.audio) > 1 else text)
    if failed:
        print(
            f"keras-s2s: {failed} of {len(args.audio)} file(s) could not be read", file=sys.stderr
        )
    return 1 if failed else 0


def _speech_search(model, args) -> tuple[int | None, object]:
    """(beam width, LM decoder or None) of a transcribe command: --lm's search; without it the
    model's default decoding (a preset's LM search) with --beam-width / --no-lexicon applied;
    --no-lm: greedy or CTC beam search."""
    from keras_s2s import tasks
    from keras_s2s.decoding.ctc_lm import lm_decoder

    if args.no_lm or (not args.lm and model.default_decoding is None):
        return args.beam_width or 1, None
    if args.lm:
        options = tasks.get("recognition").decoding(**_decoding(args, **_lm_settings(args)))
        names = ("lm", "alpha", "beta", "beam_width", "lexicon", "oov_penalty")
        return None, lm_decoder(model.vocabulary, *(options[k] for k in names))
    changes = {"beam_width": args.beam_width, "lexicon": args.lexicon, "alpha": args.alpha,
               "beta": args.beta, "oov_penalty": args.oov_penalty}  # fmt: skip
    return None, model.default_decoder(**{k: v for k, v in changes.items() if v is not None})


def _synthesize(args) -> None:
    """Each text -> a WAV file (atomically), with optional alignment and mel plots."""
    from pathlib import Path

    from keras_s2s.decoding.vocoder import GriffinLim
    from keras_s2s.tasks.synthesis import write_synthesis

    texts = list(args.text)
    if args.input:
        if not os.path.isfile(args.input):
            raise FileNotFoundError(f"{args.input}: input file not found")
        texts += [line.strip() for line in read_text(args.input).splitlines() if line.strip()]
    if not texts:
        raise ValueError("nothing to synthesize: give text arguments or --input FILE")
    output = Path(args.output)
    single = len(texts) == 1 and output.suffix.lower() == ".wav"
    if len(texts) > 1 and output.suffix.lower() == ".wav":
        raise ValueError(f"{len(texts)} texts need a folder for -o, not the file {output}")
    targets = [output] if single else [output / f"{i:04d}.wav" for i in range(1, len(texts) + 1)]
    model = _load_for("synthesis", args.model)
    vocoder = GriffinLim(model.extractor, iterations=args.iterations)
    targets[0].parent.mkdir(parents=True, exist_ok=True)
    progress = _Progress(
        len(texts), enabled=sys.stderr.isatty() and len(texts) > 1, verb="synthesized"
    )
    try:
        for start in range(0, len(texts), args.batch_size):
            chunk = texts[start : start + args.batch_size]
            for text, target, item in zip(
                chunk, targets[start:], model.infer(chunk, args.max_decoder_steps)
            ):
                samples = write_synthesis(target, text, item, vocoder, plots=args.plot)
                if not item["stopped"]:
                    logging.getLogger("keras_s2s").warning(
                        "%s: no stop token within the step limit; the audio runs to the limit (%r)",
                        target,
                        text[:60],
                    )
                print(f"{target}\t{len(samples) / vocoder.sample_rate:.2f}s\t{text}")
            progress(len(chunk))
    finally:
        progress.close()


def _import_tensorflow_quietly() -> None:
    """Import TensorFlow without its C++ start-up lines (oneDNN, CUDA probing, CPU features) and with its
    log level at errors only. Python errors still show; the user's own TF_CPP_MIN_LOG_LEVEL, or
    `--verbose`, leaves everything as TensorFlow prints it (the caller skips this)."""
    if "tensorflow" in sys.modules:
        return
    from keras_s2s import backend

    if (
        backend.configured_name() != "tensorflow"
    ):  # JAX: TensorFlow only where needed (maybe absent)
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)  # the lines come from C++ before TensorFlow reads its log level
        importlib.import_module("tensorflow")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


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
        **_decoding(args, **_lm_settings(args)),
    )


def _average(args) -> None:
    from keras_s2s.training.runner import average_checkpoints

    average_checkpoints(args.model, args.out, last=args.last, best=args.best)


@dataclasses.dataclass(frozen=True)
class Command:
    """A `keras-s2s` command: `add_arguments(parser)` declares its arguments, `run(args)` runs it
    (an exit code, or None for 0). A new command is one more row of `COMMANDS`."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int | None]
    needs_tensorflow: bool = True  # TensorFlow's start-up lines are hidden before it runs


COMMANDS = (
    Command("list", "list the zoo's models", _no_arguments, lambda args: _list_models(), False),
    Command("train", "train a zoo model (or a card .yaml) and report held-out results",
            _train_arguments, _train),
    Command("evaluate", "BLEU/chrF (translation), WER/CER (speech) or alignment and mel distances "
            "(synthesis) on held-out data", _evaluate_arguments, _evaluate),
    Command("translate", "translate lines from a file or stdin", _translate_arguments, _translate),
    Command("transcribe", "print the text spoken in audio files", _transcribe_arguments,
            _transcribe),
    Command("speech-corpus", "synthesize an open-vocabulary English speech corpus with eSpeak NG "
            "(resumable)", _speech_corpus_arguments, _speech_corpus),
    Command("encode", "tokenize a parallel corpus once into a compact folder of token ids (train "
            "with --data FOLDER)", _encode_arguments, _encode),
    Command("lm", "estimate a word n-gram LM (ARPA) from transcripts or text", _lm_arguments,
            _estimate_lm),
    Command("synthesize", "speak text with a trained synthesizer into WAV files",
            _synthesize_arguments, _synthesize),
    Command("export", "export a trained model for serving", _export_arguments, _export),
    Command("average", "average the last N epoch checkpoints of a run", _average_arguments,
            _average),
)  # fmt: skip


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
            _import_tensorflow_quietly()
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
