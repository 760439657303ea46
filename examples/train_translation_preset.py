"""Train a pretrained English<->German translation preset on Debian's gettext catalogs, end to end,
in stages that continue across sessions.

    apt-get install apt-file && apt-file update                        # once (the corpus builder)
    python examples/train_translation_preset.py --work gettext --direction en-de --time-limit 3h
    python examples/train_translation_preset.py --work gettext --direction de-en --time-limit 3h
    python examples/train_translation_preset.py --work gettext --direction en-de \\
        --init-from gettext/run-convs2s_gettext-en-de-1/checkpoints/best.weights.h5 \\
        --stage 2 --time-limit 3h --learning-rate 0.0005                  # a second stage

Each stage is skipped when its output is there, so the same command continues after a stop (a
killed training resumes from its last epoch's backup; its `--time-limit` counts over restarts):

1. corpus    `examples/debian_gettext_corpus.py WORK/corpus_de` (3.6 GB of packages, ~20 min):
             English<TAB>German pairs, split by the English text
2. direction for de-en, the same splits with their sides swapped -> WORK/corpus_de-en
3. encode    `keras-s2s encode` -> WORK/ids-DIRECTION (a shared SentencePiece vocabulary)
4. train     `keras_s2s.train(CARD, ...)` in WORK/run-CARD-DIRECTION-STAGE for --time-limit,
             validated by BLEU, the best epoch kept
5. average   the last 3 epoch checkpoints averaged, kept where it scores higher on dev (beam 4)
6. evaluate  dev and test BLEU and chrF with beam 4 -> the run's scores.json
7. preset    WORK/CARD-DIRECTION.tar.gz: float16 weights, the tokenizer, a model card in its
             metadata (data, steps, BLEU/chrF per split, intended use), with its sha256

Debian package descriptions (DDTP) and LibreOffice are never read: they are kept for independent
evaluation.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import keras_s2s
from keras_s2s.cli import main as keras_s2s_command
from keras_s2s.config import LENGTH_PENALTY
from keras_s2s.metrics import score
from keras_s2s.presets import load_preset, pack_preset, read_metadata, save_to_preset, sha256_of
from keras_s2s.text import read_parallel

STAGES = ("corpus", "direction", "encode", "train", "average", "evaluate", "preset")
BEAM_WIDTH = 4
INTENDED_USE = (
    "software messages and documentation (gettext catalogs: menus, dialogs, errors, help), "
    "to be reviewed by a person; not news, speech or literature"
)


def corpus_stage(work: Path) -> Path:
    corpus = work / "corpus_de"
    if not (corpus / "test.tsv").is_file():
        builder = Path(__file__).with_name("debian_gettext_corpus.py")
        subprocess.run(
            [sys.executable, str(builder), str(corpus), "--cache", str(work / "debs")], check=True
        )
    return corpus


def direction_stage(corpus: Path, direction: str) -> Path:
    """The corpus for `direction`: en-de as built; de-en with each pair's sides swapped."""
    if direction == "en-de":
        return corpus
    swapped = corpus.with_name(f"corpus_{direction}")
    if not (swapped / "test.tsv").is_file():
        swapped.mkdir(exist_ok=True)
        for split in ("train", "dev", "test"):
            lines = (corpus / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
            pairs = (line.split("\t") for line in lines if "\t" in line)
            text = "".join(f"{target}\t{source}\n" for source, target in pairs)
            (swapped / f"{split}.tsv").write_text(text, encoding="utf-8")
    return swapped


def encode_stage(corpus: Path, work: Path, direction: str, vocab_size: int) -> Path:
    ids = work / f"ids-{direction}"
    if not (ids / "encoded.json").is_file():
        code = keras_s2s_command(
            ["encode", "--data", str(corpus), "--out", str(ids), "--vocab-size", str(vocab_size)]
        )
        if code:
            raise SystemExit(code)
    return ids


def train_stage(card: str, ids: Path, run: Path, args) -> None:
    if (run / "preset").is_dir():
        return
    overrides = {"training.time_limit": args.time_limit}
    if args.init_from:
        overrides["training.init_from"] = args.init_from
    if args.learning_rate:
        overrides["training.learning_rate"] = args.learning_rate
    keras_s2s.train(card, data=str(ids), out=run, overrides=overrides)


def dev_bleu(model, corpus: Path) -> dict:
    sources, references = read_parallel([corpus / "dev.tsv"])
    hypotheses = model.translate(list(sources), beam_width=BEAM_WIDTH)
    return score(hypotheses, list(references))


def average_stage(run: Path, corpus: Path) -> Path:
    """The run itself, or its last 3 checkpoints averaged where that scores higher on dev."""
    from keras_s2s.training.runner import average_checkpoints, load_model

    averaged, choice = run.with_name(run.name + "-avg"), run / "average.json"
    epochs = len(list((run / "checkpoints").glob("epoch-*.weights.h5")))
    if not choice.is_file():
        scores = {"run": dev_bleu(load_model(run), corpus)["bleu"], "averaged": None}
        if epochs >= 2:  # (one epoch: nothing to average)
            if not (averaged / "model.keras").is_file():
                average_checkpoints(run, averaged, last=min(3, epochs))
            scores["averaged"] = dev_bleu(load_model(averaged), corpus)["bleu"]
        choice.write_text(json.dumps(scores, indent=1))
        print(
            f"dev BLEU beam {BEAM_WIDTH}: best epoch {scores['run']}, averaged {scores['averaged']}"
        )
    scores = json.loads(choice.read_text())
    return averaged if (scores["averaged"] or 0) > scores["run"] else run


def evaluate_stage(chosen: Path, corpus: Path, run: Path) -> dict:
    from keras_s2s.training.runner import load_model

    path = run / "scores.json"
    if not path.is_file():
        model, scores = load_model(chosen), {"model": chosen.name}
        for split in ("dev", "test"):
            sources, references = read_parallel([corpus / f"{split}.tsv"])
            result = score(model.translate(list(sources), beam_width=BEAM_WIDTH), list(references))
            scores[split] = {"bleu": result["bleu"], "chrf": result["chrf"], "pairs": len(sources)}
            print(
                f"{split} beam {BEAM_WIDTH}: BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}"
            )
        path.write_text(json.dumps(scores, indent=1))
    return json.loads(path.read_text())


def preset_stage(chosen: Path, run: Path, scores: dict, work: Path, name: str) -> None:
    from keras_s2s.training.runner import load_model

    archive, folder = work / f"{name}.tar.gz", work / name
    if not archive.is_file():
        shutil.rmtree(folder, ignore_errors=True)
        manifest = json.loads((work / "corpus_de" / "manifest.json").read_text())
        metadata = read_metadata(run / "preset")
        metadata.pop("weights_dtype", None)
        metadata.update(
            trained_by="python examples/train_translation_preset.py",
            data="Debian bookworm's gettext catalogs (examples/debian_gettext_corpus.py)",
            corpus=manifest,
            scores={f"{k} beam {BEAM_WIDTH}": v for k, v in scores.items() if k != "model"},
            weights=scores["model"],
            intended_use=INTENDED_USE,
            decoding={"beam_width": BEAM_WIDTH, "length_penalty": LENGTH_PENALTY},
        )
        save_to_preset(load_model(chosen), folder, metadata, weights_dtype="float16")
        pack_preset(folder, archive)
    sha256 = sha256_of(archive)
    load_preset(str(archive), sha256)  # it loads
    print(f"{archive}: {archive.stat().st_size:,} bytes, sha256 {sha256}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", default="gettext", help="folder for every stage's output")
    parser.add_argument("--direction", choices=("en-de", "de-en"), default="en-de")
    parser.add_argument("--card", default="convs2s_gettext", help="the zoo card trained")
    parser.add_argument("--stage", type=int, default=1, help="training stage (run folder suffix)")
    parser.add_argument("--until", choices=STAGES, default="preset", help="stop after this stage")
    parser.add_argument("--time-limit", default="25m", help="training budget over restarts")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--init-from", help="start from these weights (a .weights.h5 or preset)")
    parser.add_argument("--learning-rate", type=float, help="peak learning rate")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    last = STAGES.index(args.until)
    corpus = direction_stage(corpus_stage(work), args.direction)
    if last < STAGES.index("encode"):
        return
    ids = encode_stage(corpus, work, args.direction, args.vocab_size)
    run = work / f"run-{args.card}-{args.direction}-{args.stage}"
    if last >= STAGES.index("train"):
        train_stage(args.card, ids, run, args)
    if last >= STAGES.index("average"):
        chosen = average_stage(run, corpus)
        if last >= STAGES.index("evaluate"):
            scores = evaluate_stage(chosen, corpus, run)
            if last >= STAGES.index("preset"):
                preset_stage(chosen, run, scores, work, f"{args.card}-{args.direction}")


if __name__ == "__main__":
    main()
