"""Character vocabulary for CTC speech recognition: id 0 is the CTC blank.

Transcripts are lower-cased and runs of spaces collapsed; a transcript with a
character outside the vocabulary is reported by `check` (the pipeline skips
it, counts it and logs which characters).

Example:
    >>> chars = CharVocabulary()
    >>> chars.encode("hello world"), chars.decode(chars.encode("hello world"))
"""

from __future__ import annotations

import keras

from keras_s2s.token_ids import EOS_ID

DEFAULT_CHARACTERS = " 'abcdefghijklmnopqrstuvwxyz"


def normalize_transcript(text: str) -> str:
    return " ".join(text.lower().split())


@keras.saving.register_keras_serializable(package="keras_s2s")
class CharVocabulary:
    """Characters <-> ids, with 0 reserved for the CTC blank.

    Args:
        characters: str. The alphabet (default: space, apostrophe, a-z).
    """

    def __init__(self, characters: str = DEFAULT_CHARACTERS):
        if len(set(characters)) != len(characters):
            raise ValueError(f"characters must be unique: {characters!r}")
        self.characters = characters
        self._ids = {c: i + 1 for i, c in enumerate(characters)}

    @property
    def vocab_size(self) -> int:
        """Output classes: the characters plus the blank."""
        return len(self.characters) + 1

    def unknown(self, text: str) -> set[str]:
        """Characters of the normalized `text` that are not in the vocabulary."""
        return {c for c in normalize_transcript(text) if c not in self._ids}

    def encode(self, text: str) -> list[int]:
        text = normalize_transcript(text)
        missing = self.unknown(text)
        if missing:
            raise ValueError(
                f"{text!r} has characters outside the vocabulary: {''.join(sorted(missing))!r}"
            )
        return [self._ids[c] for c in text]

    def fragments(self) -> list[str]:
        """The text each class id adds (id 0, the blank: nothing): a CTC decoder's spelling table."""
        return ["", *self.characters]

    def decode(self, ids) -> str:
        """Text of ids (0 = blank and padding are dropped; no CTC collapsing here)."""
        return "".join(
            self.characters[int(i) - 1] for i in ids if 0 < int(i) <= len(self.characters)
        ).strip()

    def get_config(self) -> dict:
        return {"characters": self.characters}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_s2s")
class SubwordVocabulary:
    """SentencePiece pieces as CTC outputs (`data.vocabulary: subword`); id 0 (padding) is the blank.

    Same interface as `CharVocabulary`. Example:
        >>> vocab = SubwordVocabulary.train(transcripts, vocab_size=256)
        >>> vocab.decode(vocab.encode("the red dog"))
        'the red dog'
    """

    def __init__(self, tokenizer):
        from keras_s2s.text.tokenizer import SubwordTokenizer

        self.tokenizer = (
            SubwordTokenizer.from_config(tokenizer) if isinstance(tokenizer, dict) else tokenizer
        )

    @classmethod
    def train(cls, transcripts: list[str], vocab_size: int = 256):
        from keras_s2s.text.tokenizer import SubwordTokenizer

        return cls(
            SubwordTokenizer.train(
                [normalize_transcript(t) for t in transcripts], vocab_size=vocab_size
            )
        )

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def unknown(self, text: str) -> set[str]:
        return set()  # every character maps to a piece or to <unk>

    def fragments(self) -> list[str]:
        """The text each class id adds: its piece, with SentencePiece's word mark as a space (the
        blank and the special pieces: nothing)."""
        pieces = self.tokenizer.pieces()
        return [
            "" if i <= EOS_ID else piece.replace("\u2581", " ") for i, piece in enumerate(pieces)
        ]

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.tokenize([normalize_transcript(text)])[0]

    def decode(self, ids) -> str:
        return self.tokenizer.detokenize([[int(i) for i in ids]])[0].strip()

    def get_config(self) -> dict:
        return {"tokenizer": self.tokenizer.get_config()}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)
