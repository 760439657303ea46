"""The peer recipe: keras.io's "English-to-Spanish translation with KerasHub", on a corpus of ours.

    python benchmarks/peer_kerashub_translation.py corpus/ --time-limit 25m --json peer.json \
        --vocabulary-cache peer_vocab/

Written from the recipe's public description (not its code), with its
settings: lowercased text, WordPiece vocabularies of 15,000 per language
(`keras_hub.tokenizers.compute_word_piece_vocabulary`), sequences of 40
tokens, batches of 64, one `TransformerEncoder` and one `TransformerDecoder`
(embedding 256, feed-forward 2048, 8 heads) over `TokenAndPositionEmbedding`,
dropout 0.5 before the softmax, RMSprop, cross-entropy that ignores padding,
greedy decoding with `keras_hub.samplers.GreedySampler`. The only change: it
trains until `--time-limit` of training time is spent (the recipe's epoch
count is a guess), so that it can be set side by side with
`keras-s2s train ... --time-limit`. BLEU and chrF (sacrebleu) on the
corpus's test split, as the recipe writes its output (lowercase, WordPiece
spacing) and after a generous clean-up (spaces before punctuation and inside
hyphenated words removed, case-insensitive), so the peer is not penalized
for its casing or spacing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import keras
import keras_hub
import sacrebleu
import tensorflow as tf

from keras_s2s.config import parse_duration
from keras_s2s.files import atomic_write
from keras_s2s.text.corpus import read_tsv

VOCAB_SIZE = 15000
SEQUENCE_LENGTH = 40
BATCH_SIZE = 64
EMBED_DIM = 256
INTERMEDIATE_DIM = 2048
NUM_HEADS = 8
RESERVED = ["[PAD]", "[UNK]", "[START]", "[END]"]


def word_piece(
    texts: list[str], cache: Path | None = None
) -> keras_hub.tokenizers.WordPieceTokenizer:
    """The recipe's WordPiece tokenizer; its vocabulary read from `cache` (one piece a line) when that exists,
    else computed (about half an hour on 2 cores for 560,000 strings) and written there."""
    if cache is not None and cache.is_file():
        vocabulary = cache.read_text(encoding="utf-8").split("\n")
    else:
        vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
            tf.data.Dataset.from_tensor_slices(texts).batch(1000),
            vocabulary_size=VOCAB_SIZE,
            reserved_tokens=RESERVED,
            lowercase=True,
        )
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(
                cache, lambda path: path.write_text("\n".join(vocabulary), encoding="utf-8")
            )
    return keras_hub.tokenizers.WordPieceTokenizer(vocabulary=vocabulary, lowercase=True)


def build_model(source_vocab: int, target_vocab: int) -> keras.Model:
    encoder_inputs = keras.Input(shape=(None,), dtype="int32", name="encoder_inputs")
    x = keras_hub.layers.TokenAndPositionEmbedding(source_vocab, SEQUENCE_LENGTH, EMBED_DIM)(
        encoder_inputs
    )
    encoded = keras_hub.layers.TransformerEncoder(INTERMEDIATE_DIM, NUM_HEADS)(x)
    decoder_inputs = keras.Input(shape=(None,), dtype="int32", name="decoder_inputs")
    y = keras_hub.layers.TokenAndPositionEmbedding(target_vocab, SEQUENCE_LENGTH, EMBED_DIM)(
        decoder_inputs
    )
    y = keras_hub.layers.TransformerDecoder(INTERMEDIATE_DIM, NUM_HEADS)(
        decoder_sequence=y, encoder_sequence=encoded
    )
    y = keras.layers.Dropout(0.5)(y)
    outputs = keras.layers.Dense(target_vocab, activation="softmax")(y)
    return keras.Model([encoder_inputs, decoder_inputs], outputs)


class StopAfter(keras.callbacks.Callback):
    """Stops training once `seconds` of fit time are spent (checked after every batch)."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds, self.start, self.steps = seconds, None, 0

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if time.perf_counter() - self.start >= self.seconds:
            self.model.stop_training = True


def tidy(text: str) -> str:
    """The peer's output without WordPiece spacing: 'datei öffnen .' -> 'datei öffnen.'"""
    text = re.sub(r"\s+([.,:;!?)\]…])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    return re.sub(r"\s*([-/'])\s*", r"\1", text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="directory with train.tsv, dev.tsv, test.tsv")
    parser.add_argument("--time-limit", default="25m")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--vocabulary-cache",
        type=Path,
        help="folder for the two WordPiece vocabularies (reused when there: not part of the budget)",
    )
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    train, dev, test = (
        list(zip(*read_tsv(args.corpus / f"{name}.tsv"))) for name in ("train", "dev", "test")
    )
    start = time.perf_counter()
    cache = args.vocabulary_cache
    source_tokenizer = word_piece([s.lower() for s, _ in train], cache and cache / "source.txt")
    target_tokenizer = word_piece([t.lower() for _, t in train], cache and cache / "target.txt")
    print(f"WordPiece vocabularies in {time.perf_counter() - start:.0f}s", flush=True)
    source_packer = keras_hub.layers.StartEndPacker(
        SEQUENCE_LENGTH, pad_value=source_tokenizer.token_to_id("[PAD]")
    )
    target_packer = keras_hub.layers.StartEndPacker(
        SEQUENCE_LENGTH + 1,
        start_value=target_tokenizer.token_to_id("[START]"),
        end_value=target_tokenizer.token_to_id("[END]"),
        pad_value=target_tokenizer.token_to_id("[PAD]"),
    )

    def batches(pairs, shuffle):
        def encode(source, target):
            src = source_packer(source_tokenizer(tf.strings.lower(source)))
            tgt = target_packer(target_tokenizer(tf.strings.lower(target)))
            return {"encoder_inputs": src, "decoder_inputs": tgt[:, :-1]}, tgt[:, 1:]

        ds = tf.data.Dataset.from_tensor_slices(([s for s, _ in pairs], [t for _, t in pairs]))
        ds = ds.shuffle(len(pairs), seed=args.seed) if shuffle else ds
        return ds.batch(BATCH_SIZE).map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(16)

    model = build_model(source_tokenizer.vocabulary_size(), target_tokenizer.vocabulary_size())
    model.compile(
        "rmsprop",
        loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=0),
        metrics=["accuracy"],
    )
    stop = StopAfter(parse_duration(args.time_limit))
    start = time.perf_counter()
    model.fit(
        batches(train, True),
        validation_data=batches(dev, False),
        epochs=1000,
        callbacks=[stop],
        verbose=2,
    )
    train_seconds = time.perf_counter() - start
    print(f"trained {stop.steps} steps in {train_seconds:.0f}s", flush=True)

    sampler = keras_hub.samplers.GreedySampler()
    end_id = target_tokenizer.token_to_id("[END]")

    def translate(sources: list[str]) -> list[str]:
        encoder_input = source_packer(source_tokenizer(tf.constant([s.lower() for s in sources])))
        count = len(sources)

        def next_token(prompt, cache, index):
            logits = model([encoder_input, prompt])[:, index - 1, :]
            return logits, None, cache

        prompt = tf.concat(
            [
                tf.fill((count, 1), target_tokenizer.token_to_id("[START]")),
                tf.fill((count, SEQUENCE_LENGTH - 1), target_tokenizer.token_to_id("[PAD]")),
            ],
            axis=-1,
        )
        tokens = sampler(
            next_token, prompt, cache=None, index=1, mask=None, stop_token_ids=[end_id]
        )
        texts = []
        for row in tokens.numpy().tolist():
            row = row[1:]
            row = row[: row.index(end_id)] if end_id in row else row
            text = target_tokenizer.detokenize([[t for t in row if t >= len(RESERVED)] or [1]])[0]
            text = text.numpy() if hasattr(text, "numpy") else text
            texts.append(
                (text.decode("utf-8") if isinstance(text, bytes) else str(text)).replace(
                    "[UNK]", ""
                )
            )
        return texts

    start = time.perf_counter()
    sources, references = [s for s, _ in test], [t for _, t in test]
    hypotheses = []
    for begin in range(0, len(sources), 256):
        hypotheses.extend(translate(sources[begin : begin + 256]))
    tidied = [tidy(h) for h in hypotheses]
    result = {
        "recipe": "keras.io English-to-Spanish translation with KerasHub (settings in the script's docstring)",
        "time_limit": args.time_limit,
        "train_seconds": round(train_seconds, 1),
        "steps": stop.steps,
        "test_pairs": len(test),
        "decode_seconds": round(time.perf_counter() - start, 1),
        "bleu_as_written": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "bleu": round(sacrebleu.corpus_bleu(tidied, [references], lowercase=True).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(tidied, [[r.lower() for r in references]]).score, 2),
        "examples": [(s, h, r) for s, h, r in list(zip(sources, tidied, references))[:10]],
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
