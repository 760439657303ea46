"""Translation: `Seq2SeqLM` models (GNMT, Transformer, ConvS2S), subword tokenizers, BLEU/chrF.

Example:
    >>> result = evaluate_translation(model, corpus.test_pairs, Path("runs/gnmt_demo"), beam_width=4)
    >>> result["bleu"], result["chrf"]
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path

from keras_s2s.config import FITTABLE, LENGTH_PENALTY
from keras_s2s.data.parallel import load_parallel_data, read_splits
from keras_s2s.decoding.loops import count_loops
from keras_s2s.files import atomic_write, write_results
from keras_s2s.losses import SmoothedCrossEntropy
from keras_s2s.metrics import MaskedAccuracy, score
from keras_s2s.models import Seq2SeqLM
from keras_s2s.schema import COUNT, Choice, Number, Optional, Subset
from keras_s2s.tasks.base import (
    CORPUS_SCHEMA,
    PreparedTask,
    Task,
    require_test_split,
    run_batching,
    write_card,
)
from keras_s2s.text.tokenizer import (
    load_run_tokenizer,
    save_run_tokenizer,
)

log = logging.getLogger("keras_s2s")
# the (beam width, length penalty) pairs `evaluate --grid` scores on the dev split
DECODING_GRID = ((1, 0.6), (4, 0.6), (4, 1.0), (8, 0.6), (8, 1.0))


def evaluate_translation(
    model,
    test_pairs: list,
    out_dir: Path | None = None,
    demo=None,
    samples: int = 3,
    beam_width: int = 1,
    length_penalty: float = LENGTH_PENALTY,
    coverage_penalty: float = 0.0,
    loop_guard: bool = True,
) -> dict:
    """Translate the test split (greedy or beam search), score it, count the hypotheses that loop
    where their source does not (`looping`), write hypotheses, print a few samples."""
    if not test_pairs:
        raise ValueError("the test split is empty: nothing to evaluate")
    sources = [s for s, _ in test_pairs]
    references = [t for _, t in test_pairs]
    start = time.time()
    hypotheses = model.translate(
        sources,
        beam_width=beam_width,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        loop_guard=loop_guard,
    )
    result = score(hypotheses, references)
    looping = count_loops(hypotheses, sources)
    result["looping"] = looping
    result["looping_percent"] = round(100.0 * looping / len(sources), 2)
    result["loop_guard"] = loop_guard
    result["beam_width"] = beam_width
    result["length_penalty"] = length_penalty if beam_width > 1 else None
    result["coverage_penalty"] = coverage_penalty
    result["sentences"] = len(sources)
    result["decode_seconds"] = round(time.time() - start, 1)
    if demo is not None:
        result["dictionary_baseline_bleu"] = score(demo.dictionary_baseline(sources), references)[
            "bleu"
        ]
    if out_dir is not None:
        write_results(out_dir, "hypotheses", hypotheses, result, beam_width)
    decoding = "greedy" if beam_width == 1 else f"beam {beam_width}, alpha {length_penalty}"
    if coverage_penalty:
        decoding += f", beta {coverage_penalty}"
    if not loop_guard:
        decoding += ", no loop guard"
    print(
        f"held-out BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  ({len(sources)} sentences, "
        f"{decoding}; {looping} looping)"
    )
    print(f"  {result['bleu_signature']}")
    if "dictionary_baseline_bleu" in result:
        print(f"  word-by-word dictionary baseline BLEU {result['dictionary_baseline_bleu']:.2f}")
    for src, ref, hyp in list(zip(sources, references, hypotheses))[:samples]:
        print(f"  source:     {src}\n  reference:  {ref}\n  model:      {hyp}")
    return result


def decoding_grid(
    model, dev_pairs: list, out_dir: Path | None = None, settings=DECODING_GRID
) -> dict:
    """Score the dev pairs under each (beam width, length penalty) of `settings` (each printed by
    `evaluate_translation`), write `decoding-grid.json` and name the best: decoding is chosen on
    dev, never on the test split.

    Example:
        >>> decoding_grid(model, corpus.valid_pairs)["best"]
        {'beam_width': 4, 'length_penalty': 1.0, 'bleu': 25.48, ...}
    """
    if not dev_pairs:
        raise ValueError("the dev split is empty: nothing to choose the decoding on")
    print(f"decoding on the dev split ({len(dev_pairs)} sentences):")
    keys = ("beam_width", "length_penalty", "bleu", "chrf", "looping", "decode_seconds")
    rows = []
    for beam_width, alpha in settings:
        result = evaluate_translation(
            model, dev_pairs, samples=0, beam_width=beam_width, length_penalty=alpha
        )
        rows.append({key: result[key] for key in keys})
    best = max(rows, key=lambda row: (row["bleu"], -row["beam_width"]))
    summary = {"split": "dev", "sentences": len(dev_pairs), "grid": rows, "best": best}
    if out_dir is not None:
        atomic_write(
            Path(out_dir) / "decoding-grid.json",
            lambda path: path.write_text(json.dumps(summary, indent=2), encoding="utf-8"),
        )
    flags = f"--beam-width {best['beam_width']}"
    if best["beam_width"] > 1:
        flags += f" --length-penalty {best['length_penalty']}"
    print(f"best on dev: BLEU {best['bleu']:.2f} with {flags}")
    return summary


class Translation(Task):
    """Text to text: a subword tokenizer learned per run, label-smoothed cross-entropy, BLEU."""

    name = "translation"
    learns_tokenizer = True
    data_schema = {
        **CORPUS_SCHEMA,  # the card's data keys are load_parallel_data's arguments
        "vocab_size": COUNT,
        "max_length": COUNT,
        "bucket_width": COUNT,
        "batch_tokens": Optional(COUNT),  # batches of about this many tokens (instead of rows)
        "direction": Optional(str),  # a TFDS corpus's language pair: "de-en"
        "tokenization": Choice("sentencepiece", "pretokenized"),
        "shared_vocabulary": bool,
        "source_vocab_size": Optional(COUNT),
        # settings chosen from a corpus other than the demo (keras_s2s/data/fitting.py)
        "fit_to_corpus": Subset(*FITTABLE),
    }
    decoding_options = {
        "beam_width": 1,
        "length_penalty": LENGTH_PENALTY,
        "coverage_penalty": 0.0,
        "loop_guard": True,  # keras_s2s.decoding.loops
    }
    model_class = Seq2SeqLM
    command = "translate"
    noun = "a translation model"
    training_schema = {"label_smoothing": Number(0, 0.99)}  # label-smoothed cross-entropy
    validation_metric = "bleu"
    validation_metrics = ("bleu", "chrf", "loss")

    def validation_scores(self, model, pairs: list) -> dict:
        """Greedy BLEU and chrF of the dev pairs (source, reference)."""
        sources, references = zip(*pairs)
        result = score(model.translate(list(sources)), list(references))
        return {"bleu": result["bleu"], "chrf": result["chrf"]}

    def model_arguments(self, card, tokenizer=None, **_) -> dict:
        arguments = {"tokenizer": tokenizer}
        # the size the tokenizer will learn
        if "vocab_size" not in card.model and "vocab_size" in card.data:
            arguments["vocab_size"] = card.data["vocab_size"]
        if tokenizer is not None:
            arguments["vocab_size"] = tokenizer.vocab_size
            arguments["source_vocab_size"] = (
                0 if tokenizer.source is tokenizer else tokenizer.source_vocab_size
            )
        return arguments

    def run_assets(self, run_dir: Path, card) -> dict:
        tokenizer = load_run_tokenizer(
            run_dir,
            card.data.get("tokenization", "sentencepiece"),
            card.data.get("shared_vocabulary", True),
        )
        if tokenizer is None:
            raise ValueError(
                f"{run_dir}: the run stored no tokenizer yet (its first epoch had not begun)"
            )
        return {"tokenizer": tokenizer}

    def compile_arguments(self, card) -> dict:
        return {
            "loss": SmoothedCrossEntropy(card.training.get("label_smoothing", 0.0)),
            "metrics": [MaskedAccuracy()],
        }

    def prepare(self, card, out: Path, runtime, tokenizer=None) -> PreparedTask:
        tokenization = card.data.get("tokenization", "sentencepiece")
        stored = load_run_tokenizer(out, tokenization, card.data.get("shared_vocabulary", True))
        tokenizer = stored or tokenizer  # else learned from the corpus
        start = time.time()
        plan, settings = run_batching(card, runtime)
        corpus = load_parallel_data(
            **settings,  # the card's data keys are load_parallel_data's arguments
            batching=plan,
            tokenizer=tokenizer,
            length_limit=card.model["max_positions"] - 1
            if card.model.get("max_positions")
            else None,  # BOS/EOS
        )
        require_test_split(len(corpus.test_pairs), card)
        for key, (value, reason) in corpus.fitted.items():
            log.info(
                "data.%s fitted to the corpus: %s (card: %s) - %s; fix it with --set %s=N",
                key,
                value,
                card.data.get(key),
                reason,
                key,
            )
        for key, value in corpus.from_corpus.items():
            if key in card.data and card.data[key] != value:
                log.info("data.%s: %s, the encoded corpus's (card: %s)", key, value, card.data[key])
        # the card the run records (card.yaml, the preset) holds the fitted values
        fitted = {key: value for key, (value, _) in corpus.fitted.items()}
        card = dataclasses.replace(card, data={**card.data, **fitted, **corpus.from_corpus})
        tokenization = card.data.get("tokenization", "sentencepiece")
        log.info(
            "data ready in %.1fs: %d train / %d valid / %d test pairs, %d subwords",
            time.time() - start,
            len(corpus.train_pairs),
            len(corpus.valid_pairs),
            len(corpus.test_pairs),
            corpus.tokenizer.vocab_size,
        )

        def commit():
            write_card(out, card)
            if stored is None:
                save_run_tokenizer(corpus.tokenizer, out, tokenization, write=atomic_write)

        return PreparedTask(
            card=card,
            train=corpus.train,
            valid=corpus.valid,
            num_train=len(corpus.train_pairs),
            build_kwargs={"tokenizer": corpus.tokenizer},
            evaluate=lambda model: evaluate_translation(
                model, corpus.test_pairs, out, demo=corpus.demo
            ),
            commit=commit,
            valid_pairs=corpus.valid_pairs,
            longest_batch=corpus.longest_batch,
        )

    def evaluate_run(
        self,
        model,
        card,
        run_dir: Path,
        data: str | None = None,
        *,
        beam_width: int,
        length_penalty: float,
        coverage_penalty: float,
        loop_guard: bool,
    ) -> dict:
        _, _, test, demo = _read_splits(card, data)
        return evaluate_translation(
            model,
            test,
            run_dir,
            demo=demo,
            beam_width=beam_width,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
            loop_guard=loop_guard,
        )

    def model_decoding(self, model) -> dict:
        """A preset's tuned search (its metadata's `decoding`, e.g. beam 4): `Seq2SeqLM.default_decoding`."""
        return dict(model.default_decoding)

    def decoding_grid(self, model, card, run_dir: Path, data: str | None = None) -> dict:
        _, valid, _, _ = _read_splits(card, data)
        return decoding_grid(model, valid, run_dir)

    def serving_module(
        self,
        model,
        beam_width: int = 4,
        length_penalty: float = LENGTH_PENALTY,
        max_length_ratio: float = 2.0,
        max_length_offset: int = 10,
    ):
        from keras_s2s.tasks.serving.translation import TranslationServer

        server = TranslationServer(
            model, beam_width, length_penalty, max_length_ratio, max_length_offset
        )
        return server, server.translate


def _read_splits(card, data: str | None):
    """The splits of the card's corpus (or of `data`) as training cut them (missing keys: train's
    defaults)."""
    split_keys = ("num_train", "num_valid", "num_test", "seed", "direction")
    splits = {key: card.data[key] for key in split_keys if key in card.data}
    return read_splits(data or card.data["source"], **splits)
