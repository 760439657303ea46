"""Serving one trained Transformer, every engine in one run: target tokens/s, sentences/s and BLEU.

Engines: the native Keras model in float32, mixed_bfloat16 and int8 (Keras's
`model.quantize("int8")`), the SavedModel export (decoding inside the graph),
and CTranslate2 with float32 and int8 weights. Each decodes the same held-out
sentences greedily and with beam 4, in batches of 1 and 32. Every measurement
is one pass over the sentences after a warm-up batch; the machine is shared,
so compare the ratios printed in the same run, not absolute numbers.

    python benchmarks/bench_serving.py --model runs/transformer_demo --data demo
    python benchmarks/bench_serving.py --model runs/transformer_demo --sentences 100 --batch-sizes 32
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
import yaml  # noqa: E402

from keras_s2s.data import read_splits  # noqa: E402
from keras_s2s.export import (  # noqa: E402
    CTranslate2Translator,
    export_ctranslate2,
    export_saved_model,
    with_compute_type,  # noqa: E402
)
from keras_s2s.metrics import score  # noqa: E402
from keras_s2s.presets import load_preset_directory  # noqa: E402

ENGINES = (
    "native_float32",
    "native_bfloat16",
    "native_bfloat16_full_cache",
    "native_int8",
    "saved_model",
    "ctranslate2_float32",
    "ctranslate2_int8",
)


def native(run: Path, compute_type: str, full_cache: bool = False):
    """The run's model at `compute_type` (see `NATIVE_COMPUTE_TYPES`). `full_cache`: every batch
    decodes up to `decode_max_length` (cache that long) instead of 2 x its longest source + 10."""
    model = with_compute_type(load_preset_directory(run / "preset"), compute_type)
    ratio = None if full_cache else 2.0
    return lambda texts, beam, batch: model.translate(
        texts, batch_size=batch, beam_width=beam, max_length_ratio=ratio
    )


def saved_model(run: Path, folder: Path):
    """The SavedModel export, one per beam width (the width is fixed at export)."""
    import tensorflow_text  # noqa: F401  registers the SentencePiece ops

    keras.mixed_precision.set_global_policy("float32")
    model = load_preset_directory(run / "preset")
    served = {}
    for beam in (1, 4):
        path = export_saved_model(model, folder / f"saved_model_beam{beam}", beam_width=beam)
        served[beam] = tf.saved_model.load(str(path)).signatures["serving_default"]

    def translate(texts, beam, batch):
        out = []
        for start in range(0, len(texts), batch):
            result = served[beam](text=tf.constant(texts[start : start + batch]))["translation"]
            out += [t.decode("utf-8") for t in result.numpy()]
        return out

    return translate


def ctranslate2(run: Path, folder: Path, quantization: str | None, threads: int):
    keras.mixed_precision.set_global_policy("float32")
    path = export_ctranslate2(load_preset_directory(run / "preset"), folder / f"ct2_{quantization or 'float32'}",
                              quantization=quantization)  # fmt: skip
    translator = CTranslate2Translator(path, threads=threads)
    return lambda texts, beam, batch: translator.translate(texts, batch_size=batch, beam_width=beam)


def measure(translate, texts, references, tokenizer, beam: int, batch: int) -> dict:
    translate(texts[:batch], beam, batch)  # warm-up: traces, allocations
    start = time.perf_counter()
    hypotheses = translate(texts, beam, batch)
    seconds = time.perf_counter() - start
    tokens = sum(len(ids) + 1 for ids in tokenizer.tokenize(hypotheses))  # pieces + EOS
    return {"tokens_per_s": tokens / seconds, "sentences_per_s": len(texts) / seconds,
            "bleu": score(hypotheses, references)["bleu"], "seconds": seconds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="a finished Transformer run directory")
    parser.add_argument("--data", help="its corpus (default: the run card's data.source)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    run = Path(args.model)
    data = yaml.safe_load((run / "card.yaml").read_text())["data"]
    splits = {
        key: data[key] for key in ("num_train", "num_valid", "num_test", "seed") if key in data
    }
    splits["num_test"] = max(splits.get("num_test", 0), args.sentences)
    test = read_splits(args.data or data["source"], **splits)[2][: args.sentences]
    texts, references = [s for s, _ in test], [t for _, t in test]
    tokenizer = load_preset_directory(run / "preset").tokenizer.target
    folder = Path(tempfile.mkdtemp(prefix="bench-serving-"))
    builders = {
        "native_float32": lambda: native(run, "float32"),
        "native_bfloat16": lambda: native(run, "bfloat16"),
        "native_bfloat16_full_cache": lambda: native(run, "bfloat16", full_cache=True),
        "native_int8": lambda: native(run, "int8"),
        "saved_model": lambda: saved_model(run, folder),
        "ctranslate2_float32": lambda: ctranslate2(run, folder, None, args.threads),
        "ctranslate2_int8": lambda: ctranslate2(run, folder, "int8", args.threads),
    }
    results = []
    print(f"{len(texts)} sentences, {args.threads} threads for CTranslate2 (TensorFlow: all cores)")
    for engine in args.engines.split(","):
        try:
            translate = builders[engine]()
        # an engine that does not apply (e.g. CTranslate2 not installed) is reported, not fatal
        except Exception as error:
            print(f"{engine:26s} not measured: {type(error).__name__}: {str(error)[:120]}")
            continue
        for batch in (int(b) for b in args.batch_sizes.split(",")):
            for beam in (1, 4):
                try:
                    measured = measure(translate, texts, references, tokenizer, beam, batch)
                except Exception as error:
                    print(f"{engine:26s} batch {batch:2d} beam {beam}: failed: {type(error).__name__}: "
                          f"{str(error)[:200]}")  # fmt: skip
                    continue
                row = {"engine": engine, "batch": batch, "beam": beam, **measured}
                results.append(row)
                print(f"{engine:26s} batch {batch:2d} beam {beam}: {row['tokens_per_s']:8.1f} target tokens/s "
                      f"{row['sentences_per_s']:7.2f} sentences/s  BLEU {row['bleu']:6.2f}", flush=True)  # fmt: skip
    for reference in ("native_float32", "ctranslate2_float32"):
        print(f"\nratios to {reference} (target tokens/s), same batch and beam:")
        base = {
            (r["batch"], r["beam"]): r["tokens_per_s"] for r in results if r["engine"] == reference
        }
        for row in results:
            key = (row["batch"], row["beam"])
            if key in base:
                print(f"  {row['engine']:26s} batch {key[0]:2d} beam {key[1]}: "
                      f"{row['tokens_per_s'] / base[key]:5.2f}x")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
