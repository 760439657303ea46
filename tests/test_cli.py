import json
import logging
import os
import shutil
import subprocess
import sys

import pytest
from tiny import TINY_GNMT

from keras_s2s.cli import main
from keras_s2s.config import LENGTH_PENALTY

TINY = TINY_GNMT


def run_cli(*args, stdin=None, timeout=300):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        [sys.executable, "-m", "keras_s2s.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_list(capsys):
    assert main(["list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert {"gnmt", "transformer", "transformer_big", "convs2s", "gnmt_demo"} <= set(names)


def test_console_script_is_installed():
    result = subprocess.run(["keras-s2s", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "train" in result.stdout


def test_bad_input_gives_a_clear_error_and_exit_code_2(capsys, tmp_path):
    assert main(["train", "gmnt", "--out", str(tmp_path / "r")]) == 2
    assert "unknown model 'gmnt'. Did you mean 'gnmt'?" in capsys.readouterr().err
    assert main(["train", "gnmt", "--set", "unitz=3", "--out", str(tmp_path / "r")]) == 2
    assert "did you mean 'units'" in capsys.readouterr().err
    assert main(["translate", "--model", str(tmp_path / "nothing")]) == 2
    assert "model.keras not found" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                "gnmt",
                "--data",
                str(tmp_path / "missing.tsv"),
                "--out",
                str(tmp_path / "r"),
                *TINY,
            ]
        )
        == 2
    )
    assert "missing.tsv: file not found" in capsys.readouterr().err
    assert not (tmp_path / "r").exists(), "a failed run leaves nothing behind"


@pytest.mark.parametrize(
    "command",
    [
        ["train", "gnmt", "--steps", "-3"],
        ["train", "gnmt", "--steps", "0"],
        ["train", "gnmt", "--epochs", "-1"],
        ["train", "gnmt", "--steps", "2.5"],
        ["train", "gnmt", "--workers", "a:1,b:2", "--task-index", "-1"],
        ["translate", "--model", "m", "--batch-size", "-1"],
        ["translate", "--model", "m", "--batch-size", "0"],
        ["translate", "--model", "m", "--beam-width", "0"],
        ["evaluate", "--model", "m", "--beam-width", "-2"],
        ["transcribe", "--model", "m", "a.wav", "--beam-width", "0"],
        ["average", "--model", "m", "--out", "o", "--last", "0"],
        ["synthesize", "--model", "m", "hi", "-o", "x.wav", "--iterations", "0"],
        ["synthesize", "--model", "m", "hi", "-o", "x.wav", "--batch-size", "0"],
        ["synthesize", "--model", "m", "hi", "-o", "x.wav", "--max-decoder-steps", "-5"],
        ["export", "--model", "m", "--out", "o", "--beam-width", "0"],
        ["lm", "--text", "t.txt", "--out", "lm.arpa", "--order", "1"],  # KenLM reads bigrams and up
    ],
)
def test_a_count_that_makes_no_sense_is_refused_before_anything_runs(
    command, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(command)
    assert exit_.value.code == 2
    assert "must be a whole number of at least" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing is written"


@pytest.mark.parametrize(
    "command",
    [["transcribe", "--model", "m", "a.wav", "--alpha", "nan"],
     ["transcribe", "--model", "m", "a.wav", "--beta", "inf"],
     ["translate", "--model", "m", "--length-penalty", "nan"],
     ["evaluate", "--model", "m", "--coverage-penalty=-inf"]],
)  # fmt: skip
def test_a_weight_that_is_not_a_finite_number_is_refused(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(command)
    assert exit_.value.code == 2 and "must be a finite number" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_files_that_are_not_utf8_text_are_named_and_a_byte_order_mark_is_dropped(capsys, tmp_path):
    """A binary LM text or base card was a decode error naming no file; a BOM stayed in line 1."""
    from keras_s2s.text.corpus import read_lines

    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"name: x\n\x89PNG\r\n\x1a\n\x00\xff")
    assert main(["lm", "--text", str(binary), "--out", str(tmp_path / "lm.arpa")]) == 2
    assert f"{binary}, line 2: bytes that are not UTF-8 at column 1" in capsys.readouterr().err
    assert not (tmp_path / "lm.arpa").exists()
    card = tmp_path / "card.yaml"
    card.write_text(f"base: {binary}\n")
    assert main(["train", str(card), "--data", "demo", "--out", str(tmp_path / "run")]) == 2
    assert f"{binary}, line 2: bytes that are not UTF-8" in capsys.readouterr().err
    corpus = tmp_path / "corpus.tsv"
    corpus.write_bytes("\ufeffhello world\tHallo Welt\r\nbye\ttschüss\n".encode())
    assert read_lines(corpus) == ["hello world\tHallo Welt", "bye\ttschüss"]


def test_the_python_api_refuses_counts_that_make_no_sense(tmp_path):
    from keras_s2s.training.runner import average_checkpoints, train

    with pytest.raises(ValueError, match="steps must be a whole number of at least 1, got 0"):
        train("gnmt", steps=0, out=tmp_path / "r")
    with pytest.raises(ValueError, match="epochs must be a whole number of at least 1, got -1"):
        train("gnmt", epochs=-1, out=tmp_path / "r")
    with pytest.raises(ValueError, match="last must be"):
        average_checkpoints(tmp_path / "r", tmp_path / "o", last=0)
    assert not list(tmp_path.iterdir())
    from keras_s2s import zoo

    model = zoo.load(
        "gnmt_demo", units=8, num_layers=2, vocab_size=40, strategy="default", precision="float32"
    )
    for settings, name in (
        ({"batch_size": -1}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"beam_width": 0}, "beam_width"),
    ):
        with pytest.raises(ValueError, match=f"{name} must be a whole number"):
            model.translate(["a b"], **settings)


def test_train_translate_evaluate(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    assert main(["train", "gnmt", "--data", "demo", "--steps", "12", "--out", str(out), *TINY]) == 0
    printed = capsys.readouterr().out
    assert (
        "held-out BLEU" in printed
        and "dictionary baseline BLEU" in printed
        and "reference:" in printed
    )
    for name in (
        "model.keras",
        "card.yaml",
        "tokenizer.model",
        "eval.json",
        "hypotheses.txt",
        "history.json",
    ):
        assert (out / name).is_file(), name
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "best.json",
        "best.weights.h5",
        "epoch-001.weights.h5",
    ]
    assert not list(out.rglob(".tmp-*")), "no temporary files are left behind"
    assert any((out / "logs").rglob("*tfevents*")), "TensorBoard logs"
    assert not (out / "backup").exists(), "the backup is removed after a finished run"
    result = json.loads((out / "eval.json").read_text())
    assert result["sentences"] == 8 and "nrefs:1" in result["bleu_signature"]
    assert len((out / "hypotheses.txt").read_text().splitlines()) == 8
    metadata = json.loads((out / "preset" / "metadata.json").read_text())
    assert metadata["training_steps"] == 12 and metadata["metrics"]["bleu"] == result["bleu"]
    assert metadata["card"]["name"] == "gnmt" and metadata["architecture"] == "GNMT"
    assert "cores busy" in printed and metadata["metrics"]["fit_cores_busy"] > 0

    assert main(["train", "gnmt", "--steps", "12", "--out", str(out), *TINY]) == 2
    assert "already holds a finished run" in capsys.readouterr().err, (
        "a finished run is never overwritten"
    )

    (tmp_path / "in.txt").write_text("the dog sees a cat\nthey will run\n")
    assert (
        main(
            [
                "translate",
                "--model",
                str(out),
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(tmp_path / "out.txt"),
            ]
        )
        == 0
    )
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 2
    piped = run_cli(
        "translate", "--model", str(out), stdin="the dog sees a cat\nwe will not run\nhello\n"
    )
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout.splitlines()) == 3, "stdin to stdout, one line each"

    (out / "eval.json").unlink()
    assert main(["evaluate", "--model", str(out)]) == 0
    evaluated = json.loads((out / "eval.json").read_text())
    assert evaluated["bleu"] == result["bleu"], "evaluation is reproducible"
    assert main(["evaluate", "--model", str(out), "--beam-width", "2"]) == 0
    beam = json.loads((out / "eval-beam2.json").read_text())
    assert beam["beam_width"] == 2 and beam["length_penalty"] == LENGTH_PENALTY
    assert beam["loop_guard"] is True and 0 <= beam["looping_percent"] == 100 * beam["looping"] / 8
    assert main(["evaluate", "--model", str(out), "--no-loop-guard"]) == 0
    unguarded = json.loads((out / "eval.json").read_text())
    assert unguarded["loop_guard"] is False and "no loop guard" in capsys.readouterr().out
    assert main(["evaluate", "--model", str(out), "--grid"]) == 0
    grid = json.loads((out / "decoding-grid.json").read_text())
    assert [(row["beam_width"], row["length_penalty"]) for row in grid["grid"]] == [
        (1, None), (4, 0.6), (4, 1.0), (8, 0.6), (8, 1.0)
    ]  # fmt: skip
    assert grid["split"] == "dev" and grid["sentences"] == 16 and grid["best"] in grid["grid"]
    assert "best on dev: BLEU" in capsys.readouterr().out
    assert main(["evaluate", "--model", str(out), "--grid", "--beam-width", "4"]) == 2
    assert "give no decoding flag" in capsys.readouterr().err


def test_a_run_whose_evaluation_failed_after_training_is_finished_by_the_rerun(
    tmp_path, capsys, monkeypatch
):
    from keras_s2s.tasks import translation

    out = tmp_path / "run"

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(translation, "evaluate_translation", disk_full)
        assert (
            main(["train", "gnmt", "--data", "demo", "--steps", "6", "--out", str(out), *TINY]) == 1
        )
    assert (out / "model.keras").is_file() and not (out / "preset").exists()
    capsys.readouterr()
    assert main(["evaluate", "--model", str(out)]) == 0, "a trained run can be evaluated"
    assert "bleu" in json.loads((out / "eval.json").read_text())
    assert main(["train", "gnmt", "--data", "demo", "--steps", "6", "--out", str(out), *TINY]) == 0
    assert "training finished earlier" in capsys.readouterr().out
    metadata = json.loads((out / "preset" / "metadata.json").read_text())
    assert (
        metadata["training_steps"] == 6
        and "bleu" in metadata["metrics"]
        and metadata["train_seconds"] > 0
    )
    assert main(["train", "gnmt", "--data", "demo", "--steps", "6", "--out", str(out), *TINY]) == 2
    assert "already holds a finished run" in capsys.readouterr().err


def test_failures_before_training_leave_nothing_that_blocks_the_fix(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["train", "gnmt", "--data", "demo", "--out", str(out), *TINY, "--set", "units=-5"])
        == 2
    )
    assert "'model.units' must be a whole number of at least 1, got -5" in capsys.readouterr().err
    assert (
        main(["train", "gnmt", "--data", "demo", "--out", str(out), *TINY, "--set", "num_layers=1"])
        == 2
    )
    assert "GNMT needs num_layers >= 2" in capsys.readouterr().err
    assert (
        main(["train", "gnmt", "--data", "demo", "--out", str(out), *TINY, "--set", "num_test=0"])
        == 2
    )
    assert "the test split is empty" in capsys.readouterr().err
    assert not out.exists(), "nothing is committed before the model is built"
    out.mkdir()  # what an older attempt with other settings left before its first epoch
    (out / "card.yaml").write_text("name: gnmt\nmodel: {units: 999}\n")
    (out / "tokenizer.model").write_bytes(b"stale")
    assert main(["train", "gnmt", "--data", "demo", "--steps", "2", "--out", str(out), *TINY]) == 0
    assert (out / "preset").is_dir() and "units: 16" in (out / "card.yaml").read_text()
    (tmp_path / "a_file").write_text("keep me")
    assert (
        main(
            [
                "train",
                "gnmt",
                "--data",
                "demo",
                "--steps",
                "2",
                "--out",
                str(tmp_path / "a_file"),
                *TINY,
            ]
        )
        == 2
    )
    assert "is a file, not a run directory" in capsys.readouterr().err
    assert (tmp_path / "a_file").read_text() == "keep me"


def test_cores_busy_is_the_processes_cpu_seconds_over_wall_seconds(monkeypatch):
    from keras_s2s.training import runner

    clock = {"wall": 100.0, "cpu": 10.0}
    monkeypatch.setattr(runner.time, "perf_counter", lambda: clock["wall"])
    monkeypatch.setattr(runner.time, "process_time", lambda: clock["cpu"])
    start = runner._clock()
    clock.update(wall=104.0, cpu=16.4)  # 6.4 CPU seconds over all threads in 4 s
    assert runner.cores_busy(start) == 1.6


@pytest.mark.slow
def test_train_on_two_aligned_files_with_the_hybrid_strategy(tmp_path, capsys):
    from devices import cpu_devices

    from keras_s2s.corpora import DemoCorpus

    pairs = DemoCorpus(seed=2).split(400, 0, 0)[0]
    (tmp_path / "train.src").write_text("\n".join(s for s, _ in pairs) + "\n")
    (tmp_path / "train.tgt").write_text("\n".join(t for _, t in pairs) + "\n")
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "gnmt",
                "--data",
                str(tmp_path / "train.src"),
                str(tmp_path / "train.tgt"),
                "--steps",
                "3",
                "--out",
                str(out),
                "--strategy",
                "hybrid",
                "--devices",
                ",".join(cpu_devices()),
                "--set",
                "time_chunks=2",
                *TINY,
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "hybrid over 2 device(s)" in printed, "trained with LSTM layers on two devices"
    assert "held-out BLEU" in printed and "baseline" not in printed, (
        "the placed model translates too"
    )
    result = json.loads((out / "eval.json").read_text())
    assert result["sentences"] == 8  # num_test from TINY; the split is cut from the shuffled corpus


def test_a_crash_while_saving_leaves_no_partial_file(tmp_path):
    from keras_s2s.files import atomic_write

    target = tmp_path / "model.keras"
    target.write_text("previous")

    def crash(path):
        path.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, crash)
    assert target.read_text() == "previous" and list(tmp_path.iterdir()) == [target]


COMMON = [
    "--set",
    "num_train=300",
    "--set",
    "num_valid=16",
    "--set",
    "num_test=8",
    "--set",
    "data.vocab_size=300",
    "--set",
    "batch_size=16",
    "--set",
    "max_length=48",
    "--set",
    "decode_max_length=20",
    "--set",
    "warmup_steps=2",
    "--precision",
    "float32",
]
TINY_MODELS = {
    "transformer": [
        "--set",
        "num_layers=1",
        "--set",
        "d_model=16",
        "--set",
        "num_heads=2",
        "--set",
        "ffn_dim=32",
    ],
    "convs2s": [
        "--set",
        "embedding_dim=16",
        "--set",
        "channels=[16, 16]",
        "--set",
        "kernel_sizes=[3, 3]",
        "--set",
        "out_embedding_dim=16",
        "--set",
        "max_positions=256",
    ],
}


@pytest.mark.parametrize("arch", sorted(TINY_MODELS))
def test_each_architecture_trains_on_a_split_directory_evaluates_averages_and_translates(
    arch, tmp_path, capsys, caplog
):
    from keras_s2s.corpora import DemoCorpus

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split, pairs in zip(("train", "dev", "test"), DemoCorpus(seed=3).split(300, 16, 8)):
        (corpus / f"{split}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                arch,
                "--data",
                str(corpus),
                "--epochs",
                "2",
                "--set",
                "steps_per_epoch=3",
                "--out",
                str(out),
                *COMMON,
                *TINY_MODELS[arch],
            ]
        )
        == 0
    )
    evaluated = json.loads((out / "eval.json").read_text())
    assert evaluated["sentences"] == 8 and "bleu" in evaluated  # the directory's test split

    assert (
        main(["evaluate", "--model", str(out), "--beam-width", "2", "--coverage-penalty", "0.2"])
        == 0
    )
    beam = json.loads((out / "eval-beam2.json").read_text())
    assert beam["beam_width"] == 2 and beam["length_penalty"] == LENGTH_PENALTY
    assert (
        beam["coverage_penalty"] == 0.2
        and len((out / "hypotheses-beam2.txt").read_text().splitlines()) == 8
    )
    assert json.loads((out / "eval.json").read_text())["beam_width"] == 1, (
        "the greedy result is kept"
    )

    averaged = tmp_path / "averaged"
    assert main(["average", "--model", str(out), "--last", "2", "--out", str(averaged)]) == 0
    assert (
        "averaged 2 checkpoints (epoch-001.weights.h5, epoch-002.weights.h5)"
        in capsys.readouterr().out
    )
    assert main(["evaluate", "--model", str(averaged)]) == 0
    assert main(["average", "--model", str(out), "--last", "5", "--out", str(tmp_path / "x")]) == 2
    assert "holds 2 checkpoint(s); cannot average the last 5" in capsys.readouterr().err

    lines = [s for s, _ in DemoCorpus(seed=4).split(40, 0, 0)[0]]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    assert (
        main(
            [
                "translate",
                "--model",
                str(averaged),
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(tmp_path / "out.txt"),
                "--batch-size",
                "2",
                "--beam-width",
                "2",
            ]
        )
        == 0
    )
    assert "translated 40/40 lines" in capsys.readouterr().err
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 40
    (tmp_path / "long.txt").write_text("short one\n" + "word " * 300 + "\n")
    # learned positions: the over-long line is cut to fit, with a warning naming it
    if arch == "convs2s":
        with caplog.at_level(logging.WARNING, logger="keras_s2s"):
            assert (
                main(
                    [
                        "translate",
                        "--model",
                        str(averaged),
                        "--input",
                        str(tmp_path / "long.txt"),
                        "--output",
                        str(tmp_path / "long.out"),
                    ]
                )
                == 0
            )
        assert "line 2 ('word word" in caplog.text and "translating its first 255" in caplog.text
        assert len((tmp_path / "long.out").read_text().splitlines()) == 2
    else:  # no positions to bound it: keras_s2s's cap (a 1 MB line was out of memory)
        from keras_s2s.models import seq2seq_lm

        command = ["translate", "--model", str(averaged), "--input", str(tmp_path / "long.txt")]
        with pytest.MonkeyPatch.context() as patch, caplog.at_level(logging.WARNING, "keras_s2s"):
            patch.setattr(seq2seq_lm, "MAX_SOURCE_TOKENS", 64)
            assert main([*command, "--output", str(tmp_path / "long.out")]) == 0
        assert "line 2 ('word word" in caplog.text and "translating its first 63" in caplog.text
        assert "MAX_SOURCE_TOKENS, 64" in caplog.text
        assert len((tmp_path / "long.out").read_text().splitlines()) == 2


def test_mirrored_training_over_several_epochs_and_checkpoint_averaging(tmp_path, capsys):
    import numpy as np
    from devices import cpu_devices

    from keras_s2s.training.runner import average_checkpoints, load_model

    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "gnmt",
                "--epochs",
                "3",
                "--set",
                "steps_per_epoch=2",
                "--out",
                str(out),
                "--strategy",
                "mirrored",
                "--devices",
                ",".join(cpu_devices()),
                *TINY,
            ]
        )
        == 0
    )
    assert "2 replica(s)" in capsys.readouterr().out
    model = load_model(out)
    per_epoch = []
    for path in sorted((out / "checkpoints").glob("epoch-*.weights.h5"))[1:]:
        model.load_weights(path)
        per_epoch.append([w.numpy() for w in model.weights])
    average_checkpoints(out, tmp_path / "avg", last=2)
    averaged = load_model(tmp_path / "avg")
    for i, weight in enumerate(averaged.weights):
        np.testing.assert_allclose(
            weight.numpy(), (per_epoch[0][i] + per_epoch[1][i]) / 2, rtol=1e-6, atol=1e-7
        )
    # a run that has not ended (no model.keras yet): its model is built from its card and tokenizer
    unfinished = tmp_path / "unfinished"
    shutil.copytree(out, unfinished, ignore=shutil.ignore_patterns("model.keras", "preset"))
    average_checkpoints(unfinished, tmp_path / "avg-unfinished", last=2)
    assert "training has not ended (no model.keras)" in capsys.readouterr().out
    again = load_model(tmp_path / "avg-unfinished")
    for mine, theirs in zip(again.weights, averaged.weights, strict=True):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
    assert again.translate(["a b"]) == averaged.translate(["a b"])
    for name in [path.name for path in unfinished.glob("tokenizer.*")]:
        (unfinished / name).unlink()
    with pytest.raises(ValueError, match="the run stored no tokenizer yet"):
        average_checkpoints(unfinished, tmp_path / "avg-none", last=1)


def test_speech_recognizer_trains_evaluates_and_transcribes(tmp_path, capsys, monkeypatch):
    from keras_s2s.audio.io import resample, write_wav
    from keras_s2s.corpora.espeak import synthesize

    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path / "home"))
    out = tmp_path / "asr"
    tiny = [
        "--set",
        "channels=[32, 32]",
        "--set",
        "kernels=[5, 5]",
        "--set",
        "dropouts=[0.1, 0.1]",
        "--set",
        "prologue_channels=32",
        "--set",
        "epilogue_channels=[32, 32]",
        "--set",
        "epilogue_kernel=5",
        "--set",
        "num_train=40",
        "--set",
        "num_valid=4",
        "--set",
        "num_test=6",
        "--set",
        "batch_size=8",
        "--precision",
        "float32",
    ]
    assert (
        main(
            [
                "train",
                "wave2letter_demo",
                "--data",
                "demo-speech",
                "--steps",
                "3",
                "--out",
                str(out),
                *tiny,
            ]
        )
        == 0
    )
    result = json.loads((out / "eval.json").read_text())
    assert result["utterances"] == 6 and 0 <= result["cer"] and 0 <= result["wer"]
    assert len((out / "transcripts.txt").read_text().splitlines()) == 6
    assert main(["evaluate", "--model", str(out), "--beam-width", "4"]) == 0
    assert json.loads((out / "eval-beam4.json").read_text())["beam_width"] == 4

    capsys.readouterr()  # what training and evaluation printed
    write_wav(
        tmp_path / "fresh.wav",
        resample(*synthesize("the red dog runs", voice="en-us"), 16000),
        16000,
    )
    assert (
        main(
            [
                "transcribe",
                "--model",
                str(out),
                str(tmp_path / "fresh.wav"),
                str(tmp_path / "fresh.wav"),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(str(tmp_path / "fresh.wav") + "\t")
    (tmp_path / "broken.wav").write_text("nope")
    assert (
        main(
            [
                "transcribe",
                "--model",
                str(out),
                str(tmp_path / "broken.wav"),
                str(tmp_path / "fresh.wav"),
            ]
        )
        == 1
    )
    printed = capsys.readouterr()
    assert (
        "broken.wav: not a readable audio file" in printed.err
        and "1 of 2 file(s) could not be read" in printed.err
    )
    assert printed.out.startswith(str(tmp_path / "fresh.wav") + "\t"), (
        "the readable file is transcribed"
    )
    assert main(["translate", "--model", str(out)]) == 2
    assert "holds a Wave2Letter, not a translation model" in capsys.readouterr().err

    # a new run that starts from this one's preset; another architecture is refused by name
    def one_step(run_dir, *flags):
        train_args = ["train", "wave2letter_demo", "--data", "demo-speech", "--steps", "1"]
        return main(
            [
                *train_args,
                "--out",
                str(run_dir),
                *tiny,
                "--set",
                f"training.init_from={out / 'preset'}",
                *flags,
            ]
        )

    assert one_step(tmp_path / "again") == 0
    assert f"starting from the weights of {out / 'preset'}" in capsys.readouterr().out
    assert one_step(tmp_path / "other", "--set", "prologue_channels=40") == 2
    assert "in the preset" in capsys.readouterr().err
    assert not (tmp_path / "other").exists(), "a failed start leaves no card or tokenizer"
    (tmp_path / "damaged.weights.h5").write_bytes(b"\x89HDF\r\n not really")
    damaged = f"training.init_from={tmp_path / 'damaged.weights.h5'}"
    assert one_step(tmp_path / "third", "--set", damaged) == 2
    error = capsys.readouterr().err
    assert f"training.init_from {tmp_path / 'damaged.weights.h5'}: does not load into" in error
    assert not (tmp_path / "third").exists()

    # beam search fused with a word LM, in evaluate and transcribe
    (tmp_path / "lm.txt").write_text("the red dog runs\nthe old cat sleeps\n")
    assert main(["lm", "--text", str(tmp_path / "lm.txt"), "--out", str(tmp_path / "lm.arpa")]) == 0
    lm_flags = ["--lm", str(tmp_path / "lm.arpa"), "--alpha", "0.7", "--beta", "0.5"]
    assert main(["evaluate", "--model", str(out), *lm_flags, "--beam-width", "4"]) == 0
    fused = json.loads((out / "eval-beam4.json").read_text())
    assert fused["lm"] == str(tmp_path / "lm.arpa") and (fused["alpha"], fused["beta"]) == (
        0.7,
        0.5,
    )
    capsys.readouterr()
    assert main(["transcribe", "--model", str(out), *lm_flags, str(tmp_path / "fresh.wav")]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1, "one file: its text alone"
    assert (
        main(
            [
                "transcribe",
                "--model",
                str(out),
                "--lm",
                str(tmp_path / "no.arpa"),
                str(tmp_path / "fresh.wav"),
            ]
        )
        == 2
    )
    assert "no.arpa" in capsys.readouterr().err
