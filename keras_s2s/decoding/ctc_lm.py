"""CTC beam search fused with a word n-gram language model, through pyctcdecode (KenLM scores it).

Each hypothesis scores `log p_ctc + alpha * log p_lm + beta * words` (pyctcdecode's
shallow fusion); the LM is an ARPA file (`keras-s2s lm` writes one from
transcripts, see `ngram_lm.py`). Optional extra: `pip install "keras-s2s[lm]"`.

Example:
    >>> decoder = LMDecoder(model.vocabulary, "runs/lm.arpa", alpha=0.5, beta=1.0, beam_width=64)
    >>> decoder.decode(log_probabilities, lengths)
    ['the red dog runs']
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger("keras_s2s")


def require_pyctcdecode():
    """pyctcdecode, after checking that KenLM can be imported too; an ImportError saying how to install."""
    try:
        import kenlm  # noqa: F401  pyctcdecode silently decodes without the LM when kenlm is missing
        import pyctcdecode
    except ImportError:
        raise ImportError(
            'decoding with a language model needs pyctcdecode and kenlm: pip install "keras-s2s[lm]"'
        ) from None
    return pyctcdecode


def check_arpa(path: str | Path) -> Path:
    """`path` if it is an ARPA file; a clear error for a missing, empty or non-ARPA file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: language model not found (write one with keras-s2s lm)")
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(4096)
    if "\\data\\" not in head or "ngram 1=" not in head:
        raise ValueError(
            f"{path}: not an ARPA language model (no \\data\\ header with ngram counts)"
        )
    return path


class LMDecoder:
    """Beam search with an n-gram LM over a character CTC model's outputs.

    Args:
        vocabulary: CharVocabulary. Its characters are the CTC classes 1..n (0 is the blank);
            the space separates words.
        lm_path: str | Path. An ARPA file.
        alpha: float. Language model weight.
        beta: float. Word insertion bonus.
        beam_width: int. Hypotheses kept per frame.
    """

    def __init__(
        self, vocabulary, lm_path, alpha: float = 0.5, beta: float = 1.0, beam_width: int = 64
    ):
        pyctcdecode = require_pyctcdecode()
        if " " not in vocabulary.characters:
            raise ValueError("an LM needs word boundaries: the vocabulary has no space character")
        path = check_arpa(lm_path)
        self.beam_width, self.alpha, self.beta = beam_width, alpha, beta
        labels = [""] + list(vocabulary.characters)
        logging.getLogger("pyctcdecode").setLevel(logging.ERROR)  # its notes on label spelling
        self.decoder = pyctcdecode.build_ctcdecoder(
            labels, kenlm_model_path=str(path), alpha=alpha, beta=beta
        )

    def decode(self, log_probabilities: np.ndarray, lengths) -> list[str]:
        """Text of each row of float log-probabilities [B, T, classes], its first `lengths[b]` frames."""
        return [
            " ".join(
                self.decoder.decode(
                    np.asarray(row[:n], np.float32), beam_width=self.beam_width
                ).split()
            )
            for row, n in zip(log_probabilities, lengths, strict=True)
        ]
