"""How a recognizer does on voices it never heard: held-out sentences spoken by other synthesizers.

    apt-get install flite festival festvox-kdlpc16k festvox-us-slt-hts   # the unseen voices
    apt-get install libttspico-utils                                     # (Debian non-free)
    pip install pocketsphinx                                             # the peer, with its own model
    python examples/unseen_voice_check.py --model english/run --lm english/lm/english-3gram.arpa \\
        --corpus english/corpus --count 100 --out english/unseen

The sentences are the first COUNT of the corpus's test split (never trained
on, never in the LM), or with --sentences FILE, COUNT speakable sentences of
another text (drawn with a fixed seed; any also in the training transcripts
are skipped): text from outside the corpus's sources, which neither the model
nor the LM saw, e.g. The Devil's Dictionary (apt-get install dict-devil;
zcat /usr/share/dictd/devil.dict.dz > devil.txt). Its reference row is then
spoken by eSpeak NG's plain `en-us` and `en` voices in turn, at 170 wpm.

Each sentence is spoken by four flite voices (kal16: diphones; awb, rms,
slt: clustergen), two Festival voices (ked: diphones; slt: HTS),
and SVOX Pico's two English voices (en-US, en-GB); the corpus's own eSpeak NG
audio of the same sentences is the reference row. A flite voice that speaks
part of the corpus's training sentences (its corpus.json `flite_voices`) is
marked "(trained voice)": the model heard that voice, not these sentences.
Every clip is transcribed greedily, by CTC beam search, by beam search fused
with the word LM, by that search held to a lexicon (the LM's words; a word
outside it costs --oov-penalty), and by pocketsphinx (its bundled US English
acoustic model, LM and dictionary) on the same audio. WER and CER per voice go to
OUT/results.json, a Markdown table to OUT/results.md and a bar chart of the
WERs to OUT/results.png. Synthesized audio is kept in OUT/audio and
pocketsphinx's transcripts in OUT/pocketsphinx (neither depends on the
model): both are reused (OUT/sentences.json records which sentences they
speak; an OUT that holds other sentences is refused).
"""

import argparse
import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import keras_s2s
from keras_s2s.audio import read_audio, read_manifest, resample, write_wav
from keras_s2s.corpora import synthesize
from keras_s2s.decoding import LMDecoder
from keras_s2s.metrics import error_rates
from keras_s2s.plots import plot_grouped_bars
from keras_s2s.text import speakable_sentences

FLITE = {"flite kal16": "kal16", "flite awb": "awb", "flite rms": "rms", "flite slt": "slt"}
FESTIVAL = {"festival ked": "ked_diphone", "festival slt hts": "cmu_us_slt_arctic_hts"}
PICO = {"pico en-US": "en-US", "pico en-GB": "en-GB"}
DECODERS = ("greedy", "beam 8", "beam 32 + LM", "beam 32 + LM + lexicon", "pocketsphinx")


def speak(voice: str, text: str, path: Path) -> None:
    """`text` spoken by a flite or Pico voice into `path` (16 kHz WAV)."""
    with tempfile.TemporaryDirectory() as tmp:
        raw, words = Path(tmp) / "raw.wav", Path(tmp) / "text.txt"
        words.write_text(text + "\n")
        if voice in FLITE:
            command = ["flite", "-voice", FLITE[voice], "-f", str(words), "-o", str(raw)]
        else:
            command = ["pico2wave", "-l", PICO[voice], "-w", str(raw), text]
        subprocess.run(command, check=True, capture_output=True)
        write_wav(path, read_audio(raw, 16000), 16000)


def speak_with_festival(voice: str, texts: list[str], paths: list[Path]) -> None:
    """Each text spoken by a Festival voice, all in one Festival process (loading a voice takes
    seconds), then resampled to 16 kHz."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = [f"(voice_{FESTIVAL[voice]})"]
        raws = [Path(tmp) / f"{i}.wav" for i in range(len(texts))]
        for text, raw in zip(texts, raws, strict=True):
            quoted = text.replace("\\", " ").replace('"', " ")
            lines.append(f'(utt.save.wave (SynthText "{quoted}") "{raw}" \'riff)')
        script = Path(tmp) / "speak.scm"
        script.write_text("\n".join(lines) + "\n")
        subprocess.run(["festival", "-b", str(script)], check=True, capture_output=True)
        for raw, path in zip(raws, paths, strict=True):
            write_wav(path, read_audio(raw, 16000), 16000)


def sentences_of_text(path: str, count: int, corpus: Path) -> list[str]:
    """`count` transcripts of the speakable sentences in `path`, shuffled with a fixed seed, none
    of them a training transcript of `corpus`."""
    trained = {u.transcript for u in read_manifest(corpus / "train.csv", check_files=False)}
    try:
        transcripts = [t for _, t in speakable_sentences([path]) if t not in trained]
    except (ValueError, FileNotFoundError) as error:  # a missing file, a reserved source
        raise SystemExit(str(error)) from None
    random.Random(0).shuffle(transcripts)
    if len(transcripts) < count:
        raise SystemExit(f"{path}: {len(transcripts)} new speakable sentences, fewer than {count}")
    return transcripts[:count]


def check_cached_sentences(record: Path, references: list[str]) -> None:
    """Record the sentences whose audio OUT keeps (clip i speaks sentence i); refuse an OUT whose
    clips speak other sentences (a longer or shorter --count of the same ones is fine)."""
    saved = json.loads(record.read_text()) if record.is_file() else []
    shared = min(len(saved), len(references))
    if saved[:shared] != references[:shared]:
        raise SystemExit(
            f"{record.parent} holds audio of other sentences (another --sentences or corpus): "
            "choose another --out"
        )
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(max(saved, references, key=len), indent=1))


def espeak_clips(texts: list[str], folder: Path) -> list[Path]:
    """Each text spoken by eSpeak NG's plain `en-us` and `en` voices in turn (16 kHz WAV)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{i:04d}.wav" for i in range(len(texts))]
    for i, (text, path) in enumerate(zip(texts, paths, strict=True)):
        if not path.is_file():
            samples, rate = synthesize(text, ("en-us", "en")[i % 2], words_per_minute=170)
            write_wav(path, resample(samples, rate, 16000), 16000)
    return paths


def pocketsphinx_transcripts(paths: list[Path]) -> list[str]:
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=16000, loglevel="FATAL")
    texts = []
    for path in paths:
        samples = (np.clip(read_audio(path, 16000), -1, 1) * 32767).astype(np.int16)
        decoder.start_utt()
        decoder.process_raw(samples.tobytes(), full_utt=True)
        decoder.end_utt()
        hypothesis = decoder.hyp()
        texts.append(hypothesis.hypstr.lower() if hypothesis else "")
    return texts


def peer_transcripts(paths: list[Path], cache: Path) -> list[str]:
    """pocketsphinx's transcripts of `paths`, kept in `cache` (JSON) and reused while the clips
    are the same ones."""
    names = [str(path) for path in paths]
    if cache.is_file():
        saved = json.loads(cache.read_text())
        if saved["paths"] == names:
            return saved["texts"]
    texts = pocketsphinx_transcripts(paths)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"paths": names, "texts": texts}, indent=1))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True,
                        help="a run directory of a speech recognizer, or a zoo preset as CARD:WEIGHTS "
                        "(jasper:english, jasper_demo:demo)")  # fmt: skip
    parser.add_argument("--lm", required=True, help="the ARPA word LM")
    parser.add_argument(
        "--alpha", type=float, help="LM weight (default: the run's tuned.json's, else 0.5)"
    )
    parser.add_argument("--beta", type=float, help="word bonus (default: as --alpha)")
    parser.add_argument("--oov-penalty", type=float, default=-5.0,
                        help="ln cost of a word outside the lexicon (default: %(default)s)")  # fmt: skip
    parser.add_argument("--corpus", required=True, help="the speech corpus folder (its test.csv)")
    parser.add_argument("--count", type=int, default=100, help="held-out sentences")
    parser.add_argument("--sentences",
                        help="a text file whose speakable sentences replace the test split's")  # fmt: skip
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    missing = [tool for tool in ("flite", "text2wave", "pico2wave") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            f"{', '.join(missing)} not found: apt-get install flite festival libttspico-utils ..."
        )
    tuned_path = Path(args.model) / "tuned.json"  # train_english_recognizer.py's tuning of a run
    tuned = json.loads(tuned_path.read_text())["best"] if tuned_path.is_file() else {}
    alpha = args.alpha if args.alpha is not None else tuned.get("alpha", 0.5)
    beta = args.beta if args.beta is not None else tuned.get("beta", 1.0)

    out = Path(args.out)
    if args.sentences:
        references = sentences_of_text(args.sentences, args.count, Path(args.corpus))
    else:
        held_out = read_manifest(Path(args.corpus) / "test.csv")[: args.count]
        references = [u.transcript for u in held_out]
    check_cached_sentences(out / "sentences.json", references)
    if args.sentences:
        espeak = espeak_clips(references, out / "audio" / "espeak_ng")
    else:
        espeak = [u.path for u in held_out]
    clips = {"espeak ng (seen synthesizer)": espeak}
    settings = json.loads((Path(args.corpus) / "corpus.json").read_text())
    trained = {f"flite {name}" for name in settings.get("flite_voices", [])}
    for voice in (*FLITE, *FESTIVAL, *PICO):
        folder = out / "audio" / voice.replace(" ", "_")
        folder.mkdir(parents=True, exist_ok=True)
        clips[voice] = [folder / f"{i:04d}.wav" for i in range(len(references))]
        todo = [(t, p) for t, p in zip(references, clips[voice], strict=True) if not p.is_file()]
        if todo and voice in FESTIVAL:
            speak_with_festival(voice, *map(list, zip(*todo, strict=True)))
        for text, path in todo if voice not in FESTIVAL else []:
            speak(voice, text, path)

    if Path(args.model, "model.keras").is_file():
        model = keras_s2s.load_model(args.model)
    else:
        card, _, weights = args.model.partition(":")
        model = keras_s2s.zoo.load(card, weights=weights)
    lm = LMDecoder(model.vocabulary, args.lm, alpha=alpha, beta=beta, beam_width=32)
    lexicon = LMDecoder(model.vocabulary, args.lm, alpha=alpha, beta=beta, beam_width=32,
                        lexicon=True, oov_penalty=args.oov_penalty)  # fmt: skip
    results = {"sentences": len(references), "alpha": alpha, "beta": beta, "voices": {},
               "lm": args.lm, "oov_penalty": args.oov_penalty}  # fmt: skip
    for voice, paths in clips.items():
        frames = model.log_probabilities(paths)  # once for both LM searches
        hypotheses = {
            "greedy": model.transcribe(paths, beam_width=1),
            "beam 8": model.transcribe(paths, beam_width=8),
            "beam 32 + LM": [lm.decode_one(f) for f in frames],
            "beam 32 + LM + lexicon": [lexicon.decode_one(f) for f in frames],
            "pocketsphinx": peer_transcripts(
                paths, out / "pocketsphinx" / f"{voice.replace(' ', '_')}.json"
            ),
        }
        label = f"{voice} (trained voice)" if voice in trained else voice
        results["voices"][label] = {
            name: error_rates(texts, references) for name, texts in hypotheses.items()
        }
        row = results["voices"][label]
        print(label, "  ".join(f"{n}: WER {row[n]['wer']:.1f}%" for n in DECODERS), flush=True)
        (out / "transcripts").mkdir(exist_ok=True)
        (out / "transcripts" / f"{voice.replace(' ', '_')}.json").write_text(
            json.dumps({"references": references, **hypotheses}, indent=1)
        )
    (out / "results.json").write_text(json.dumps(results, indent=1))
    lines = [
        "| voice | " + " | ".join(f"{name} WER / CER" for name in DECODERS) + " |",
        "| --- |" + " --- |" * len(DECODERS),
    ]
    for voice, row in results["voices"].items():
        cells = " | ".join(f"{row[n]['wer']:.1f}% / {row[n]['cer']:.1f}%" for n in DECODERS)
        lines.append(f"| {voice} | {cells} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    wers = {voice: {n: row[n]["wer"] for n in DECODERS} for voice, row in results["voices"].items()}
    plot_grouped_bars(
        wers, out / "results.png", "WER %", f"{args.model} on {len(references)} sentences"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
