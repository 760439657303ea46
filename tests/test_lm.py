"""Word n-gram LMs (Kneser-Ney estimator, ARPA files) and CTC beam search fused with them."""

import gzip
import math
import random

import numpy as np
import pytest

from keras_s2s.decoding.ctc_lm import LMDecoder, WordScorer, check_arpa
from keras_s2s.decoding.ngram_lm import KneserNeyLM
from keras_s2s.text.characters import CharVocabulary

WORDS = "the a cat dog sat ran on mat big red fast".split()


def sentences(count=400, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 8))) for _ in range(count)]


@pytest.mark.parametrize("prune", [(), (1, 2)])
def test_every_context_sums_to_one_pruned_or_not(prune):
    lm = KneserNeyLM.estimate(sentences(), order=3, prune=prune)
    vocabulary = [w for (w,) in lm.probabilities[0] if w != "<s>"]
    assert "<unk>" in vocabulary and "</s>" in vocabulary
    for context in [
        (),
        ("the",),
        ("<s>",),
        ("<s>", "the"),
        ("cat", "sat"),
        ("mat", "mat"),
        ("zzz", "the"),
    ]:
        total = sum(10 ** lm.log10_probability(w, context) for w in vocabulary)
        assert total == pytest.approx(1.0, abs=1e-6), context
    if prune:
        assert len(lm.probabilities[2]) < len(
            KneserNeyLM.estimate(sentences(), order=3).probabilities[2]
        )


def test_the_arpa_file_reads_back_and_kenlm_scores_it_the_same(tmp_path):
    lm = KneserNeyLM.estimate(sentences(), order=3, prune=(1, 2))
    path = lm.write_arpa(tmp_path / "lm.arpa")
    again = KneserNeyLM.read_arpa(path)
    for text in sentences(20, seed=1) + ["the zebra sat on the mat"]:
        context = ("<s>",)
        for word in text.split() + ["</s>"]:
            assert again.log10_probability(word, context) == pytest.approx(
                lm.log10_probability(word, context), abs=1e-5
            )
            context += (word,)
    kenlm = pytest.importorskip("kenlm")
    model = kenlm.Model(str(path))
    ours = WordScorer(path, engine="python")
    for text in sentences(30, seed=2) + ["the zebra sat on the mat"]:
        words, total = text.split(), 0.0
        for i, word in enumerate(words + ["</s>"]):
            total += ours(word, ("<s>", *words[:i]))
        assert total / math.log(10) == pytest.approx(
            model.score(text, bos=True, eos=True), abs=1e-4
        )
    assert WordScorer(path, engine="kenlm")("cat", ("<s>", "the")) == pytest.approx(
        ours("cat", ("<s>", "the")), abs=1e-4
    )
    # gzipped, as a preset ships it: both engines read it and score the same
    zipped = lm.write_arpa(tmp_path / "lm.arpa.gz")
    with gzip.open(zipped, "rt") as text:
        assert text.read() == path.read_text()
    for engine in ("python", "kenlm"):
        assert WordScorer(zipped, engine=engine)("cat", ("<s>", "the")) == pytest.approx(
            ours("cat", ("<s>", "the")), abs=1e-4
        )


def test_broken_inputs_are_named(tmp_path):
    with pytest.raises(ValueError, match="order must be >= 1"):
        KneserNeyLM.estimate(["a b"], order=0)
    with pytest.raises(ValueError, match="no sentences"):
        KneserNeyLM.estimate([], order=2)
    with pytest.raises(FileNotFoundError, match="language model not found"):
        check_arpa(tmp_path / "missing.arpa")
    (tmp_path / "x.arpa").write_text("just some text\n")
    with pytest.raises(ValueError, match="not an ARPA language model"):
        check_arpa(tmp_path / "x.arpa")
    (tmp_path / "cut.arpa.gz").write_bytes(b"\x1f\x8b\x08\x00broken")
    with pytest.raises(ValueError, match="cut.arpa.gz: not a readable language model"):
        check_arpa(tmp_path / "cut.arpa.gz")
    (tmp_path / "bad.arpa").write_text(
        "\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0 a\nbroken\n\\end\\\n"
    )
    with pytest.raises(ValueError, match=r"bad.arpa:6: not an ARPA 1-gram line"):
        KneserNeyLM.read_arpa(tmp_path / "bad.arpa")


def frames_for(text, vocabulary, confusions=(), sharpness=6.0):
    """CTC log-probabilities that spell `text` (a blank after each character); `confusions` maps
    a position in `text` to a character the acoustics prefer there."""
    classes = vocabulary.vocab_size
    rows = []
    for i, char in enumerate(text):
        row = np.full(classes, -sharpness)
        row[vocabulary.characters.index(char) + 1] = -0.1
        if i in dict(confusions):
            row[vocabulary.characters.index(dict(confusions)[i]) + 1] = -0.05  # slightly preferred
        rows.append(row)
        blank = np.full(classes, -sharpness)
        blank[0] = -0.01
        rows.append(blank)
    logits = np.array(rows)
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("engine", ["python", "kenlm"])
def test_the_lm_corrects_what_the_acoustics_confuse(tmp_path, engine):
    if engine == "kenlm":
        pytest.importorskip("kenlm")
    vocabulary = CharVocabulary()
    path = KneserNeyLM.estimate(sentences() + ["the cat sat on the mat"] * 20).write_arpa(
        tmp_path / "lm.arpa"
    )
    decoder = LMDecoder(vocabulary, path, alpha=1.0, beta=0.5, beam_width=16, engine=engine)
    clean = frames_for("the cat sat on the mat", vocabulary)
    assert decoder.decode(clean[None], [len(clean)]) == ["the cat sat on the mat"]
    # the acoustics prefer "kat" and "mot": greedy says so, the LM knows better
    confused = frames_for("the cat sat on the mat", vocabulary, confusions=[(4, "k"), (20, "o")])
    greedy = "".join(vocabulary.characters[c - 1] for c in confused.argmax(1) if c)
    assert greedy == "the kat sat on the mot"
    assert decoder.decode(confused[None], [len(confused)]) == ["the cat sat on the mat"]
    weak = LMDecoder(vocabulary, path, alpha=0.0, beta=0.0, beam_width=16, engine=engine)
    assert weak.decode(confused[None], [len(confused)]) == ["the kat sat on the mot"], (
        "alpha 0: no LM"
    )
    lengths = [len(clean), 10]
    assert decoder.decode(np.stack([clean, clean]), lengths)[1] == "the c", "each row to its length"


def test_a_vocabulary_without_spaces_cannot_use_a_word_lm(tmp_path):
    path = KneserNeyLM.estimate(["a b"]).write_arpa(tmp_path / "lm.arpa")
    with pytest.raises(ValueError, match="no space character"):
        LMDecoder(CharVocabulary("abc"), path)


def test_the_lm_command_reads_manifests_and_text_files(tmp_path, capsys):
    from keras_s2s.cli import main

    (tmp_path / "train.csv").write_text(
        "wav_filename,transcript\na.wav,The Cat SAT\nb.wav,the dog ran\n"
    )
    (tmp_path / "more.txt").write_text("the cat ran\n\nthe dog sat\n")
    out = tmp_path / "lm.arpa"
    argv = [
        "lm",
        "--text",
        str(tmp_path / "train.csv"),
        str(tmp_path / "more.txt"),
        "--out",
        str(out),
    ]
    assert main(argv + ["--order", "2"]) == 0
    assert "4 sentences" in capsys.readouterr().out
    lm = KneserNeyLM.read_arpa(out)
    assert lm.order == 2 and ("cat",) in lm.probabilities[0], "transcripts are lower-cased"
    assert (
        main(["lm", "--text", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "x.arpa")])
        == 2
    )
    assert "text file not found" in capsys.readouterr().err and not (tmp_path / "x.arpa").exists()


def test_a_lexicon_turns_a_word_spelled_as_it_sounds_into_the_dictionary_word(tmp_path):
    from keras_s2s.decoding.ctc_lm import Lexicon

    vocabulary = CharVocabulary()
    path = KneserNeyLM.estimate(sentences()).write_arpa(tmp_path / "lm.arpa")
    # the acoustics spell "bote" ("boat" as it sounds), "boat" a close second
    heard = frames_for("the boat sails", vocabulary, confusions=[(6, "t"), (7, "e")])
    greedy = "".join(vocabulary.characters[c - 1] for c in heard.argmax(1) if c)
    assert greedy == "the bote sails"
    words = Lexicon(["the", "boat", "sails", "bolt"])
    assert words.begins("bo") and not words.begins("bot") and "boat" in words and len(words) == 4
    free = LMDecoder(vocabulary, path, alpha=0.0, beta=0.0, beam_width=16)
    held = LMDecoder(vocabulary, path, alpha=0.0, beta=0.0, beam_width=16, lexicon=words)
    assert free.decode_one(heard) == "the bote sails", "no lexicon: spelled as heard"
    assert held.decode_one(heard) == "the boat sails", "the lexicon's word"

    # a name the lexicon lacks still comes through when the acoustics are sure of it, at a price
    name = frames_for("the zed sails", vocabulary)
    assert held.decode_one(name) == "the zed sails"
    strict = LMDecoder(vocabulary, path, alpha=0.0, beta=0.0, lexicon=words, oov_penalty=-math.inf)
    assert "zed" not in strict.decode_one(name), "-inf: only lexicon words"
    # a word that only begins a lexicon word ("boa" of "boat") pays at its end: -inf forbids it too
    assert "boa" not in strict.decode_one(frames_for("the boa sails", vocabulary)).split()

    # lexicon=True: the LM's own words
    own = LMDecoder(vocabulary, path, alpha=0.0, beta=0.0, lexicon=True)
    assert own.lexicon.words == set(WORDS)
    with pytest.raises(ValueError, match="oov_penalty is a penalty"):
        LMDecoder(vocabulary, path, oov_penalty=1.0)


def test_subword_pieces_decode_into_words_with_the_lm_and_the_lexicon(tmp_path):
    from keras_s2s.text.characters import SubwordVocabulary

    text = sentences(300)
    vocabulary = SubwordVocabulary.train(text, vocab_size=24)
    fragments = vocabulary.fragments()
    assert fragments[0] == "" and any(f.startswith(" ") for f in fragments)
    path = KneserNeyLM.estimate(text).write_arpa(tmp_path / "lm.arpa")
    ids = vocabulary.encode("the big dog ran on the mat")
    rows = []
    for i in ids:  # each piece, then a blank
        for winner in (i, 0):
            row = np.full(vocabulary.vocab_size, -8.0)
            row[winner] = -0.01
            rows.append(row)
    frames = np.array(rows)
    for lexicon in (None, True):
        decoder = LMDecoder(vocabulary, path, alpha=0.5, beta=1.0, beam_width=8, lexicon=lexicon)
        assert decoder.decode_one(frames) == "the big dog ran on the mat"


def test_general_words_join_the_lm_as_unigrams_and_every_context_still_sums_to_one():
    lm = KneserNeyLM.estimate(sentences(), order=3, prune=(1, 2))
    general = lm.with_words({"zebra": 0.001, "giraffe": 0.0005, "the": 0.05})
    vocabulary = [w for (w,) in general.probabilities[0] if w != "<s>"]
    assert {"zebra", "giraffe"} <= set(vocabulary)
    for context in [(), ("the",), ("<s>",), ("<s>", "the"), ("cat", "sat"), ("zebra", "the")]:
        total = sum(10 ** general.log10_probability(w, context) for w in vocabulary)
        assert total == pytest.approx(1.0, abs=1e-6), context
    assert general.log10_probability("zebra") == pytest.approx(math.log10(0.001))
    kept = lm.log10_probability("the", ("cat",)) - general.log10_probability("the", ("cat",))
    assert abs(kept) < 0.01, "what the model knew barely moves"
    assert lm.with_words({"the": 0.5}) is lm
    with pytest.raises(ValueError, match="add up to"):
        lm.with_words({"zebra": 0.7, "okapi": 0.6})


def test_general_words_come_from_wordfreq_or_a_file_and_the_lm_command_adds_them(tmp_path, capsys):
    from keras_s2s.cli import main
    from keras_s2s.text.english import general_word_frequencies

    pytest.importorskip("wordfreq")
    common = general_word_frequencies("wordfreq:2000")
    assert 1500 < len(common) <= 2000 and common["the"] > common["house"] > 0
    assert all(set(w) <= set("'abcdefghijklmnopqrstuvwxyz") for w in common)
    (tmp_path / "words.tsv").write_text("zebra\t0.001\ncafé\t0.001\nokapi\t0.0002\n")
    assert general_word_frequencies(str(tmp_path / "words.tsv")) == {
        "zebra": 0.001,
        "okapi": 0.0002,
    }
    (tmp_path / "bad.tsv").write_text("zebra 0.001\n")
    with pytest.raises(ValueError, match=r"bad.tsv:1: not a 'word<TAB>share' line"):
        general_word_frequencies(str(tmp_path / "bad.tsv"))
    with pytest.raises(ValueError, match="wordfreq:N needs a count"):
        general_word_frequencies("wordfreq:many")
    (tmp_path / "lm.txt").write_text("the cat sat\nthe dog ran\n")
    out = tmp_path / "lm.arpa"
    args = ["lm", "--text", str(tmp_path / "lm.txt"), "--out", str(out), "--order", "2"]
    assert main([*args, "--general-words", str(tmp_path / "words.tsv")]) == 0
    assert ("zebra",) in KneserNeyLM.read_arpa(out).probabilities[0]
    out.unlink()
    assert main([*args, "--general-words", str(tmp_path / "bad.tsv")]) == 2
    assert "bad.tsv:1" in capsys.readouterr().err and not out.exists(), "refused before the work"
