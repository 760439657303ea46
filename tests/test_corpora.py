"""Real corpora: split directories, TFDS sets, pre-tokenized text, token batching, bad input."""

import logging

import numpy as np
import pytest

from keras_s2s.data import load_parallel_data
from keras_s2s.data.batches import Batching
from keras_s2s.data.parallel import read_splits
from keras_s2s.data.translation import bucket_batch_sizes
from keras_s2s.text.corpus import CorpusError, read_parallel
from keras_s2s.text.tokenizer import PretokenizedVocabulary

PAIRS = [(f"the dog {i} sees a cat", f"der hund {i} sieht eine katze") for i in range(200)]


def write_split_dir(root, direction=("en", "de"), sizes=(150, 20, 30)):
    start = 0
    for split, size in zip(("train", "dev", "test"), sizes):
        pairs = PAIRS[start : start + size]
        start += size
        for side, lang in enumerate(direction):
            (root / f"{split}.{lang}").write_text("".join(p[side] + "\n" for p in pairs))
    return root


def test_a_directory_of_splits_keeps_its_test_set(tmp_path):
    write_split_dir(tmp_path)
    train, valid, test, demo = read_splits(str(tmp_path), num_valid=10, direction="en-de")
    assert demo is None and len(train) == 150 and len(valid) == 10 and len(test) == 30
    assert test[0] == PAIRS[170]  # the user's test split, unshuffled
    assert {s for s, _ in train} == {s for s, _ in PAIRS[:150]}
    reversed_train = read_splits(str(tmp_path), direction="de-en")[0]
    assert reversed_train[0][0].startswith("der hund")


def test_a_directory_of_tsv_splits_and_missing_held_out_splits(tmp_path):
    (tmp_path / "train.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS))
    train, valid, test, _ = read_splits(str(tmp_path), num_valid=10, num_test=15)
    assert (len(train), len(valid), len(test)) == (175, 10, 15)  # held-out splits cut from train
    assert not {p for p in test} & {p for p in train}


def test_split_directory_errors(tmp_path):
    write_split_dir(tmp_path)
    with pytest.raises(
        CorpusError, match=r"has files for de, en; say which side is the source with data.direction"
    ):
        read_splits(str(tmp_path))
    with pytest.raises(CorpusError, match=r"lacks .*train.fr"):
        read_splits(str(tmp_path), direction="en-fr")
    with pytest.raises(CorpusError, match="direction must look like 'en-de'"):
        read_splits(str(tmp_path), direction="english")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusError, match="no training split"):
        read_splits(str(empty))


def test_tfds_translation_sets_with_mock_data():
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=40):
        train, valid, test, _ = read_splits(
            "tfds:wmt14_translate/de-en", num_valid=5, direction="en-de"
        )
        assert (len(train), len(valid), len(test)) == (40, 5, 40)
        data = load_parallel_data(
            "tfds:wmt14_translate/de-en",
            direction="de-en",
            vocab_size=60,
            batching=Batching(batch_size=8),
        )
        inputs, labels = next(iter(data.train))
        assert inputs["source"].shape[0] <= 8 and labels.shape == inputs["target_in"].shape
        with pytest.raises(
            CorpusError,
            match="unknown TensorFlow Datasets name 'wmt14_translat'. "
            "Did you mean 'wmt14_translate'",
        ):
            read_splits("tfds:wmt14_translat/de-en")
        with pytest.raises(CorpusError, match="tfds:wmt14_translate/xx-en"):
            read_splits("tfds:wmt14_translate/xx-en")


def test_pretokenized_corpora_keep_their_tokens_and_undo_bpe_marks():
    texts = ["the dog@@ s bark", "a cat@@ s sleep", "the dog sleeps"]
    vocab = PretokenizedVocabulary.train(texts, vocab_size=9)
    assert vocab.vocab_size == 9 and vocab.tokens[:4] == list(PretokenizedVocabulary.SPECIALS)
    ids = vocab.tokenize(["the dog@@ s bark", "zebra"])
    assert ids[1] == [1]  # unknown
    assert vocab.detokenize([ids[0] + [3, 0]]) == ["the dogs bark"]
    clone = PretokenizedVocabulary.from_config(vocab.get_config())
    assert clone.tokenize(texts) == vocab.tokenize(texts)


def test_pretokenized_training_data(tmp_path):
    (tmp_path / "c.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS))
    data = load_parallel_data(
        str(tmp_path / "c.tsv"),
        tokenization="pretokenized",
        vocab_size=500,
        num_valid=10,
        num_test=10,
        batching=Batching(batch_size=16),
    )
    assert isinstance(data.tokenizer, PretokenizedVocabulary)
    inputs, _ = next(iter(data.train))
    assert inputs["source"].shape[1] % 8 == 0
    assert data.tokenizer.detokenize(data.tokenizer.tokenize([PAIRS[3][1]])) == [PAIRS[3][1]]


def test_token_based_batching():
    assert bucket_batch_sizes([8, 16, 24], 64) == [64] * 4
    assert bucket_batch_sizes([8, 16, 24], 64, batch_tokens=400, max_length=30) == [48, 24, 16, 8]
    assert bucket_batch_sizes([8], 64, batch_tokens=20, max_length=40) == [2, 1]
    pairs = [(" ".join(["w"] * n), " ".join(["v"] * n)) for n in range(1, 30) for _ in range(20)]
    sources, targets = zip(*pairs)
    from keras_s2s.data.translation import make_dataset
    from keras_s2s.text.tokenizer import SubwordTokenizer

    tokenizer = SubwordTokenizer.train(list(sources) + list(targets), vocab_size=20)
    ds = make_dataset(
        list(sources),
        list(targets),
        tokenizer,
        batch_tokens=256,
        max_length=40,
        batching=Batching(pad_to_multiple=1),
    )
    for inputs, _labels in ds:
        longest = max(inputs["source"].shape[1], inputs["target_in"].shape[1])
        assert inputs["source"].shape[0] * longest <= 256 + 8 * longest


def test_blank_lines_and_one_sided_pairs(tmp_path, caplog):
    lines = [(s, t) for s, t in PAIRS]
    lines[5] = ("the dog 5 sees a cat", "")
    (tmp_path / "few.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in lines) + "\n\n")
    with caplog.at_level(logging.WARNING, logger="keras_s2s"):
        sources, _ = read_parallel([tmp_path / "few.tsv"])
    assert len(sources) == 199 and "skipped 1 pairs with an empty side (lines 6)" in caplog.text
    (tmp_path / "a.src").write_text("".join(s + "\n" for s, _ in PAIRS))
    (tmp_path / "a.tgt").write_text(
        "".join(("" if i % 10 == 0 else t) + "\n" for i, (_, t) in enumerate(PAIRS))
    )
    with pytest.raises(
        CorpusError, match=r"20 of 200 lines \(10.0%\) have text on one side only \(lines 1, 11"
    ):
        read_parallel([tmp_path / "a.src", tmp_path / "a.tgt"])


def test_over_long_sentences_are_dropped_and_counted(tmp_path, caplog):
    pairs = PAIRS[:50] + [(" ".join(["long"] * 80), "kurz")] * 3
    (tmp_path / "c.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    with caplog.at_level(logging.INFO, logger="keras_s2s"):
        load_parallel_data(
            str(tmp_path / "c.tsv"),
            tokenization="pretokenized",
            max_length=20,
            num_valid=0,
            num_test=0,
        )
    assert (
        "dropped 3 of 53 sentence pairs longer than 20 tokens (5.7%, more than 1%): --set max_length=88 "
        "keeps 99% of them" in caplog.text
    )
    assert any(record.levelname == "WARNING" for record in caplog.records), (
        "more than 1% is said loudly"
    )
    with pytest.raises(ValueError, match="no sentence pair is shorter than max_length=2 tokens"):
        load_parallel_data(
            str(tmp_path / "c.tsv"),
            tokenization="pretokenized",
            max_length=2,
            num_valid=0,
            num_test=0,
        )


def test_a_source_longer_than_the_position_table_is_a_clear_error():
    from keras_s2s.models import ConvS2S

    model = ConvS2S(vocab_size=20, embedding_dim=8, channels=[8], kernel_sizes=[3], max_positions=6)
    too_long = np.full((1, 9), 5, "int32")
    with pytest.raises(ValueError, match="more than 6 tokens"):
        model.generate(too_long)
    assert (
        model.generate(np.array([[5, 6, 3, 0, 0, 0, 0, 0]], "int32"), max_length=40).shape[1] <= 6
    )


def test_separate_source_and_target_vocabularies(tmp_path):
    import keras

    from keras_s2s import zoo
    from keras_s2s.text.tokenizer import TokenizerPair, load_run_tokenizer, save_run_tokenizer

    data = load_parallel_data(
        "demo",
        num_train=800,
        num_valid=16,
        num_test=8,
        vocab_size=260,
        source_vocab_size=200,
        shared_vocabulary=False,
        batching=Batching(batch_size=16),
    )
    tokenizer = data.tokenizer
    assert isinstance(tokenizer, TokenizerPair)
    assert (tokenizer.source_vocab_size, tokenizer.vocab_size) == (200, 260)
    for arch, sizes in (
        ("transformer_demo", {"num_layers": 1, "d_model": 16, "num_heads": 2, "ffn_dim": 32}),
        ("gnmt_demo", {"units": 16}),
        ("convs2s_demo", {"channels": [16], "kernel_sizes": [3], "embedding_dim": 16}),
    ):
        if arch == "convs2s_demo":  # its one embedding matrix wants a joint vocabulary
            with pytest.raises(ValueError, match=r"separate vocabularies \(200 and 260 pieces\)"):
                zoo.load(arch, tokenizer=tokenizer, **sizes, out_embedding_dim=16)
            sizes = {**sizes, "share_embeddings": False}
        model = zoo.load(arch, tokenizer=tokenizer, precision="float32", **sizes)
        assert model.source_embedding.input_dim == 200 and model.source_vocab_size == 200
        inputs, labels = next(iter(data.train))
        assert model(inputs).shape[-1] == 260 and np.isfinite(
            float(model.compute_loss(inputs, labels, model(inputs)))
        )
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    assert restored.translate(data.test_sources[:2]) == model.translate(data.test_sources[:2])
    save_run_tokenizer(tokenizer, tmp_path, "sentencepiece")
    assert (tmp_path / "tokenizer.source.model").is_file() and (
        tmp_path / "tokenizer.target.model"
    ).is_file()
    reloaded = load_run_tokenizer(tmp_path, "sentencepiece", shared=False)
    assert reloaded.source.tokenize(["zai"]) == tokenizer.source.tokenize(["zai"])
    from keras_s2s.models import GNMT

    with pytest.raises(ValueError, match="does not match the tokenizer's 200 source pieces"):
        GNMT(vocab_size=260, source_vocab_size=0, tokenizer=tokenizer)
