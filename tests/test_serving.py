"""Serving a trained Transformer: the native engine at other compute types (float32, bfloat16, Keras
int8) and the CTranslate2 export and engine, which decode as the Keras model does."""

import gc
import logging

import numpy as np
import pytest
import yaml
from tiny import flags

from keras_s2s.cli import main
from keras_s2s.metrics import score


@pytest.fixture
def ctranslate2():
    """CTranslate2 loaded as keras-s2s loads it (Intel MKL's int8 kernels asked for before the library
    loads: its default oneDNN int8 is wrong on AMD CPUs), or a skip where the extra is not installed."""
    from keras_s2s.export.ctranslate2 import require_ctranslate2

    try:
        return require_ctranslate2()
    except ImportError:
        pytest.skip("CTranslate2 is not installed")


TINY_TRANSFORMER = flags(
    num_layers=2, d_model=32, num_heads=4, ffn_dim=64, dropout=0.0, num_valid=16, num_test=60,
    vocab_size=120, batch_size=32, max_length=24, decode_max_length=24, learning_rate=0.005,
    warmup_steps=20, steps_per_epoch=80,
) + ["--precision", "float32"]  # fmt: skip


def word_corpus(path, pairs: int = 3000, seed: int = 0):
    """A corpus a tiny Transformer learns in a minute: 3-8 of 40 words, each translated by a dictionary,
    in reverse order."""
    import random

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    translation = {word: f"t{(7 * i) % 40}" for i, word in enumerate(words)}
    lines = []
    for _ in range(pairs):
        source = rng.choices(words, k=rng.randint(3, 8))
        lines.append(" ".join(source) + "\t" + " ".join(translation[w] for w in reversed(source)))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny Transformer trained in float32, and its held-out sources and references (640 steps: at 320
    an AMD EPYC Zen 3 reached held-out BLEU 18, where near-ties make engines and compute types disagree;
    at 640, 91)."""
    from keras_s2s.data.parallel import read_splits
    from keras_s2s.training.runner import load_model

    folder = tmp_path_factory.mktemp("ct2")
    corpus, out = word_corpus(folder / "words.tsv"), folder / "run"
    argv = ["train", "transformer", "--data", str(corpus), "--steps", "640", "--out", str(out)]
    assert main(argv + TINY_TRANSFORMER) == 0
    data = yaml.safe_load((out / "card.yaml").read_text())["data"]
    splits = {key: data[key] for key in ("num_train", "num_valid", "num_test", "seed")}
    test = read_splits(str(corpus), **splits)[2]
    return out, load_model(out), [s for s, _ in test], [t for _, t in test]


def test_native_compute_types_copy_the_weights_and_keep_the_output(trained):
    from keras_s2s.export.native import with_compute_type

    _, model, sources, references = trained
    assert with_compute_type(model, "default") is model
    bf16 = with_compute_type(model, "bfloat16")
    assert (bf16.dtype_policy.name, bf16.compute_dtype) == ("mixed_bfloat16", "bfloat16")
    assert all(np.array_equal(a, b) for a, b in zip(bf16.get_weights(), model.get_weights()))
    native = model.translate(sources)
    assert with_compute_type(bf16, "float32").translate(sources) == native, "back to float32: exact"
    assert (
        abs(score(bf16.translate(sources), references)["bleu"] - score(native, references)["bleu"])
        < 1.0
    )
    with pytest.raises(ValueError, match="not one of the native engine's: default, float32"):
        with_compute_type(model, "int4")


def test_native_int8_quantizes_a_copy_within_half_a_bleu_point(trained):
    from keras_s2s.export.native import with_compute_type

    _, model, sources, references = trained
    collect = gc.collect
    int8 = with_compute_type(model, "int8")
    assert gc.collect is collect, "one collection at the end, then Python's own function back"
    quantized = {v.path for v in int8.weights if v.dtype == "int8"}
    assert any("target_embedding" in p for p in quantized), "the output projection too"
    assert any("ffn" in p or "dense" in p for p in quantized), quantized
    assert not any(v.dtype == "int8" for v in model.weights), "the original model is left as it was"
    native = model.translate(sources)
    loss = score(native, references)["bleu"] - score(int8.translate(sources), references)["bleu"]
    assert loss <= 0.5, "quantized, it may score higher (92.84 against 91.33 on a Zen 3), not lower"


def test_the_command_line_translates_at_a_native_compute_type(trained, tmp_path, capsys):
    out, _, sources, _ = trained
    (tmp_path / "in.txt").write_text("\n".join(sources[:8]) + "\n")
    # bfloat16: the flag's path (int8 is the API's test above: its quantized copy traces 3x longer)
    argv = ["translate", "--model", str(out), "--input", str(tmp_path / "in.txt"), "--output",
            str(tmp_path / "bf16.txt"), "--compute-type", "bfloat16", "--beam-width", "2"]  # fmt: skip
    assert main(argv) == 0 and len((tmp_path / "bf16.txt").read_text().splitlines()) == 8
    capsys.readouterr()
    assert main(argv[:-4] + ["--compute-type", "int4"]) == 2
    assert "not one of the native engine's" in capsys.readouterr().err


def test_the_exported_model_translates_token_for_token_like_the_keras_model(
    ctranslate2, trained, tmp_path, caplog
):
    from keras_s2s.export import CTranslate2Translator, export_ctranslate2

    out, model, sources, references = trained
    export_ctranslate2(model, tmp_path / "ct2")
    translator = CTranslate2Translator(tmp_path / "ct2")
    native = model.translate(sources, loop_guard=False)  # CTranslate2 has no loop guard
    assert score(native, references)["bleu"] > 5, "the tiny model learned something"
    assert translator.translate(sources) == native, (
        "greedy float32: the same output, token for token"
    )
    assert translator.translate(["", sources[0], "  "]) == ["", native[0], ""], (
        "blank lines stay blank"
    )
    beam_native = model.translate(sources, beam_width=4, loop_guard=False)
    beam = translator.translate(sources, beam_width=4)
    assert abs(score(beam, references)["bleu"] - score(beam_native, references)["bleu"]) < 2.0
    from keras_s2s.models import seq2seq_lm

    long_line = " ".join(sources) * 4  # cut alike by both engines, each naming the line
    with pytest.MonkeyPatch.context() as patch, caplog.at_level(logging.WARNING, "keras_s2s"):
        patch.setattr(seq2seq_lm, "MAX_SOURCE_TOKENS", 12)
        cut = [
            translator.translate([long_line], first_line=7),
            model.translate([long_line], first_line=7, loop_guard=False),
        ]
    assert cut[0] == cut[1] and caplog.text.count("line 7 (") == 2
    assert caplog.text.count("translating its first 11") == 2


def test_ctranslate2_int8_stays_within_half_a_bleu_point(ctranslate2, trained, tmp_path):
    from keras_s2s.export import CTranslate2Translator, export_ctranslate2

    _, model, sources, references = trained
    export_ctranslate2(model, tmp_path / "int8", quantization="int8")
    # int8 weight matrices; the sinusoidal position table (4,096 rows) stays float32 and dominates a tiny model
    assert (tmp_path / "int8" / "model.bin").stat().st_size < _float32_size(model, tmp_path)
    int8 = CTranslate2Translator(tmp_path / "int8").translate(sources)
    native = model.translate(sources, loop_guard=False)  # CTranslate2 has no loop guard
    loss = score(native, references)["bleu"] - score(int8, references)["bleu"]
    assert loss <= 0.5, f"int8 lost {loss:.2f} BLEU (oneDNN's int8 on an AMD CPU: 55)"


def _float32_size(model, tmp_path):
    from keras_s2s.export import export_ctranslate2

    export_ctranslate2(model, tmp_path / "f32")
    return (tmp_path / "f32" / "model.bin").stat().st_size


def test_the_command_line_exports_and_translates_with_either_engine(
    ctranslate2, trained, tmp_path, capsys, caplog
):
    out, model, sources, _ = trained
    caplog.set_level("INFO", logger="keras_s2s")
    (tmp_path / "in.txt").write_text("\n".join(sources[:8]) + "\n")
    for engine in ("native", "ctranslate2"):
        argv = ["translate", "--model", str(out), "--input", str(tmp_path / "in.txt"),
                "--output", str(tmp_path / f"{engine}.txt"), "--engine", engine]  # fmt: skip
        if engine == "native":
            argv.append("--no-loop-guard")  # like for like: CTranslate2 has no loop guard
        assert main(argv) == 0
    assert (tmp_path / "native.txt").read_text() == (tmp_path / "ctranslate2.txt").read_text()
    assert "CTranslate2 decodes without the loop guard" in caplog.text, "said, not silently dropped"
    assert (out / "ctranslate2" / "model.bin").is_file(), (
        "the run's export is kept for the next call"
    )
    exported = tmp_path / "exported"
    argv = ["export", "--model", str(out), "--format", "ctranslate2", "--out", str(exported),
            "--quantization", "int8"]  # fmt: skip
    assert main(argv) == 0 and (exported / "source.model").is_file()
    argv = ["translate", "--model", str(exported), "--engine", "ctranslate2", "--input",
            str(tmp_path / "in.txt"), "--output", str(tmp_path / "int8.txt"), "--beam-width", "2"]  # fmt: skip
    assert main(argv) == 0 and len((tmp_path / "int8.txt").read_text().splitlines()) == 8
    capsys.readouterr()
    assert main(argv[:-2] + ["--coverage-penalty", "0.2"]) == 2
    assert "native-engine option" in capsys.readouterr().err
    assert main(["export", "--model", str(out), "--format", "keras", "--out", str(tmp_path / "m.keras"),
                 "--quantization", "int8"]) == 2  # fmt: skip
    assert (
        main(["export", "--model", str(out), "--format", "ctranslate2", "--out", str(exported)])
        == 2
    )
    assert "already exists" in capsys.readouterr().err


def test_architectures_without_a_ctranslate2_spec_are_refused_by_name(ctranslate2, tmp_path):
    from keras_s2s import zoo
    from keras_s2s.export import export_ctranslate2

    model = zoo.load("gnmt", num_layers=2, units=8, vocab_size=50, precision="float32")
    with pytest.raises(ValueError, match="a GNMT has no CTranslate2 model spec"):
        export_ctranslate2(model, tmp_path / "x")
    assert not (tmp_path / "x").exists()
    with pytest.raises(FileNotFoundError, match="not a CTranslate2 export"):
        from keras_s2s.export import CTranslate2Translator

        CTranslate2Translator(tmp_path)


def test_a_fresh_process_translates_a_run_with_ctranslate2(ctranslate2, trained, tmp_path):
    """Only the command's own imports: the run's model (compiled with keras_s2s's Adam) still loads."""
    import os
    import subprocess
    import sys

    out, model, sources, _ = trained
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, "-m", "keras_s2s.cli", "translate", "--model", str(out), "--engine",
               "ctranslate2"]  # fmt: skip
    result = subprocess.run(command, input=sources[0] + "\n", capture_output=True, text=True, timeout=300,
                            env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == model.translate(sources[:1], loop_guard=False)


@pytest.mark.parametrize(
    "damage",
    [("model.bin", lambda data: data[: len(data) // 2]), ("config.json", lambda data: b"{not json"),
     ("source.model", lambda data: b"not a sentencepiece model")],
    ids=["truncated-model", "bad-config", "bad-tokenizer"],
)  # fmt: skip
def test_a_damaged_ctranslate2_export_is_named_and_a_runs_own_copy_rebuilt(
    damage, ctranslate2, trained, tmp_path, capsys, caplog
):
    import shutil

    from keras_s2s.export import export_ctranslate2
    from keras_s2s.export.ctranslate2 import translator_for

    out, model, sources, _ = trained
    name, damaged = damage
    exported = tmp_path / "exported"
    export_ctranslate2(model, exported)
    (exported / name).write_bytes(damaged((exported / name).read_bytes()))
    (tmp_path / "in.txt").write_text(sources[0] + "\n")
    argv = ["translate", "--model", str(exported), "--engine", "ctranslate2", "--input",
            str(tmp_path / "in.txt")]  # fmt: skip
    assert main(argv) == 2
    assert f"{exported}: a damaged CTranslate2 export" in capsys.readouterr().err
    run = tmp_path / "run"  # a run directory whose kept export (RUN/ctranslate2) was damaged
    shutil.copytree(out, run, ignore=shutil.ignore_patterns("ctranslate2"))
    shutil.copytree(exported, run / "ctranslate2")
    with caplog.at_level("WARNING", logger="keras_s2s"):
        translated = translator_for(run).translate(sources[:1])
    assert "a damaged CTranslate2 export" in caplog.text and "rebuilding it" in caplog.text
    assert translated == model.translate(sources[:1], loop_guard=False)


def test_ctranslate2_loaded_before_keras_s2s_on_an_amd_cpu_is_named(monkeypatch, caplog):
    """CTranslate2 reads CT2_USE_MKL once, when it loads: loaded earlier without it, an AMD CPU keeps
    oneDNN's int8 (held-out BLEU 36.33 against 91.33 in float32), which is said, not left silent."""
    import sys
    import types

    from keras_s2s.export import ctranslate2 as export

    monkeypatch.setitem(sys.modules, "ctranslate2", types.ModuleType("ctranslate2"))
    monkeypatch.delenv("CT2_USE_MKL", raising=False)
    for vendor, warned in [("GenuineIntel", False), ("AuthenticAMD", True)]:
        monkeypatch.setattr(export, "cpu_info", lambda field, vendor=vendor: vendor)
        caplog.clear()
        with caplog.at_level(logging.WARNING, "keras_s2s"):
            assert export.require_ctranslate2() is sys.modules["ctranslate2"]
        assert ("CT2_USE_MKL=1" in caplog.text) == warned, vendor
        monkeypatch.delenv("CT2_USE_MKL", raising=False)
    caplog.clear()
    monkeypatch.setenv("CT2_USE_MKL", "0")  # the user's choice, kept and not warned about
    with caplog.at_level(logging.WARNING, "keras_s2s"):
        export.require_ctranslate2()
    assert caplog.text == "" and export.os.environ["CT2_USE_MKL"] == "0"
