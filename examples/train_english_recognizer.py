"""Train the open-vocabulary English recognizer (`jasper_english`, `quartznet_english`) from synthetic
speech, end to end.

    python examples/train_english_recognizer.py --work english          # every stage; again to resume
    python examples/train_english_recognizer.py --work english --until corpus
    python examples/train_english_recognizer.py --work english --card quartznet_english --time-limit 1h

Each stage is skipped when its output is there, so the same command continues
after a stop (a killed training resumes from its last epoch's backup; its
time budget, the card's `training.time_limit`, counts over restarts):

1. text     speakable sentences of Debian bookworm's package descriptions and of
            the World English Bible (public domain), both from Debian packages:
              apt-get -o Acquire::Languages=en update
              apt-get install sword-text-web diatheke lz4
            and, for training only, of the Jargon File, FOLDOC and the King James Bible:
              apt-get install dict-jargon dict-foldoc sword-text-kjv
            (examples/english_recognizer_setup.sh installs these, the MBROLA voices and the
            unseen-voice synthesizers)
2. corpus   every sentence spoken once (`keras-s2s speech-corpus`): by eSpeak NG (every
            English voice x variant and the MBROLA voices, 120-220 wpm, pitch and pitch
            range), a quarter of the training sentences by flite's kal, kal16, awb and rms,
            15% by Festival's diphone voices kal and rab -> WORK/corpus; the training-only
            sentences (those not in WORK/corpus) 45% by flite, 30% by Festival, the rest by
            eSpeak NG -> WORK/corpus-more; 10,000 of WORK/corpus's training sentences again,
            by RHVoice's voices alan, bdl, clb, evgeniy-eng and lyubov -> WORK/corpus-rhvoice;
            WORK/training trains on all three and holds out WORK/corpus's valid and test splits
3. lm       a 3-gram Kneser-Ney word LM of WORK/corpus's training transcripts (trigrams seen twice),
            and the same knowing the 100,000 most frequent English words (wordfreq) as unigrams
4. train    `keras_s2s.train(CARD, data="WORK/training", ...)` in WORK/run-CARD (the card's
            time budget, over restarts; validated by greedy WER, the best epoch kept)
5. tune     the LM weight and word bonus, then which LM and lexicon penalty, on the validation split
6. evaluate greedy, beam and beam + LM on the held-out eSpeak test split -> WORK/run-CARD/results.json
7. preset   WORK/CARD.tar.gz: float16 weights and the LM (lm.arpa.gz), with its sha256

WordNet, fortune and GCIDE (which carries WordNet's glosses) are never read: they are kept for
independent evaluation.
"""

import argparse
import gzip
import json
import random
import shutil
import subprocess
from pathlib import Path

import keras_s2s
from keras_s2s.audio import combine_corpora, read_manifest
from keras_s2s.corpora import EnglishSpeech
from keras_s2s.decoding import KneserNeyLM, LMDecoder
from keras_s2s.files import atomic_write
from keras_s2s.metrics import error_rates
from keras_s2s.presets import (
    load_preset,
    load_preset_directory,
    pack_preset,
    read_metadata,
    save_to_preset,
    sha256_of,
)
from keras_s2s.text import general_word_frequencies, speakable_sentences

STAGES = ("text", "corpus", "lm", "train", "tune", "evaluate", "preset")
DEBIAN_DESCRIPTIONS = (
    "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en.lz4"
)
BIBLE_MODULE = "engWEB2015eb"  # the World English Bible, Debian package sword-text-web
KJV_MODULE = "engKJV2006eb"  # the King James Version, Debian package sword-text-kjv
ALPHAS, BETAS = (0.1, 0.2, 0.4, 0.7), (0.5, 1.5, 3.0)
OOV_PENALTIES = (-2.5, -5.0, -10.0)  # ln cost of a word outside the lexicon, tried on validation
GENERAL_WORDS = "wordfreq:100000"  # general English words the LM knows as unigrams
# flite and Festival voices that speak 25% and 15% of the training sentences; flite's slt,
# Festival's ked and slt and the Pico voices are kept for examples/unseen_voice_check.py
FLITE_VOICES, FLITE_SHARE = ["kal", "kal16", "awb", "rms"], 0.25
FESTIVAL_VOICES, FESTIVAL_SHARE = ["kal_diphone", "rab_diphone"], 0.15
# the training-only sentences are spoken mostly by the other synthesizers: more of their words
MORE_FLITE_SHARE, MORE_FESTIVAL_SHARE = 0.45, 0.30
# RHVoice's statistical voices (two of them women: the corpus's other synthesizers have almost
# none) say this many of the corpus's training sentences a second time; its slt is the speaker of
# the unseen flite and Festival slt voices and stays out
RHVOICE_VOICES, RHVOICE_SENTENCES = ["alan", "bdl", "clb", "evgeniy-eng", "lyubov"], 10_000


def text_stage(work: Path) -> tuple[list[Path], list[Path]]:
    """The source texts as files under WORK/text (extracted once): the corpus's (Debian's package
    descriptions, the World English Bible) and the training-only ones (Jargon File, FOLDOC, KJV)."""
    folder = work / "text"
    folder.mkdir(parents=True, exist_ok=True)
    corpus_texts = [
        _extracted(folder / "bookworm_Translation-en", _debian_descriptions),
        _extracted(folder / "world_english_bible.txt", lambda: _bible(BIBLE_MODULE)),
    ]
    training_texts = [
        _extracted(folder / "jargon_file.txt", lambda: _dictionary("jargon")),
        _extracted(folder / "foldoc.txt", lambda: _dictionary("foldoc")),
        _extracted(folder / "king_james_bible.txt", lambda: _bible(KJV_MODULE)),
    ]
    return corpus_texts, training_texts


def _extracted(path: Path, read) -> Path:
    """`path`, written from `read()` (bytes) unless it is there; never half-written."""
    if not path.is_file():
        data = read()
        atomic_write(path, lambda tmp: tmp.write_bytes(data))
    return path


def _debian_descriptions() -> bytes:
    if not Path(DEBIAN_DESCRIPTIONS).is_file():
        raise SystemExit(
            f"{DEBIAN_DESCRIPTIONS} not found: run apt-get -o Acquire::Languages=en update"
        )
    return subprocess.run(["lz4cat", DEBIAN_DESCRIPTIONS], capture_output=True, check=True).stdout


def _bible(module: str) -> bytes:
    package = {BIBLE_MODULE: "sword-text-web", KJV_MODULE: "sword-text-kjv"}[module]
    if shutil.which("diatheke") is None:
        raise SystemExit(f"diatheke not found: run apt-get install {package} diatheke")
    verses = subprocess.run(
        ["diatheke", "-b", module, "-k", "Gen 1:1-Rev 22:21"], capture_output=True, check=True
    ).stdout
    if not verses.strip():
        raise SystemExit(f"diatheke printed no verses of {module}: run apt-get install {package}")
    return verses


def _dictionary(name: str) -> bytes:
    """The text of a dictd dictionary (Debian's dict-NAME), its headwords and entries as written."""
    path = Path(f"/usr/share/dictd/{name}.dict.dz")
    if not path.is_file():
        raise SystemExit(f"{path} not found: run apt-get install dict-{name}")
    return gzip.decompress(path.read_bytes())  # dictzip is gzip with an index


def lm_stage(corpus: Path, work: Path) -> dict[str, Path]:
    """3-gram LMs of the training transcripts (never the validation or test ones): `corpus`, of
    their words only, and `general`, which also knows GENERAL_WORDS as unigrams."""
    folder = work / "lm"
    arpas = {"corpus": folder / "english-3gram.arpa", "general": folder / "general-3gram.arpa"}
    if not all(path.is_file() for path in arpas.values()):
        folder.mkdir(parents=True, exist_ok=True)
        sentences = [u.transcript for u in read_manifest(corpus / "train.csv", check_files=False)]
        lm = KneserNeyLM.estimate(sentences, order=3, prune=(1, 2))
        lm.write_arpa(arpas["corpus"])
        lm.with_words(general_word_frequencies(GENERAL_WORDS)).write_arpa(arpas["general"])
        print(
            f"wrote {', '.join(map(str, arpas.values()))} from {len(sentences):,} training sentences"
        )
    return arpas


def transcribe_split(model, corpus: Path, split: str, lm=None, beam_width: int = 1, limit=None):
    utterances = read_manifest(corpus / f"{split}.csv")[:limit]
    hypotheses = model.transcribe([u.path for u in utterances], beam_width=beam_width, lm=lm)
    return error_rates(hypotheses, [u.transcript for u in utterances]), hypotheses


def tune_stage(model, corpus: Path, arpas: dict, run: Path, limit: int = 150) -> dict:
    """The LM weight and word bonus with the lowest WER on (part of) the validation split, then which
    LM (`arpas`: name -> ARPA file; the first one is used for the weights) and lexicon penalty
    (none, or the LM's words at each of OOV_PENALTIES) with them."""
    path = run / "tuned.json"
    if path.is_file():
        return json.loads(path.read_text())
    utterances = read_manifest(corpus / "valid.csv")[:limit]
    frames = model.log_probabilities([u.path for u in utterances])  # once for the whole grid
    references = [u.transcript for u in utterances]

    def wer(arpa, **settings) -> float:
        decoder = LMDecoder(model.vocabulary, arpa, beam_width=16, **settings)
        return error_rates([decoder.decode_one(f) for f in frames], references)["wer"]

    first = next(iter(arpas.values()))
    scores = []
    for alpha in ALPHAS:
        for beta in BETAS:
            scores.append({"alpha": alpha, "beta": beta, "wer": wer(first, alpha=alpha, beta=beta)})
            print(f"valid alpha {alpha} beta {beta}: WER {scores[-1]['wer']:.2f}%")
    best = dict(min(scores, key=lambda s: s["wer"]), lm=next(iter(arpas)), lexicon=False)
    weights = {"alpha": best["alpha"], "beta": best["beta"]}
    searches = []
    for name, arpa in arpas.items():
        for penalty in (None, *OOV_PENALTIES):
            lexicon = {} if penalty is None else {"lexicon": True, "oov_penalty": penalty}
            searches.append({"lm": name, **weights, "lexicon": penalty is not None, **lexicon,
                             "wer": wer(arpa, **weights, **lexicon)})  # fmt: skip
            print(f"valid {name} LM, lexicon {penalty}: WER {searches[-1]['wer']:.2f}%")
    best = min(searches, key=lambda s: s["wer"])
    path.write_text(json.dumps({"best": best, "grid": scores, "searches": searches}, indent=1))
    return json.loads(path.read_text())


def tuned_search(model, arpas: dict, tuned: dict, beam_width: int = 32) -> LMDecoder:
    """The LM search `tune_stage` chose."""
    best = tuned["best"]
    settings = {k: best[k] for k in ("alpha", "beta", "lexicon", "oov_penalty") if k in best}
    return LMDecoder(model.vocabulary, arpas[best.get("lm", "corpus")], beam_width=beam_width,
                     **settings)  # fmt: skip


def evaluate_stage(model, corpus: Path, arpas: dict, tuned: dict, run: Path) -> dict:
    path = run / "results.json"
    if path.is_file():
        return json.loads(path.read_text())
    results = {}
    for name, kwargs in (
        ("greedy", {}),
        ("beam 8", {"beam_width": 8}),
        ("beam 32 + LM (tuned)", {"lm": tuned_search(model, arpas, tuned)}),
    ):
        rates, _ = transcribe_split(model, corpus, "test", **kwargs)
        results[name] = rates
        print(f"test {name}: WER {rates['wer']:.2f}%  CER {rates['cer']:.2f}%")
    results["lm"] = tuned["best"]
    path.write_text(json.dumps(results, indent=1))
    return results


def preset_stage(run: Path, arpas: dict, corpus: Path, tuned: dict, work: Path, card: str) -> None:
    """The run's preset with float16 weights and the LM (`lm.arpa.gz`) as WORK/CARD.tar.gz;
    prints its sha256 and size for the card, and the WER of the packed weights."""
    archive, folder = work / f"{card}.tar.gz", work / card
    if archive.is_file():
        print(f"{archive}: {archive.stat().st_size:,} bytes, sha256 {sha256_of(archive)}")
        return
    shutil.rmtree(folder, ignore_errors=True)
    metadata = read_metadata(run / "preset")
    metadata.pop("weights_dtype", None)
    metadata.update(
        trained_by="python examples/train_english_recognizer.py",
        lm={
            "file": "lm.arpa.gz",
            "beam_width": 32,
            **{k: v for k, v in tuned["best"].items() if k not in ("lm", "wer")},
        },  # fmt: skip
    )
    save_to_preset(load_preset_directory(run / "preset"), folder, metadata, weights_dtype="float16")
    KneserNeyLM.read_arpa(arpas[tuned["best"].get("lm", "corpus")]).write_arpa(
        folder / "lm.arpa.gz"
    )
    sha256 = pack_preset(folder, archive)
    packed = load_preset(str(archive), sha256)
    rates, _ = transcribe_split(packed, corpus, "test", limit=200)
    print(
        f"{archive}: {archive.stat().st_size:,} bytes, sha256 {sha256}; the packed float16 weights: "
        f"greedy WER {rates['wer']:.2f}% on 200 test utterances"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", default="english", help="folder for every stage's output")
    parser.add_argument("--until", choices=STAGES, default="preset", help="stop after this stage")
    parser.add_argument("--workers", type=int, default=2, help="synthesizing processes")
    parser.add_argument(
        "--card", default="jasper_english", help="the recognizer's card (default: %(default)s)"
    )
    parser.add_argument("--time-limit", help="training budget over restarts (default: the card's)")
    parser.add_argument("--init-from",
                        help="start the run from these weights: a preset (english, a folder, an archive)"
                        " or a .weights.h5 checkpoint")  # fmt: skip
    parser.add_argument("--learning-rate", type=float,
                        help="peak learning rate (default: the card's 0.002; a stage that continues from"
                        " trained weights can start lower, e.g. 0.0005)")  # fmt: skip
    args = parser.parse_args()
    if args.learning_rate is not None and not args.learning_rate > 0:  # before hours of corpus work
        parser.error(f"--learning-rate must be > 0, got {args.learning_rate}")
    work = Path(args.work)
    stop = STAGES.index(args.until)

    corpus_texts, training_texts = text_stage(work)
    if stop < STAGES.index("corpus"):
        return
    sentences = list(speakable_sentences(corpus_texts))
    print(f"{len(sentences):,} speakable sentences")
    speech = EnglishSpeech(
        sentences,
        num_valid=500,
        num_test=500,
        flite_voices=FLITE_VOICES,
        flite_share=FLITE_SHARE,
        festival_voices=FESTIVAL_VOICES,
        festival_share=FESTIVAL_SHARE,
    )
    corpus = speech.build(work / "corpus", workers=args.workers, progress=True)
    known = {transcript for _, transcript in sentences}
    more = [pair for pair in speakable_sentences(training_texts) if pair[1] not in known]
    print(f"{len(more):,} more speakable sentences, for training only")
    more_speech = EnglishSpeech(
        more,
        num_valid=0,
        num_test=0,
        seed=1,
        flite_voices=FLITE_VOICES,
        flite_share=MORE_FLITE_SHARE,
        festival_voices=FESTIVAL_VOICES,
        festival_share=MORE_FESTIVAL_SHARE,
    ).build(work / "corpus-more", workers=args.workers, progress=True)
    trained = [(r.said, r.transcript) for r in speech.plan()["train"]]
    rhvoice_speech = EnglishSpeech(
        random.Random(2).sample(trained, RHVOICE_SENTENCES),
        num_valid=0,
        num_test=0,
        seed=2,
        rhvoice_voices=RHVOICE_VOICES,
        rhvoice_share=1.0,
    ).build(work / "corpus-rhvoice", workers=args.workers, progress=True)
    training = combine_corpora(work / "training", corpus, [more_speech, rhvoice_speech])
    if stop < STAGES.index("lm"):
        return
    arpas = lm_stage(corpus, work)
    if stop < STAGES.index("train"):
        return
    overrides = {"training.time_limit": args.time_limit} if args.time_limit else {}
    if args.init_from:
        overrides["training.init_from"] = args.init_from
    if args.learning_rate is not None:
        overrides["training.learning_rate"] = args.learning_rate
    run = work / f"run-{args.card}"
    if not (run / "preset").is_dir():  # else trained to the end earlier
        keras_s2s.train(args.card, data=str(training), out=run, overrides=overrides)
    if stop < STAGES.index("tune"):
        return
    model = keras_s2s.load_model(run)
    tuned = tune_stage(model, corpus, arpas, run)
    if stop >= STAGES.index("evaluate"):
        evaluate_stage(model, corpus, arpas, tuned, run)
    if stop >= STAGES.index("preset"):
        preset_stage(run, arpas, corpus, tuned, work, args.card)


if __name__ == "__main__":
    main()
