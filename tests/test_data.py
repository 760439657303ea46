import random

import numpy as np
import pytest

from keras_s2s.corpora import DemoCorpus
from keras_s2s.data import make_dataset
from keras_s2s.data.batches import Batching
from keras_s2s.data.parallel import load_parallel_data, read_splits
from keras_s2s.text import CorpusError, SubwordTokenizer, read_parallel
from keras_s2s.token_ids import BOS_ID, EOS_ID


@pytest.fixture(scope="module")
def tokenizer():
    corpus = DemoCorpus(seed=0)
    pairs = corpus.split(800, 0, 0)[0]
    return SubwordTokenizer.train([s for s, _ in pairs] + [t for _, t in pairs], vocab_size=400)


def test_tokenizer_round_trip_and_special_ids(tokenizer):
    text = "the big dog will not see us"
    ids = tokenizer.tokenize([text])[0]
    assert min(ids) > EOS_ID or 1 in ids
    assert tokenizer.detokenize([ids + [EOS_ID, 0, 0]]) == [text]
    assert tokenizer.detokenize([[BOS_ID] + ids + [EOS_ID] + ids]) == [text], "stops at EOS"
    clone = SubwordTokenizer.from_config(tokenizer.get_config())
    assert clone.tokenize([text]) == [ids]
    with pytest.raises(ValueError, match="empty corpus"):
        SubwordTokenizer.train(["", "  "], vocab_size=10)


def test_a_sampled_joint_vocabulary_learns_both_languages():
    """More sentences than the trainer reads: a sample of the whole list, not its head (the sources)."""
    rng = random.Random(1)
    english = ["house", "window", "garden", "printer", "network", "keyboard", "screen", "folder"]
    german = [
        "Haus",
        "Fenster",
        "Garten",
        "Drucker",
        "Netzwerk",
        "Tastatur",
        "Bildschirm",
        "Ordner",
    ]
    sources = [" ".join(rng.choices(english, k=4)) for _ in range(400)]
    targets = [" ".join(rng.choices(german, k=4)) for _ in range(400)]
    tokenizer = SubwordTokenizer.train(sources + targets, vocab_size=80, max_sentences=300)
    pieces = tokenizer.tokenize(german)
    assert sum(len(p) for p in pieces) <= 1.5 * len(german), (
        f"German split into characters: {pieces}"
    )


def test_training_translate_and_export_tokenize_alike(tokenizer):
    """Python SentencePiece (training, translate) and its TensorFlow ops (the SavedModel) on a corpus sample,
    unseen sentences, odd spacing, unknown characters and accents included."""
    import tensorflow as tf

    pairs = DemoCorpus(seed=7).split(300, 0, 0)[0]
    texts = (
        [s for s, _ in pairs] + [t for _, t in pairs] + ["  two  spaces ", "Ünïcödé ✓ 42", "", "x"]
    )
    ids = tokenizer.tokenize(texts)
    graph = tokenizer.in_graph()
    assert graph.tokenize(tf.constant(texts)).to_list() == ids
    detokenized = [
        t.decode() for t in graph.detokenize(tf.ragged.constant(ids, dtype=tf.int32)).numpy()
    ]
    assert detokenized == tokenizer.detokenize(ids)


def test_tokenizer_save_and_load(tokenizer, tmp_path):
    tokenizer.save(tmp_path / "t.model")
    assert SubwordTokenizer.load(tmp_path / "t.model").vocab_size == tokenizer.vocab_size


def test_read_aligned_files_and_tsv(tmp_path):
    (tmp_path / "a.src").write_text("one\ntwo\n\nfour\n")
    (tmp_path / "a.tgt").write_text("eins\nzwei\n  \nvier\n")  # blank on both sides: skipped
    assert read_parallel([tmp_path / "a.src", tmp_path / "a.tgt"]) == (
        ["one", "two", "four"],
        ["eins", "zwei", "vier"],
    )
    (tmp_path / "a.tsv").write_text("one\teins\r\ntwo\tzwei\n")
    assert read_parallel([tmp_path / "a.tsv"]) == (["one", "two"], ["eins", "zwei"])


def test_corpus_errors_name_file_and_line(tmp_path):
    (tmp_path / "a.src").write_text("one\ntwo\nthree\n")
    (tmp_path / "a.tgt").write_text("eins\nzwei\n")
    with pytest.raises(CorpusError, match=r"a.src has 3 lines but .*a.tgt has 2"):
        read_parallel([tmp_path / "a.src", tmp_path / "a.tgt"])
    (tmp_path / "bad.tgt").write_bytes(b"eins\nzw\xffei\ndrei\n")
    with pytest.raises(CorpusError, match=r"bad.tgt, line 2: bytes that are not UTF-8"):
        read_parallel([tmp_path / "a.src", tmp_path / "bad.tgt"])
    (tmp_path / "empty.src").write_text("")
    (tmp_path / "empty.tgt").write_text("")
    with pytest.raises(CorpusError, match="corpus is empty"):
        read_parallel([tmp_path / "empty.src", tmp_path / "empty.tgt"])
    (tmp_path / "bad.tsv").write_text("a\tb\nonly one field\n")
    with pytest.raises(CorpusError, match=r"bad.tsv, line 2: expected 2 tab-separated fields"):
        read_parallel([tmp_path / "bad.tsv"])
    with pytest.raises(CorpusError, match="missing.src: file not found"):
        read_parallel([tmp_path / "missing.src", tmp_path / "a.tgt"])
    with pytest.raises(CorpusError, match="one TSV or two aligned files"):
        read_parallel([tmp_path / "a.src"] * 3)


def test_pipeline_pads_buckets_and_shifts(tokenizer):
    corpus = DemoCorpus(seed=0)
    pairs = corpus.split(300, 0, 0, seed=5)[0]
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    ds = make_dataset(
        sources,
        targets,
        tokenizer,
        max_length=24,
        bucket_width=8,
        batching=Batching(batch_size=16, pad_to_multiple=8, shuffle=True),
    )
    seen = 0
    for inputs, labels in ds:
        src, tin, tout = inputs["source"].numpy(), inputs["target_in"].numpy(), labels.numpy()
        assert src.shape[1] % 8 == 0 and tin.shape[1] % 8 == 0 and tin.shape == tout.shape
        assert (tin[:, 0] == BOS_ID).all()
        shifted = tin[:, 1:] != 0
        np.testing.assert_array_equal(tin[:, 1:][shifted], tout[:, :-1][shifted])
        lengths = (tout != 0).sum(1)
        assert (tout[np.arange(len(tout)), lengths - 1] == EOS_ID).all()
        src_lengths = (src != 0).sum(1)
        assert (src[np.arange(len(src)), src_lengths - 1] == EOS_ID).all()
        assert max(src_lengths.max(), lengths.max()) <= 24
        # bucketing: lengths inside a batch fall in one bucket of width 8
        longest = np.maximum(src_lengths, lengths)
        assert len(set(np.searchsorted([8, 16, 24], longest, side="right"))) == 1
        seen += len(src)
    kept = sum(
        1
        for s, t in zip(tokenizer.tokenize(sources), tokenizer.tokenize(targets))
        if len(s) < 24 and len(t) < 24
    )
    assert seen == kept < len(sources), "long pairs are filtered, all others kept"


def test_demo_task_is_deterministic_and_rich():
    a, b = DemoCorpus(seed=3), DemoCorpus(seed=3)
    assert a.split(50, 5, 5) == b.split(50, 5, 5)
    assert DemoCorpus(seed=4).split(5, 0, 0) != a.split(5, 0, 0)
    assert len(a.source_vocabulary) >= 1000, "at least 1,000 distinct source words"
    assert len(a.nouns) + len(a.verbs) + len(a.adjectives) + len(a.adverbs) >= 500
    train, valid, test = a.split(2000, 100, 100)
    lengths = [len(s.split()) for s, _ in train]
    assert min(lengths) >= 3 and max(lengths) <= 30
    assert not {s for s, _ in test} & {s for s, _ in train}, (
        "held-out sentences never occur in training"
    )


def test_demo_language_rules():
    corpus = DemoCorpus(seed=0)
    noun = corpus.nouns[0]
    verb = next(v for v in corpus.verbs if not v.light)
    rng = random.Random(0)
    # reordering (verb last), agreement (3sg, future), many-to-one ("the X" -> one word)
    corpus.nouns, corpus.verbs, corpus.adjectives, corpus.adverbs = (
        [noun],
        [verb],
        corpus.adjectives[:1],
        corpus.adverbs[:1],
    )
    found = set()
    for _ in range(3000):
        src, tgt = corpus.sample_pair(rng)
        words = src.split()
        if {"and", "but"} & set(words):
            continue
        if words[:3] == ["he", "will", verb.source]:
            # pronoun dropped, one verb word
            assert tgt.split()[-1] == verb.target + "mo", (
                src,
                tgt,
            )
            found.add("future")
        if words[:3] == ["the", noun.source, verb.source + "ed"]:
            definite = noun.target + ("ul", "ika")[noun.gender]
            assert tgt.split()[0] == definite and tgt.split()[-1] == verb.target + "ta", (src, tgt)
            found.add("past")
    assert found == {"future", "past"}


def test_dictionary_baseline_is_far_below_a_perfect_translation():
    import sacrebleu

    corpus = DemoCorpus(seed=0)
    test = corpus.split(0, 0, 300)[2]
    hypotheses = corpus.dictionary_baseline([s for s, _ in test])
    bleu = sacrebleu.corpus_bleu(hypotheses, [[t for _, t in test]]).score
    assert 0 < bleu < 10


def test_splits_of_user_files_are_reproducible(tmp_path):
    lines = [f"sentence {i}\tsatz {i}" for i in range(100)]
    (tmp_path / "c.tsv").write_text("\n".join(lines))
    first = read_splits(str(tmp_path / "c.tsv"), 0, 10, 10, seed=1)
    second = read_splits(str(tmp_path / "c.tsv"), 0, 10, 10, seed=1)
    assert first[:3] == second[:3]
    assert [len(x) for x in first[:3]] == [80, 10, 10]
    data = load_parallel_data(
        str(tmp_path / "c.tsv"),
        vocab_size=60,
        num_valid=10,
        num_test=10,
        batching=Batching(batch_size=8),
    )
    assert len(data.test_pairs) == 10 and data.demo is None


def test_a_vocabulary_learns_from_texts_over_sentencepieces_default_length():
    """SentencePiece skips texts over 4,192 bytes; all of them skipped was a RuntimeError."""
    rng = random.Random(0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    texts = [" ".join(rng.choice(words) for _ in range(800)) for _ in range(20)]
    assert min(len(text.encode()) for text in texts) > 4192
    tokenizer = SubwordTokenizer.train(texts, vocab_size=40)
    assert tokenizer.detokenize([tokenizer.tokenize(["beta gamma"])[0]]) == ["beta gamma"]
    with pytest.raises(
        ValueError, match="every text is over 65,536 bytes .* one sentence per line"
    ):
        SubwordTokenizer.train(["x " * 40000], vocab_size=40)
