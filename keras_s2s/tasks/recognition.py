"""Speech recognition: `SpeechToText` models (DeepSpeech2, Wave2Letter+, Jasper), CTC, WER/CER.

Example:
    >>> result = evaluate_speech(model, data.test_utterances, Path("runs/jasper_demo"), beam_width=8)
    >>> result["wer"]
"""

from __future__ import annotations

import time
from pathlib import Path

from keras_s2s.audio.features import FeatureExtractor
from keras_s2s.config import CardError
from keras_s2s.data.speech import load_speech_data
from keras_s2s.files import write_results
from keras_s2s.metrics import error_rates
from keras_s2s.models import SpeechToText
from keras_s2s.schema import COUNT, Choice
from keras_s2s.tasks.base import (
    AUDIO_SCHEMA,
    PreparedTask,
    Task,
    audio_model_arguments,
    prepare_audio,
    speech_test_split,
)
from keras_s2s.text.characters import CharVocabulary, normalize_transcript


def evaluate_speech(
    model, utterances: list, out_dir: Path | None = None, beam_width: int = 1, samples: int = 3,
    lm=None,
) -> dict:  # fmt: skip
    """Transcribe `utterances`, print WER/CER and a few samples, write transcripts and eval JSON;
    `lm` (an `LMDecoder`): beam search fused with its word LM."""
    if not utterances:
        raise ValueError("the test split is empty: nothing to evaluate")
    references = [normalize_transcript(u.transcript) for u in utterances]
    start = time.time()
    hypotheses = model.transcribe([u.path for u in utterances], beam_width=beam_width, lm=lm)
    result = error_rates(hypotheses, references)
    if lm is not None:
        beam_width = lm.beam_width
        result.update(lm=str(lm.scorer.path), alpha=lm.alpha, beta=lm.beta)
    result.update(
        beam_width=beam_width,
        utterances=len(utterances),
        decode_seconds=round(time.time() - start, 1),
    )
    if out_dir is not None:
        write_results(out_dir, "transcripts", hypotheses, result, beam_width)
    decoding = "greedy" if beam_width == 1 else f"beam {beam_width}" + (" + LM" if lm else "")
    print(
        f"held-out WER {result['wer']:.2f}%  CER {result['cer']:.2f}%  ({len(utterances)} utterances, {decoding})"
    )
    for ref, hyp in list(zip(references, hypotheses))[:samples]:
        print(f"  reference:  {ref}\n  model:      {hyp}")
    return result


class Recognition(Task):
    """Audio to text: features and a character (or subword) vocabulary, CTC loss inside the model, WER."""

    name = "recognition"
    data_schema = {
        **AUDIO_SCHEMA,  # load_speech_data's arguments
        "vocabulary": Choice("characters", "subword"),
        "vocab_size": COUNT,  # of a subword vocabulary
        "augment": dict,  # see keras_s2s/audio/augment.py
    }
    decoding_options = {"beam_width": 1, "lm": None, "alpha": 0.5, "beta": 1.0, "lexicon": False,
                        "oov_penalty": -5.0}  # fmt: skip
    validation_metric = "wer"  # greedy, of up to training.validation.sentences utterances
    validation_metrics = ("wer", "loss")
    model_class = SpeechToText
    command = "transcribe"
    noun = "a speech recognizer"

    def assets(self, card):
        """The feature extractor and character vocabulary the card's `data` part describes."""
        characters = card.data.get("characters")
        extractor = FeatureExtractor(**card.data.get("features", {}))
        return extractor, CharVocabulary(characters) if characters else CharVocabulary()

    def model_arguments(self, card, vocabulary=None, extractor=None, **_) -> dict:
        if vocabulary is None and card.data.get("vocabulary") == "subword":
            raise CardError(
                f"{card.path}: a subword vocabulary is learned from the training transcripts; pass "
                "vocabulary= (e.g. load_speech_data(...).vocabulary)"
            )
        if extractor is None or vocabulary is None:  # the card's, for what was not given
            default_extractor, default_vocabulary = self.assets(card)
            extractor, vocabulary = extractor or default_extractor, vocabulary or default_vocabulary
        return audio_model_arguments(extractor, vocabulary, "num_features")

    def prepare(self, card, out: Path, runtime, tokenizer=None) -> PreparedTask:
        return prepare_audio(
            card,
            out,
            runtime,
            load_speech_data,
            evaluate_speech,
            scored_valid=True,
        )

    def validation_scores(self, model, pairs: list) -> dict:
        """Greedy WER and CER of the dev utterances (audio path, transcript)."""
        paths, references = zip(*pairs)
        rates = error_rates(
            model.transcribe(list(paths), beam_width=1),
            [normalize_transcript(r) for r in references],
        )
        return {"wer": rates["wer"], "cer": rates["cer"]}

    def evaluate_run(self, model, card, run_dir: Path, data: str | None = None, *,
                     beam_width: int, lm: str | None, alpha: float, beta: float,
                     lexicon: bool, oov_penalty: float) -> dict:  # fmt: skip
        from keras_s2s.decoding.ctc_lm import lm_decoder

        decoder = lm_decoder(model.vocabulary, lm, alpha, beta, beam_width, lexicon, oov_penalty)
        test = speech_test_split(card, data)
        return evaluate_speech(model, test, run_dir, beam_width=beam_width, lm=decoder)

    def serving_module(self, model, beam_width: int = 4):
        from keras_s2s.tasks.serving.recognition import SpeechServer

        server = SpeechServer(model, beam_width)
        return server, server.transcribe
