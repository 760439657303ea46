"""Translation commands: translate lines, files and gettext catalogs; encode a corpus."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from keras_s2s.commands.base import (
    COUNT,
    Command,
    add_decoding_flags,
    count,
    given_decoding,
    load_for,
)
from keras_s2s.progress import Progress


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
    add_decoding_flags(translate)
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
    encode.add_argument("--num-valid", type=count(1), default=500,
                        help="validation pairs cut from the training split when it has none")  # fmt: skip
    encode.add_argument("--num-test", type=count(1), default=500,
                        help="test pairs cut from the training split when it has none")  # fmt: skip
    encode.add_argument("--seed", type=count(0), default=0)


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


def _translate(args) -> None:
    """Lines from a file or stdin, or the untranslated messages of a catalog (`--po`)."""
    if args.input and not os.path.isfile(args.input):
        raise FileNotFoundError(f"{args.input}: input file not found")
    if args.po:  # a malformed catalog is named before the model loads
        from keras_s2s.text.catalogs import read_catalog

        read_catalog(args.po)
    model, options = _translator(args)
    if args.po:
        return _fill_catalog(args, model, options)
    _translate_lines(args, model, options)


def _translator(args) -> tuple:
    """(the model on `--engine` at `--compute-type`, the decoding options it honours)."""
    if args.engine == "ctranslate2":
        from keras_s2s.export.ctranslate2 import decoding_options, translator_for

        options = decoding_options(given_decoding(args))  # before the model loads
        model = translator_for(args.model, compute_type=args.compute_type)
    else:
        from keras_s2s import tasks
        from keras_s2s.export.native import check_compute_type, with_compute_type

        task, given = tasks.get("translation"), given_decoding(args)
        task.decoding(**given), check_compute_type(args.compute_type)  # before the model loads
        model = with_compute_type(load_for("translation", args.model), args.compute_type)
        options = task.decoding(model, **given)  # a preset's own search unless flags change it
    return model, {"batch_size": args.batch_size, **options}


def _translate_lines(args, model, options) -> None:
    """Stream the input in chunks (memory stays flat however long it is) to stdout or, all or
    nothing, to `--output` (an interrupted run leaves no half-written file)."""
    from keras_s2s.files import atomic_write

    total = _line_count(args.input) if args.input else None
    show = bool(args.output) or sys.stderr.isatty()
    options["progress"] = progress = Progress(total, "lines", "translated", show=show)
    source = open(args.input, "rb") if args.input else sys.stdin.buffer
    lines = _text_lines(source, args.input or "stdin")
    try:
        if args.output:

            def write(path):
                with open(path, "w", encoding="utf-8") as handle:
                    _write_translations(handle, lines, model, options)

            atomic_write(args.output, write)
        else:
            _write_translations(sys.stdout, lines, model, options)
    finally:
        progress.close()
        if args.input:
            source.close()


def _write_translations(out, lines, model, options) -> None:
    """Each chunk of `lines` translated and written to the stream `out`."""
    first = 1
    for chunk in _chunks(lines, options["batch_size"] * 16):
        out.writelines(text + "\n" for text in model.translate(chunk, first_line=first, **options))
        out.flush()
        first += len(chunk)


def _line_count(path: str) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def _fill_catalog(args, model, options) -> None:
    """`translate --po`: the catalog's untranslated messages filled, one summary line on stderr."""
    from keras_s2s.text.catalogs import fill_catalog

    progress = Progress(None, "texts", "translated")
    options["progress"] = progress
    try:
        report = fill_catalog(args.po, lambda texts: model.translate(texts, **options), args.output)
    finally:
        progress.close()
    for failure in report.failed:
        print(f"{failure}: left untranslated", file=sys.stderr)
    print(report.summary(args.output or args.po), file=sys.stderr)


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


COMMANDS = (
    Command("translate", "translate lines from a file or stdin", _translate_arguments, _translate),
    Command("encode", "tokenize a parallel corpus once into a compact folder of token ids (train "
            "with --data FOLDER)", _encode_arguments, _encode),
)  # fmt: skip
