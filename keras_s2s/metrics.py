"""What the zoo measures: token accuracy while training (padding ignored), BLEU/chrF of translations,
WER/CER of transcripts.

Example:
    >>> score(["the cat sat"], ["the cat sat"])["bleu"]
    100.0
"""

from __future__ import annotations

import keras
import sacrebleu
from keras import ops


def score(hypotheses: list[str], references: list[str]) -> dict:
    """sacreBLEU and chrF of detokenized text, with the BLEU signature."""
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    return {
        "bleu": round(bleu.corpus_score(hypotheses, [references]).score, 2),
        "chrf": round(chrf.corpus_score(hypotheses, [references]).score, 2),
        "bleu_signature": str(bleu.get_signature()),
    }


def error_rates(hypotheses: list[str], references: list[str]) -> dict:
    """WER and CER in percent (jiwer), over the whole set."""
    from keras_s2s.audio.io import require_audio_extra

    jiwer = require_audio_extra("jiwer")
    # jiwer refuses empty hypotheses
    hypotheses = [h if h.strip() else "<empty>" for h in hypotheses]
    return {
        "wer": round(100 * jiwer.wer(references, hypotheses), 2),
        "cer": round(100 * jiwer.cer(references, hypotheses), 2),
    }


@keras.saving.register_keras_serializable(package="keras_s2s")
class MaskedAccuracy(keras.metrics.Mean):
    """Token accuracy over non-padding labels.

    Example:
        >>> model.compile(..., metrics=[MaskedAccuracy()])
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        correct = ops.cast(
            ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), y_true), "float32"
        )
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, "float32")
        return super().update_state(correct, sample_weight=mask)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
