"""Word and character error rates of a speech recognizer on held-out utterances.

Example:
    >>> result = evaluate_speech(model, data.test_utterances, Path("runs/jasper_demo"), beam_width=8)
    >>> result["wer"]
"""

from __future__ import annotations

import time
from pathlib import Path

from keras_s2s.data.characters import normalize_transcript
from keras_s2s.training.files import write_results


def error_rates(hypotheses: list[str], references: list[str]) -> dict:
    """WER and CER in percent (jiwer), over the whole set."""
    from keras_s2s.data.audio import require_audio_extra

    jiwer = require_audio_extra("jiwer")

    hypotheses = [h if h.strip() else "<empty>" for h in hypotheses]  # jiwer refuses empty hypotheses
    return {"wer": round(100 * jiwer.wer(references, hypotheses), 2),
            "cer": round(100 * jiwer.cer(references, hypotheses), 2)}


def evaluate_speech(model, utterances: list, out_dir: Path | None = None, beam_width: int = 1,
                    samples: int = 3) -> dict:
    """Transcribe `utterances`, print WER/CER and a few samples, write transcripts and eval JSON."""
    if not utterances:
        raise ValueError("the test split is empty: nothing to evaluate")
    references = [normalize_transcript(u.transcript) for u in utterances]
    start = time.time()
    hypotheses = model.transcribe([u.path for u in utterances], beam_width=beam_width)
    result = error_rates(hypotheses, references)
    result.update(beam_width=beam_width, utterances=len(utterances), decode_seconds=round(time.time() - start, 1))
    if out_dir is not None:
        write_results(out_dir, "transcripts", hypotheses, result, beam_width)
    decoding = "greedy" if beam_width == 1 else f"beam {beam_width}"
    print(f"held-out WER {result['wer']:.2f}%  CER {result['cer']:.2f}%  ({len(utterances)} utterances, {decoding})")
    for ref, hyp in list(zip(references, hypotheses))[:samples]:
        print(f"  reference:  {ref}\n  model:      {hyp}")
    return result
