"""Speech recognition commands: transcribe, build the English speech corpus, estimate a word LM."""

from __future__ import annotations

import os
import sys

from keras_s2s.commands.base import (
    COUNT,
    Command,
    add_lm_flags,
    count,
    finite,
    given_decoding,
    lm_settings,
    load_for,
)
from keras_s2s.files import read_text


def _transcribe_arguments(transcribe) -> None:
    transcribe.add_argument(
        "--model",
        required=True,
        help="run directory of a speech recognizer, or a zoo preset NAME:PRESET (jasper_english:english)",
    )
    transcribe.add_argument(
        "audio", nargs="+", help="audio files (WAV, FLAC, ...), resampled as needed"
    )
    transcribe.add_argument(
        "--beam-width",
        type=COUNT,
        help="hypotheses the search keeps (default: the preset's LM search, 32; 1 = greedy "
        "CTC decoding, the default of a run without --lm)",
    )
    transcribe.add_argument("--no-lm", action="store_true",
                            help="no word LM, not even a preset's own (greedy, or CTC beam search "
                            "with --beam-width)")  # fmt: skip
    transcribe.add_argument("--max-seconds", type=finite, default=20.0,
                            help="longer recordings are cut at pauses into pieces of at most this "
                            "long and decoded in turn (default 20)")  # fmt: skip
    add_lm_flags(transcribe)


def _speech_corpus_arguments(corpus) -> None:
    corpus.add_argument("--text", nargs="+", required=True,
                        help="text files: plain text, Debian Translation-en, diatheke Bible verses")  # fmt: skip
    corpus.add_argument("--out", required=True, help="the corpus folder (run again to resume)")
    corpus.add_argument("--num-valid", type=count(0), default=500)
    corpus.add_argument("--num-test", type=count(0), default=500)
    corpus.add_argument("--max-sentences", type=count(1),
                        help="use only this many sentences (seeded sample)")  # fmt: skip
    corpus.add_argument("--shard-size", type=COUNT, default=1000)
    corpus.add_argument("--workers", type=COUNT, default=1, help="synthesizing processes")
    corpus.add_argument("--seed", type=count(0), default=0)
    corpus.add_argument("--flite-voices", nargs="+", default=[], metavar="VOICE",
                        help="flite voices (kal, kal16, awb, rms, slt) that speak --flite-share "
                             "of the training sentences (Debian's flite)")  # fmt: skip
    corpus.add_argument("--flite-share", type=finite, default=0.0,
                        help="share of training sentences spoken by flite (default 0)")  # fmt: skip
    corpus.add_argument("--festival-voices", nargs="+", default=[], metavar="VOICE",
                        help="Festival voices (kal_diphone, rab_diphone, ...) that speak "
                             "--festival-share of the training sentences (Debian's festival)")  # fmt: skip
    corpus.add_argument("--festival-share", type=finite, default=0.0,
                        help="share of training sentences spoken by Festival (default 0)")  # fmt: skip
    corpus.add_argument("--rhvoice-voices", nargs="+", default=[], metavar="VOICE",
                        help="RHVoice voices (alan, bdl, clb, evgeniy-eng, lyubov, slt) that speak "
                             "--rhvoice-share of the training sentences (Debian's rhvoice-english)")  # fmt: skip
    corpus.add_argument("--rhvoice-share", type=finite, default=0.0,
                        help="share of training sentences spoken by RHVoice (default 0)")  # fmt: skip


def _lm_arguments(lm) -> None:
    lm.add_argument("--text", nargs="+", required=True,
                    help="manifests (.csv/.tsv: their transcripts) or text files, one sentence a line")  # fmt: skip
    lm.add_argument("--out", required=True, help="the ARPA file to write")
    lm.add_argument("--order", type=count(2), default=3,
                    help="n-gram order, 2 or more (KenLM reads bigram models and up); default 3")  # fmt: skip
    lm.add_argument("--prune", type=count(1), nargs="*", default=[],
                    help="from order 2 up: keep n-grams counted at least this often, e.g. 1 2")  # fmt: skip
    lm.add_argument("--general-words",
                    help="also know these words as unigrams with their frequency in general English: "
                    "wordfreq:N (pip install wordfreq) or a word<TAB>share file")  # fmt: skip


def _transcribe(args) -> int:
    """Print each file's transcript; a file that cannot be read is reported and the rest transcribed.
    A preset's own decoding (its LM search, tuned) is the default; flags turn it down."""
    from keras_s2s.audio.io import AudioError
    from keras_s2s.audio.segments import audio_seconds

    if args.no_lm and args.lm:
        raise ValueError("--no-lm and --lm ask for opposite things: give one")
    model = load_for("recognition", args.model)
    readable = []
    for path in args.audio:
        try:
            audio_seconds(path)
            readable.append(path)
        except AudioError as error:
            print(f"keras-s2s: error: {error}", file=sys.stderr)
    failed = len(args.audio) - len(readable)
    beam_width, lm = _speech_search(model, args)
    texts = (
        model.transcribe(readable, beam_width=beam_width, lm=lm, max_seconds=args.max_seconds)
        if readable
        else []
    )
    for path, text in zip(readable, texts):
        print(f"{path}\t{text}" if len(args.audio) > 1 else text)
    if failed:
        print(
            f"keras-s2s: {failed} of {len(args.audio)} file(s) could not be read", file=sys.stderr
        )
    return 1 if failed else 0


def _speech_search(model, args) -> tuple[int | None, object]:
    """(beam width, LM decoder or None) of a transcribe command: --lm's search; without it the
    model's default decoding (a preset's LM search) with --beam-width / --no-lexicon applied;
    --no-lm: greedy or CTC beam search."""
    from keras_s2s import tasks
    from keras_s2s.decoding.ctc_lm import lm_decoder

    if args.no_lm or (not args.lm and model.default_decoding is None):
        return args.beam_width or 1, None
    if args.lm:
        options = tasks.get("recognition").decoding(**given_decoding(args, **lm_settings(args)))
        names = ("lm", "alpha", "beta", "beam_width", "lexicon", "oov_penalty")
        return None, lm_decoder(model.vocabulary, *(options[k] for k in names))
    changes = {"beam_width": args.beam_width, "lexicon": args.lexicon, "alpha": args.alpha,
               "beta": args.beta, "oov_penalty": args.oov_penalty}  # fmt: skip
    return None, model.default_decoder(**{k: v for k, v in changes.items() if v is not None})


def _speech_corpus(args) -> None:
    import random

    from keras_s2s.corpora.english_speech import EnglishSpeech
    from keras_s2s.text.english import speakable_sentences

    sentences = list(speakable_sentences(args.text))
    if args.max_sentences and args.max_sentences < len(sentences):
        sentences = random.Random(args.seed).sample(sentences, args.max_sentences)
    print(f"{len(sentences):,} speakable sentences in {', '.join(args.text)}")
    corpus = EnglishSpeech(
        sentences,
        num_valid=args.num_valid,
        num_test=args.num_test,
        seed=args.seed,
        shard_size=args.shard_size,
        flite_voices=args.flite_voices,
        flite_share=args.flite_share,
        festival_voices=args.festival_voices,
        festival_share=args.festival_share,
        rhvoice_voices=args.rhvoice_voices,
        rhvoice_share=args.rhvoice_share,
    )
    folder = corpus.build(args.out, workers=args.workers, progress=True)
    print(f"wrote {folder}: train.csv, valid.csv, test.csv")


def _estimate_lm(args) -> None:
    from keras_s2s.audio.manifest import read_manifest
    from keras_s2s.decoding.ngram_lm import KneserNeyLM
    from keras_s2s.text.characters import normalize_transcript
    from keras_s2s.text.english import general_word_frequencies

    sentences = []
    for path in args.text:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: text file not found")
        if path.endswith((".csv", ".tsv")):
            sentences += [u.transcript for u in read_manifest(path, check_files=False)]
        else:
            sentences += [line for line in read_text(path).splitlines() if line.strip()]
    sentences = [normalize_transcript(s) for s in sentences]
    general = args.general_words and general_word_frequencies(args.general_words)  # before the work
    lm = KneserNeyLM.estimate(sentences, order=args.order, prune=tuple(args.prune))
    if general:
        lm = lm.with_words(general)
    lm.write_arpa(args.out)
    sizes = ", ".join(f"{len(t):,} {n}-grams" for n, t in enumerate(lm.probabilities, 1))
    print(f"wrote {args.out}: {len(sentences):,} sentences, {sizes}")


COMMANDS = (
    Command("transcribe", "print the text spoken in audio files", _transcribe_arguments,
            _transcribe),
    Command("speech-corpus", "synthesize an open-vocabulary English speech corpus with eSpeak NG "
            "(resumable)", _speech_corpus_arguments, _speech_corpus),
    Command("lm", "estimate a word n-gram LM (ARPA) from transcripts or text", _lm_arguments,
            _estimate_lm),
)  # fmt: skip
