"""Speech synthesis (Tacotron 2): characters to mel frames; objective checks on held-out utterances,
plus plots and audio to look at.

Teacher-forced (the model sees the true previous frames): mel L1 and MSE
after the post-net over real frames. Free-running (as `synthesize` runs):
attention focus, the mean over decoder steps of the largest attention
weight (near 1 when every step attends to one character, as on a sharp
diagonal; near 1/L when attention is smeared), how many utterances stopped
before the step limit, the ratio of generated to true frames, and the mel L1
after aligning generated and true frames by dynamic time warping. The first
`samples` utterances get `samples/N.wav` (Griffin-Lim), `samples/N-alignment.png`
and `samples/N-mel.png` in the run directory.

Example:
    >>> result = evaluate_synthesis(model, data.test_utterances, Path("runs/tacotron2_demo"))
    >>> result["attention_focus"], result["dtw_mel_l1"]
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from keras_s2s.data.batches import Batching
from keras_s2s.data.tts import (
    load_tts_data,
    make_tts_dataset,
    mel_extractor,
    normalized_utterances,
    tts_vocabulary,
)
from keras_s2s.files import atomic_write, write_results
from keras_s2s.models import Tacotron2
from keras_s2s.tasks.base import (
    AUDIO_SCHEMA,
    PreparedTask,
    Task,
    audio_model_arguments,
    prepare_audio,
    speech_test_split,
)


def attention_focus(alignment: np.ndarray) -> float:
    """Mean over decoder steps of the largest attention weight of the step."""
    return float(np.mean(np.max(alignment, axis=-1))) if len(alignment) else 0.0


def dtw_mel_l1(target: np.ndarray, generated: np.ndarray) -> float:
    """Mean absolute log-mel difference over the dynamic-time-warping path between two [T, M] spectrograms."""
    from keras_s2s.audio.io import require_audio_extra

    librosa = require_audio_extra("librosa")
    if not len(generated):
        return float("nan")
    _, path = librosa.sequence.dtw(X=target.T, Y=generated.T, metric="euclidean")
    return float(np.mean(np.abs(target[path[:, 0]] - generated[path[:, 1]])))


def teacher_forced_errors(model, utterances: list, batch_size: int = 16) -> dict:
    """Post-net mel L1 and MSE over the real frames of `utterances`, with the true previous frames fed."""
    dataset = make_tts_dataset(
        [(u, 0.0) for u in utterances],
        model.extractor,
        model.vocabulary,
        model.reduction_factor,
        Batching(batch_size=batch_size, shuffle=False, pad_to_multiple=1),
        cache="",
        tail_steps=model.settings["stop_tail"],
    )
    absolute = squared = count = 0.0
    for inputs, target in dataset:
        predicted = np.asarray(model(inputs, training=False)["mel_postnet"], np.float64)
        target = np.asarray(target)
        real = np.arange(target.shape[1])[None, :] < np.asarray(inputs["mel_lengths"])[:, None]
        difference = (predicted - target)[real]
        absolute += np.abs(difference).sum()
        squared += np.square(difference).sum()
        count += difference.size
    return {
        "teacher_forced_mel_l1": round(absolute / count, 4),
        "teacher_forced_mel_mse": round(squared / count, 4),
    }


def evaluate_synthesis(
    model,
    utterances: list,
    out_dir: Path | None = None,
    samples: int = 3,
    batch_size: int = 16,
    max_decoder_steps: int | None = None,
) -> dict:
    """Score `utterances` (normalized text + audio), print the summary, write eval.json and samples."""
    from keras_s2s.audio.io import read_audio
    from keras_s2s.decoding.vocoder import GriffinLim

    if not utterances:
        raise ValueError("the test split is empty: nothing to evaluate")
    start = time.time()
    result = teacher_forced_errors(model, utterances, batch_size)
    texts = [u.transcript for u in utterances]
    generated = []
    for begin in range(0, len(texts), batch_size):
        generated += model.infer(
            texts[begin : begin + batch_size], max_decoder_steps, normalize=False
        )
    featurize = model.extractor
    targets = [np.asarray(featurize(read_audio(u.path, featurize.sample_rate))) for u in utterances]
    result.update(
        attention_focus=round(
            float(np.mean([attention_focus(g["alignment"]) for g in generated])), 4
        ),
        stopped=round(float(np.mean([g["stopped"] for g in generated])), 4),
        length_ratio=round(
            float(np.mean([len(g["mel"]) / len(t) for g, t in zip(generated, targets)])), 4
        ),
        dtw_mel_l1=round(
            float(np.nanmean([dtw_mel_l1(t, g["mel"]) for g, t in zip(generated, targets)])), 4
        ),
        utterances=len(utterances),
        seconds=round(time.time() - start, 1),
    )
    print(
        f"held-out synthesis ({len(utterances)} utterances): attention focus {result['attention_focus']:.3f}, "
        f"stopped {100 * result['stopped']:.0f}%, length ratio {result['length_ratio']:.2f}, DTW mel L1 "
        f"{result['dtw_mel_l1']:.3f}; teacher-forced mel L1 {result['teacher_forced_mel_l1']:.3f}"
    )
    if out_dir is not None:
        write_results(out_dir, "synthesized", texts, result)
        folder, vocoder = Path(out_dir) / "samples", GriffinLim(model.extractor)
        folder.mkdir(parents=True, exist_ok=True)
        for index, (text, item, target) in enumerate(
            list(zip(texts, generated, targets))[:samples]
        ):
            write_synthesis(folder / f"{index}.wav", text, item, vocoder, recording=target)
    return result


def write_synthesis(
    path: Path, text: str, item: dict, vocoder, recording=None, plots: bool = True
) -> np.ndarray:
    """The WAV file `path` (atomically) from `item` (an `infer` result), and beside it NAME-alignment.png
    and NAME-mel.png (generated above `recording`'s when given); returns the samples."""
    from keras_s2s.audio.io import write_wav
    from keras_s2s.plots import plot_alignment, plot_mels

    path = Path(path)
    stem = path.with_suffix("")
    samples = vocoder(item["mel"])
    atomic_write(path, lambda p: write_wav(p, samples, vocoder.sample_rate))
    if plots:
        plot_alignment(
            item["alignment"],
            stem.with_name(f"{stem.name}-alignment.png"),
            title=f"{text}  (focus {attention_focus(item['alignment']):.2f})",
        )
        mels = (
            {"generated": item["mel"]}
            if recording is None
            else {"generated": item["mel"], "recording": recording}
        )
        plot_mels(mels, stem.with_name(f"{stem.name}-mel.png"), title=text)
    return samples


class Synthesis(Task):
    """Text to speech: normalized characters to mel frames and a stop token, Griffin-Lim to audio; the
    model computes its own loss; evaluation by attention focus and mel distances."""

    name = "synthesis"
    # load_tts_data's arguments; cache: mel targets kept in memory, in files (a prefix) or not ("")
    data_schema = {**AUDIO_SCHEMA, "cache": str}
    model_class = Tacotron2
    command = "synthesize"
    noun = "a speech synthesizer"

    def model_arguments(self, card, vocabulary=None, extractor=None, **_) -> dict:
        extractor = extractor or mel_extractor(**card.data.get("features", {}))
        vocabulary = vocabulary or tts_vocabulary(card.data.get("characters"))
        return audio_model_arguments(extractor, vocabulary, "num_mels")

    def prepare(self, card, out: Path, runtime, tokenizer=None) -> PreparedTask:
        return prepare_audio(
            card,
            out,
            runtime,
            load_tts_data,
            evaluate_synthesis,
            pad=False,  # the frames are a multiple of the reduction factor (8 was never measured)
            reduction_factor=card.model.get("reduction_factor", 1),
            tail_steps=card.model.get("stop_tail", 4),
        )

    def evaluate_run(self, model, card, run_dir: Path, data: str | None = None) -> dict:
        test = [u for u in normalized_utterances(speech_test_split(card, data)) if u.transcript]
        return evaluate_synthesis(model, test, run_dir)
