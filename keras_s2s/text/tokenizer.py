"""A SentencePiece subword tokenizer that travels with the model.

Ids: 0 pad, 1 unknown, 2 begin-of-sentence, 3 end-of-sentence. The trained
model proto is kept in `get_config()`, so a saved Keras model restores it.

Example:
    >>> tok = SubwordTokenizer.train(["a small test", "a big test"], vocab_size=30)
    >>> tok.detokenize(tok.tokenize(["a big test"]))
    ['a big test']
"""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path
from typing import Iterable

import keras
import sentencepiece as spm

from keras_s2s.token_ids import BOS_ID, EOS_ID, PAD_ID, UNK_ID

# SentencePiece learns from at most this many, drawn from the whole corpus
TRAINING_SENTENCES = 200_000
# longer texts (not sentences: a paragraph, a file) do not train a vocabulary
MAX_TEXT_BYTES = 65_536


class _JointVocabulary:
    """One vocabulary for both sides: `tok.source` and `tok.target` are the tokenizer itself."""

    @property
    def source(self):
        return self

    @property
    def target(self):
        return self

    @property
    def source_vocab_size(self) -> int:
        return self.vocab_size

    @staticmethod
    def _content_ids(row) -> list[int]:
        """The ids of `row` before its first EOS, without padding and BOS."""
        row = [int(i) for i in row]
        if EOS_ID in row:
            row = row[: row.index(EOS_ID)]
        return [i for i in row if i > EOS_ID or i == UNK_ID]


RESERVED_IDS = (PAD_ID, UNK_ID, BOS_ID, EOS_ID)  # ids 0-3: no vocabulary of 4 or fewer pieces


def _train_sentencepiece(texts, longest, model, vocab_size, model_type, max_sentences) -> None:
    """Train a SentencePiece model of `texts` into the file object `model`."""
    spm.SentencePieceTrainer.train(
        # SentencePiece skips longer texts silently (and fails when it skipped them all)
        max_sentence_length=max(4192, min(longest, MAX_TEXT_BYTES)),
        sentence_iterator=iter(texts),
        model_writer=model,
        vocab_size=vocab_size,
        model_type=model_type,
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        character_coverage=1.0,
        hard_vocab_limit=False,
        input_sentence_size=max_sentences,
        shuffle_input_sentence=False,  # sampled above, reproducibly
        num_threads=1,
        minloglevel=2,
    )


@keras.saving.register_keras_serializable(package="keras_s2s")
class SubwordTokenizer(_JointVocabulary):
    """SentencePiece tokenizer (unigram or BPE) with fixed special ids.

    Args:
        proto: bytes | str. A serialized SentencePiece model, or its base64 text.
    """

    def __init__(self, proto: bytes | str):
        self.proto = base64.b64decode(proto) if isinstance(proto, str) else bytes(proto)
        self._processor = spm.SentencePieceProcessor(model_proto=self.proto)
        if self._processor.pad_id() != PAD_ID or self._processor.eos_id() != EOS_ID:
            raise ValueError("SentencePiece model must use pad=0, unk=1, bos=2, eos=3")

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int = 8000,
        model_type: str = "unigram",
        max_sentences: int = TRAINING_SENTENCES,
    ):
        """Learn a vocabulary of at most `vocab_size` pieces from `texts`.

        More than `max_sentences` texts: a seeded random sample of them is
        used, so every part of the list is represented (a joint vocabulary
        of sources followed by targets learns both languages).
        """
        texts = [t for t in texts if t.strip()]
        if not texts:
            raise ValueError("cannot train a tokenizer on an empty corpus")
        longest = max(len(t.encode("utf-8")) for t in texts)
        texts = [t for t in texts if len(t.encode("utf-8")) <= MAX_TEXT_BYTES]
        if not texts:
            raise ValueError(
                f"cannot train a tokenizer: every text is over {MAX_TEXT_BYTES:,} bytes (the longest "
                f"{longest:,}); is the corpus one sentence per line?"
            )
        reserved = len(RESERVED_IDS)
        if not isinstance(vocab_size, int) or vocab_size <= reserved:
            raise ValueError(
                f"vocab_size must be a whole number above the {reserved} reserved ids (padding, "
                f"unknown, start, end), got {vocab_size!r}"
            )
        if len(texts) > max_sentences:
            texts = random.Random(0).sample(texts, max_sentences)
        model = io.BytesIO()
        try:
            _train_sentencepiece(texts, longest, model, vocab_size, model_type, max_sentences)
        except RuntimeError as error:  # SentencePiece's INTERNAL errors name its own source lines
            if "smaller than required_chars" not in str(error):
                raise
            characters = len({c for t in texts for c in t if not c.isspace()})
            raise ValueError(
                f"vocab_size {vocab_size} is too small for this corpus: every one of its "
                f"{characters} distinct characters needs a piece, besides the {reserved} reserved "
                f"ids; use at least {characters + reserved + 1}"
            ) from None
        return cls(model.getvalue())

    @property
    def vocab_size(self) -> int:
        return self._processor.get_piece_size()

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Subword ids of each text (no BOS/EOS)."""
        return self._processor.encode(list(texts))

    def detokenize(self, ids) -> list[str]:
        """Text of each id sequence; stops at EOS and ignores pad/BOS."""
        return [self._processor.decode(self._content_ids(row)) for row in ids]

    def pieces(self) -> list[str]:
        """Every piece in id order: `<pad>`, `<unk>`, `<s>`, `</s>`, then the learned ones."""
        return [self._processor.id_to_piece(i) for i in range(self.vocab_size)]

    def in_graph(self):
        """The same model as TensorFlow ops (tensorflow-text), for graphs such as an exported SavedModel:
        `tokenize(strings)` gives the ids `tokenize` gives (no BOS/EOS), `detokenize(ragged ids)` the text.

        Example:
            >>> tokenizer.in_graph().tokenize(tf.constant(["a b"])).to_list() == tokenizer.tokenize(["a b"])
            True
        """
        import tensorflow_text as tf_text

        return tf_text.SentencepieceTokenizer(model=self.proto)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.proto)

    @classmethod
    def load(cls, path: str | Path):
        return cls(Path(path).read_bytes())

    def get_config(self) -> dict:
        return {"proto": base64.b64encode(self.proto).decode("ascii")}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_s2s")
class PretokenizedVocabulary(_JointVocabulary):
    """For corpora that are already tokenized (words or BPE pieces separated by spaces).

    Keeps the `vocab_size - 4` most frequent tokens; the rest map to unknown.
    Detokenizing joins tokens with spaces and undoes subword-nmt's `@@ `
    continuation marks, so BLEU is computed on words.

    Example:
        >>> vocab = PretokenizedVocabulary.train(["the dog@@ s bark", "the cat"], vocab_size=10)
        >>> vocab.detokenize(vocab.tokenize(["the dog@@ s bark"]))
        ['the dogs bark']
    """

    SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")

    def __init__(self, tokens: list[str]):
        self.tokens = list(tokens)
        if tuple(self.tokens[:4]) != self.SPECIALS:
            raise ValueError(f"a vocabulary must start with {self.SPECIALS}")
        self._ids = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 8000):
        from collections import Counter

        counts = Counter(token for text in texts for token in text.split())
        if not counts:
            raise ValueError("cannot build a vocabulary from an empty corpus")
        kept = [
            token
            for token, _ in counts.most_common(max(0, vocab_size - 4))
            if token not in cls.SPECIALS
        ]
        return cls(list(cls.SPECIALS) + kept)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [[self._ids.get(token, UNK_ID) for token in text.split()] for text in texts]

    def detokenize(self, ids) -> list[str]:
        texts = (" ".join(self.tokens[i] for i in self._content_ids(row)) for row in ids)
        return [text.replace("@@ ", "").removesuffix("@@") for text in texts]

    def save(self, path: str | Path) -> None:
        Path(path).write_text("\n".join(self.tokens) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path):
        return cls(Path(path).read_text(encoding="utf-8").split("\n")[:-1])

    def get_config(self) -> dict:
        return {"tokens": self.tokens}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_s2s")
class TokenizerPair:
    """Separate source and target vocabularies (`data.shared_vocabulary: false`).

    Example:
        >>> pair = TokenizerPair(SubwordTokenizer.train(en, 8000), SubwordTokenizer.train(de, 8000))
        >>> pair.source.tokenize(["a house"]), pair.target.detokenize(ids)
    """

    def __init__(self, source, target):
        self.source = (
            keras.saving.deserialize_keras_object(source) if isinstance(source, dict) else source
        )
        self.target = (
            keras.saving.deserialize_keras_object(target) if isinstance(target, dict) else target
        )

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    @property
    def source_vocab_size(self) -> int:
        return self.source.vocab_size

    def get_config(self) -> dict:
        return {
            "source": keras.saving.serialize_keras_object(self.source),
            "target": keras.saving.serialize_keras_object(self.target),
        }

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


TOKENIZER_FILES = {
    "sentencepiece": ("tokenizer.model", SubwordTokenizer),
    "pretokenized": ("tokenizer.vocab", PretokenizedVocabulary),
}


def train_tokenizer(
    kind: str,
    sources: list[str],
    targets: list[str],
    vocab_size: int,
    shared: bool = True,
    source_vocab_size: int | None = None,
):
    """A joint tokenizer of `kind` (`sentencepiece` or `pretokenized`), or a `TokenizerPair` if not `shared`."""
    cls = TOKENIZER_FILES[kind][1]
    if shared:
        return cls.train(list(sources) + list(targets), vocab_size=vocab_size)
    return TokenizerPair(
        cls.train(sources, vocab_size=source_vocab_size or vocab_size),
        cls.train(targets, vocab_size=vocab_size),
    )


def run_tokenizer_files(run_dir: Path, kind: str, shared: bool) -> dict[str, Path]:
    """The tokenizer files of a run (or encoded folder): side (`joint`, `source`, `target`) -> path."""
    name = TOKENIZER_FILES[kind][0]
    if shared:
        return {"joint": run_dir / name}
    stem, suffix = name.split(".")
    return {side: run_dir / f"{stem}.{side}.{suffix}" for side in ("source", "target")}


def save_run_tokenizer(tokenizer, run_dir: str | Path, kind: str, write=None) -> None:
    """Store a run's tokenizer files (tokenizer.model, or tokenizer.source.model + tokenizer.target.model).

    `write(path, save)` performs each write (the runner passes its atomic writer).
    """
    write = write or (lambda path, save: save(path))
    files = run_tokenizer_files(
        Path(run_dir), kind, shared=not isinstance(tokenizer, TokenizerPair)
    )
    for side, path in files.items():
        write(path, (tokenizer if side == "joint" else getattr(tokenizer, side)).save)


def load_run_tokenizer(run_dir: str | Path, kind: str, shared: bool):
    """The tokenizer a run stored, or None if it has not stored one yet."""
    files = run_tokenizer_files(Path(run_dir), kind, shared)
    if not all(path.exists() for path in files.values()):
        return None
    cls = TOKENIZER_FILES[kind][1]
    if shared:
        return cls.load(files["joint"])
    return TokenizerPair(cls.load(files["source"]), cls.load(files["target"]))
