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
            raise ValueError(f"{text!r} has characters outside the vocabulary: {''.join(sorted(missing))!r}")
        return [self._ids[c] for c in text]

    def decode(self, ids) -> str:
        """Text of ids (0 = blank and padding are dropped; no CTC collapsing here)."""
        return "".join(self.characters[int(i) - 1] for i in ids if 0 < int(i) <= len(self.characters)).strip()

    def get_config(self) -> dict:
        return {"characters": self.characters}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)
