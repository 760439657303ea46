"""A gettext catalog translated by a model, as `keras-s2s translate --po` does it, in one run:

* a catalog of the first `--messages` English texts of a corpus split (default 1,000 of
  the gettext test split), untranslated, filled by the model (each distinct text once,
  batches sorted by length): seconds and messages a second, each engine in turn;
* placeholders (`%s`, `%(name)d`, `{0}`, ...): of the messages that have them, how many
  the model's whole translation kept, how many needed the translation between them, how
  many were left untranslated (the issue's goal: kept in at least 99.5%).

    python benchmarks/bench_catalog.py --model convs2s:en-de --data corpus_de/test.tsv
    python benchmarks/bench_catalog.py --model runs/transformer_de --engines native ctranslate2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import polib  # noqa: E402

from keras_s2s.text.catalogs import PLACEHOLDER, fill_catalog  # noqa: E402


def write_catalog(path: Path, texts: list[str]) -> None:
    """An untranslated German catalog of `texts` (their order kept)."""
    catalog = polib.POFile()
    catalog.metadata = {
        "Content-Type": "text/plain; charset=UTF-8",
        "Language": "de",
        "Plural-Forms": "nplurals=2; plural=(n != 1);",
    }
    for number, text in enumerate(texts, 1):
        catalog.append(polib.POEntry(msgid=text, msgstr="", occurrences=[("corpus", number)]))
    catalog.save(str(path))


def translator(model: str, engine: str, beam_width: int):
    """texts -> texts with the model on `engine`, and the number of texts it was called with."""
    from keras_s2s import zoo
    from keras_s2s.training.runner import load_model

    if engine == "ctranslate2":
        from keras_s2s.export.ctranslate2 import translator_for

        translate = translator_for(model, compute_type="int8").translate
        options = {"beam_width": beam_width}
    else:
        preset = zoo.split_preset(model)
        loaded = zoo.load(preset[0], weights=preset[1]) if preset else load_model(model)
        translate, options = loaded.translate, {"beam_width": beam_width, "batch_size": 64}
    asked = []

    def call(texts):
        asked.append(len(texts))
        return translate(texts, **options)

    return call, asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a run directory or NAME:PRESET")
    parser.add_argument("--data", required=True, help="a TSV split: English<TAB>German")
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--engines", nargs="+", default=["native"])
    args = parser.parse_args()
    texts = []
    for line in Path(args.data).read_text(encoding="utf-8").splitlines():
        source = line.split("\t")[0]
        if source and source not in texts:
            texts.append(source)
        if len(texts) == args.messages:
            break
    with_placeholders = sum(1 for text in texts if PLACEHOLDER.search(text))
    print(f"{len(texts)} messages of {args.data}, {with_placeholders} with placeholders")
    for engine in args.engines:
        translate, asked = translator(args.model, engine, args.beam_width)
        translate(texts[:8])  # traced and warm before the clock starts
        asked.clear()
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "de.po"
            write_catalog(path, texts)
            start = time.perf_counter()
            report = fill_catalog(path, translate)
            seconds = time.perf_counter() - start
        kept = with_placeholders - report.in_pieces - len(report.failed)
        print(
            f"{engine}, beam {args.beam_width}: {report.filled} filled in {seconds:.1f} s "
            f"({report.filled / seconds:.1f} messages/s; {sum(asked)} texts translated in "
            f"{len(asked)} calls); placeholders kept by the model in {kept} of "
            f"{with_placeholders} ({100 * kept / max(with_placeholders, 1):.2f}%), "
            f"{report.in_pieces} translated between them, {len(report.failed)} left untranslated "
            f"(kept in {100 * (with_placeholders - len(report.failed)) / max(with_placeholders, 1):.2f}%"
            " of the filled catalog)"
        )


if __name__ == "__main__":
    main()
