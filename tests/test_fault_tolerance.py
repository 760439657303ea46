"""Training survives a killed process: atomic backups, exact resume, no step counted twice,
and no resuming with other settings."""

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from tiny import TINY_GNMT, disk_full_after_first_backup, flags

from keras_s2s.cli import main
from keras_s2s.corpora.translation_demo import DemoCorpus
from keras_s2s.text.tokenizer import load_run_tokenizer
from keras_s2s.training.backup import AtomicBackupAndRestore


def tiny_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 4))
    model.compile(optimizer="adam", loss="mse")
    return model


def test_backups_commit_atomically_and_restore_weights_optimizer_and_epoch(tmp_path):
    x, y = np.ones((8, 4), "float32"), np.zeros((8, 3), "float32")
    model = tiny_model()
    backup = AtomicBackupAndRestore(tmp_path / "backup")
    backup.set_model(model)
    model.fit(x, y, epochs=2, verbose=0)
    backup.on_epoch_end(1)  # as fit would after its second epoch
    saved = [w.numpy().copy() for w in model.weights]
    assert json.loads((tmp_path / "backup" / "latest.json").read_text()) == {
        "epoch": 2,
        "weights": "epoch-0002.weights.h5",
        "history": {},
        "train_seconds": 0.0,
        "batches": 0,  # (counted by fit's batch callbacks, which this test does not call)
        "random_state": [],  # (no dropout)
    }
    # a crash while writing the next backup: a half-written file, the pointer not yet moved
    (tmp_path / "backup" / ".tmp-epoch-0003.weights.h5").write_bytes(b"\x89HDF half")
    (tmp_path / "backup" / "epoch-0003.weights.h5").write_bytes(b"not an h5 file")
    restored = tiny_model()
    restarted = AtomicBackupAndRestore(tmp_path / "backup")
    assert restarted.restore(restored) == 2
    restarted.set_model(restored)
    assert int(restored.optimizer.iterations) == int(model.optimizer.iterations)
    for a, b in zip(saved, restored.weights):
        np.testing.assert_array_equal(a, b.numpy())
    restarted.on_epoch_end(2)
    assert sorted(
        p.name for p in (tmp_path / "backup").iterdir() if not p.name.startswith(".")
    ) == ["epoch-0003.weights.h5", "latest.json"]
    restarted.on_train_end()  # fit is over; the run's final files are not written yet
    assert json.loads((tmp_path / "backup" / "latest.json").read_text())["training_over"]
    restarted.discard()
    assert not (tmp_path / "backup").exists()


# The SIGKILL-and-restart test of a whole training job (two workers) is in test_multiworker.py.


@contextlib.contextmanager
def before_every_write(hook):
    """Within: every keras_s2s `atomic_write` (the run's file writes) and preset written calls
    `hook(path)` first."""
    from keras_s2s import files, presets

    patched = []
    # (the function, the index of the path it writes among its arguments)
    for real, where in ((files.atomic_write, 0), (presets.save_to_preset, 1)):

        def watched(*args, real=real, where=where, **kwargs):
            hook(Path(args[where]))
            return real(*args, **kwargs)

        for module in [m for n, m in sys.modules.items() if n.startswith("keras_s2s")]:
            for name, value in vars(module).items():
                if value is real:
                    patched.append((module, name, real))
        for module, name, _ in patched:
            if getattr(module, name) is real:
                setattr(module, name, watched)
    try:
        yield
    finally:
        for module, name, real in patched:
            setattr(module, name, real)


def encoded_demo_corpus(folder: Path) -> Path:
    """`keras-s2s encode` of 300 demo pairs (train, dev, test files) into `folder`/ids."""
    from keras_s2s.corpora.translation_demo import DemoCorpus

    splits = DemoCorpus(seed=0).split(300, 16, 8, seed=1)
    for name, pairs in zip(("train", "dev", "test"), splits):
        (folder / f"{name}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    ids = folder / "ids"
    assert main(["encode", "--data", str(folder), "--out", str(ids), "--vocab-size", "150"]) == 0
    return ids


def test_a_kill_at_any_write_of_a_run_on_an_encoded_folder_loses_no_training(tmp_path, capsys):
    """Crash consistency: the disk a SIGKILL leaves just before each file write of a 2-epoch run,
    from its card to its preset (copied at that moment, with the write's half-written temporary
    file; the second epoch's five writes repeat the first's and are left out); the same command
    finishes each one with the planned steps and the uninterrupted run's weights (a
    resumed run skips the batches it had seen and restores the dropout seeds). The run reads an
    encoded folder, the path whose reruns were refused: its card records the folder's vocabulary
    settings, which the rerun took for changed settings."""
    import keras_s2s.training.runner  # noqa: F401  (imports every module that writes a run's files)

    out = tmp_path / "run"
    snapshots = []
    gone = subprocess.Popen([sys.executable, "-c", "pass"])  # the PID of a process that has ended
    gone.wait()
    (tmp_path / "text").mkdir()
    data = str(encoded_demo_corpus(tmp_path / "text"))

    commits = []  # backup/latest.json writes so far: the second epoch's writes repeat the first's

    def snapshot(path):
        if path.name == "latest.json":
            commits.append(path)
        committing = path.name == "latest.json"
        if len(commits) == 1 and not committing or len(commits) == 2 and committing:
            return  # a write of the second epoch (up to its commit): the first epoch's again
        killed = tmp_path / f"killed-{len(snapshots):02d}-{path.name}" / "run"
        shutil.copytree(out, killed)
        half = killed / path.relative_to(out)
        if path.name == "preset":  # a folder, written in .tmp-preset-PID and renamed
            half = half.with_name(f".tmp-preset-{gone.pid}") / "model.weights.h5"
            half.parent.mkdir()
            half.write_bytes(b"half a file")
        else:
            half.with_name(f".tmp-{half.name}").write_bytes(b"half a file")
        snapshots.append((path.relative_to(out), killed))

    command = ["train", "gnmt", "--data", data, "--epochs", "2", *TINY]
    with before_every_write(snapshot):
        assert main([*command, "--out", str(out)]) == 0
    expected = keras.saving.load_model(out / "model.keras").get_weights()
    written = [str(path) for path, _ in snapshots]
    assert written[:3] == ["card.yaml", "tokenizer.model", "checkpoints/epoch-001.weights.h5"]
    assert "checkpoints/epoch-002.weights.h5" not in written and len(written) == 14
    assert written[-6:] == [
        "history.json",
        "fit.json",
        "model.keras",
        "hypotheses.txt",
        "eval.json",
        "preset",
    ]
    capsys.readouterr()
    for i, (path, killed) in enumerate(snapshots):
        assert main([*command, "--out", str(killed)]) == 0, path
        trained = capsys.readouterr().out.count("Epoch ")
        backed_up = 2 * written[:i].count("backup/latest.json")  # epochs backed up before the kill
        assert trained == max(0, 2 - backed_up), f"killed at {path}: {trained} epoch(s) trained"
        fit = json.loads((killed / "fit.json").read_text())
        assert fit["training_steps"] == 4, path
        assert len(json.loads((killed / "history.json").read_text())["loss"]) == 2, path
        assert (killed / "preset").is_dir() and not (killed / "backup").exists(), path
        assert not list(killed.rglob(".tmp-*")), f"killed at {path}: a half-written file stays"
        weights = keras.saving.load_model(killed / "model.keras").get_weights()
        for one, two in zip(weights, expected):
            np.testing.assert_array_equal(one, two, err_msg=str(path))


TINY = TINY_GNMT + flags(steps_per_epoch=2)


@pytest.fixture(scope="module")
def crashed_and_finished_run(tmp_path_factory):
    """A 3-epoch run whose disk is full at the second epoch's checkpoint, then finished by the same command."""
    out = tmp_path_factory.mktemp("runs") / "run"
    command = ["train", "gnmt", "--data", "demo", "--epochs", "3", "--out", str(out), *TINY]
    with disk_full_after_first_backup():
        first = main(command)
    kept = sorted(p.name for p in (out / "checkpoints").glob("epoch-*"))
    second = main(command)
    return out, first, kept, second


def test_a_full_disk_stops_training_cleanly_and_the_same_command_resumes(
    crashed_and_finished_run, capsys
):
    out, first, kept, second = crashed_and_finished_run
    assert first == 1 and kept == ["epoch-001.weights.h5"], (
        "the checkpoint that fitted is kept, no partial file"
    )
    assert second == 0 and (out / "preset").is_dir()
    history = json.loads((out / "history.json").read_text())
    assert len(history["loss"]) == 3, "the epoch before the crash is in history.json too"


def test_damaged_run_files_get_messages_that_name_them(crashed_and_finished_run, tmp_path, capsys):
    out = crashed_and_finished_run[0]
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    (broken / "model.keras").write_bytes((out / "model.keras").read_bytes()[:1000])
    assert main(["translate", "--model", str(broken)]) == 2
    assert (
        f"{broken / 'model.keras'}: not a readable .keras file (damaged or truncated)"
        in capsys.readouterr().err
    )
    checkpoint = out / "checkpoints" / "epoch-003.weights.h5"
    shutil.copy(checkpoint, broken / "checkpoints" / checkpoint.name)
    (broken / "model.keras").write_bytes((out / "model.keras").read_bytes())
    (broken / "checkpoints" / checkpoint.name).write_bytes(checkpoint.read_bytes()[:500])
    assert (
        main(["average", "--model", str(broken), "--last", "2", "--out", str(tmp_path / "avg")])
        == 2
    )
    assert "epoch-003.weights.h5: the checkpoint does not load" in capsys.readouterr().err

    resumable = tmp_path / "resumable"
    (resumable / "backup").mkdir(parents=True)
    shutil.copy(out / "card.yaml", resumable / "card.yaml")
    shutil.copy(out / "tokenizer.model", resumable / "tokenizer.model")
    (resumable / "backup" / "latest.json").write_text("{not json")
    command = ["train", "gnmt", "--data", "demo", "--epochs", "3", "--out", str(resumable), *TINY]
    assert main(command) == 2
    assert (
        f"{resumable / 'backup' / 'latest.json'}: not a readable backup pointer"
        in capsys.readouterr().err
    )
    (resumable / "backup" / "latest.json").write_text(
        '{"epoch": 1, "weights": "epoch-0001.weights.h5"}'
    )
    (resumable / "backup" / "epoch-0001.weights.h5").write_bytes(b"\x89HDF truncated")
    assert main(command) == 2
    assert "epoch-0001.weights.h5: the backup does not load" in capsys.readouterr().err


def test_translate_names_bad_input_keeps_blank_lines_and_refuses_a_speech_run(
    crashed_and_finished_run, tmp_path, capsys
):
    out = crashed_and_finished_run[0]
    (tmp_path / "latin1.txt").write_bytes("the dog\nthe caf\xe9 cat\n".encode("latin-1"))
    assert (
        main(
            [
                "translate",
                "--model",
                str(out),
                "--input",
                str(tmp_path / "latin1.txt"),
                "--output",
                str(tmp_path / "out.txt"),
            ]
        )
        == 2
    )
    assert f"{tmp_path / 'latin1.txt'}, line 2: not UTF-8 text" in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists(), "nothing half-written"
    piped = subprocess.run(
        [sys.executable, "-m", "keras_s2s.cli", "translate", "--model", str(out)],
        input=b"the dog\n\xff\xfe\n",
        capture_output=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert piped.returncode == 2 and b"stdin, line 2: not UTF-8 text" in piped.stderr
    (tmp_path / "blank.txt").write_text("the dog sees a cat\n\n   \nthey will run\n")
    (tmp_path / ".tmp-blank.out").write_text("left by a translate killed with SIGKILL")
    assert (
        main(
            [
                "translate",
                "--model",
                str(out),
                "--input",
                str(tmp_path / "blank.txt"),
                "--output",
                str(tmp_path / "blank.out"),
            ]
        )
        == 0
    )
    lines = (tmp_path / "blank.out").read_text().split("\n")
    assert len(lines) == 5 and lines[1] == lines[2] == "" and lines[0] and lines[3], (
        "blank lines stay blank"
    )
    assert not (tmp_path / ".tmp-blank.out").exists(), (
        "the next run replaces a killed run's temporary file"
    )


def test_translate_po_fills_a_catalog_with_a_trained_run_and_names_a_broken_one(
    crashed_and_finished_run, tmp_path, capsys
):
    import polib

    out = crashed_and_finished_run[0]
    catalog = tmp_path / "de.po"
    text = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        '#: a.c:1\nmsgid "the dog sees a cat"\nmsgstr ""\n\n'
        'msgid "they will run"\nmsgstr "sie werden rennen"\n'
    )
    catalog.write_text(text)
    assert main(["translate", "--model", str(out), "--po", str(catalog)]) == 0
    assert "1 message(s) filled and marked fuzzy" in capsys.readouterr().err
    filled = polib.pofile(str(catalog))
    assert filled[0].fuzzy and filled[0].msgstr and filled[1].msgstr == "sie werden rennen"
    assert catalog.read_text().endswith('msgid "they will run"\nmsgstr "sie werden rennen"\n')
    broken = tmp_path / "broken.po"
    broken.write_text(text.replace('"they will run"', '"they will run'))
    args = ["translate", "--model", str(out), "--po", str(broken), "--output", str(tmp_path / "o")]
    assert main(args) == 2
    assert f"{broken}, line 9: not a gettext line" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit):  # argparse: --po or --input, not both
        main([*args[:-2], "--input", str(catalog)])
    assert "argument --input: not allowed with argument --po" in capsys.readouterr().err


def test_ctrl_c_offers_to_resume_only_where_a_rerun_resumes(monkeypatch, capsys):
    import keras_s2s.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    commands = [dataclasses.replace(c, run=interrupted) if c.name == "translate" else c
                for c in cli.COMMANDS]  # fmt: skip
    monkeypatch.setattr(cli, "COMMANDS", commands)
    assert main(["translate", "--model", "m"]) == 130
    assert capsys.readouterr().err.strip() == "keras-s2s: interrupted"
    monkeypatch.setattr("keras_s2s.training.runner.train", interrupted)
    assert main(["train", "gnmt"]) == 130
    assert "run the same command again to resume" in capsys.readouterr().err


def test_a_device_that_does_not_exist_is_refused():
    from keras_s2s.distribution import get_strategy

    with pytest.raises(
        ValueError, match="device '/gpu:3' does not exist here; this process has /device:CPU:0"
    ):
        get_strategy("mirrored", devices=["/gpu:3"])


def test_the_free_space_check_expects_what_save_weights_writes(tmp_path):
    from keras_s2s.files import weights_file_bytes

    model = keras.Sequential([keras.Input((300,)), keras.layers.Dense(300)])
    model.compile(optimizer="adam", loss="mse")
    # the optimizer's slots exist
    model.fit(np.ones((4, 300), "float32"), np.ones((4, 300), "float32"), verbose=0)
    model.save_weights(tmp_path / "w.weights.h5")
    written = (tmp_path / "w.weights.h5").stat().st_size
    assert 0.9 * written < weights_file_bytes(model) < 1.1 * written, (
        "weights and Adam's two moments"
    )


def test_a_second_train_on_the_same_out_is_refused_and_a_killed_runs_lock_blocks_nothing(
    crashed_and_finished_run, tmp_path, capsys
):
    from keras_s2s.files import run_lock

    out = tmp_path / "run"
    hold = (
        "import sys, time\nfrom pathlib import Path\nfrom keras_s2s.files import run_lock\n"
        "with run_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(600)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        command = ["train", "gnmt", "--data", "demo", "--epochs", "1", "--out", str(out), *TINY]
        assert main(command) == 2
        assert f"{out} is being written by keras-s2s train (PID {holder.pid} on" in (
            capsys.readouterr().err
        )
        assert not (out / "card.yaml").exists(), "refused before writing anything"
        finished = str(crashed_and_finished_run[0])
        for command in (
            ["average", "--model", finished, "--last", "2"],
            ["evaluate", "--model", finished],
        ):
            assert main([*command, "--out", str(out)]) == 2, (
                command
            )  # replaced a training run's card
            assert f"{out} is being written by keras-s2s train" in capsys.readouterr().err
            assert sorted(p.name for p in out.iterdir()) == [".keras-s2s.lock"]
    finally:
        holder.kill()  # as SIGKILL leaves it: the lock file stays, naming a dead process
        holder.wait()
    with run_lock(out):  # the OS dropped the lock with the process
        assert f"PID {os.getpid()} " in (out / ".keras-s2s.lock").read_text()
    (out / "card.yaml").write_text("name: a stopped run\n")
    assert main(["average", "--model", str(crashed_and_finished_run[0]), "--out", str(out)]) == 2
    assert "holds a run (its card.yaml); average into a new folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "damage",
    ['{"metric": "bleu", "scor', '{"metric": "bleu"}', '{"metric": "bleu", "scores": [1]}',
     '{"metric": "bleu", "scores": {"1": 2.0}, "best_epoch": 5}', "\x89binary\xff"],
)  # fmt: skip
def test_a_damaged_best_json_is_named_in_average_and_on_resume(
    damage, crashed_and_finished_run, tmp_path, capsys
):
    from keras_s2s.training.validation import BestCheckpoint

    broken = tmp_path / "broken"
    shutil.copytree(crashed_and_finished_run[0], broken)
    best = broken / "checkpoints" / "best.json"
    best.write_bytes(damage.encode("latin-1"))
    average = ["average", "--model", str(broken), "--best", "2", "--out", str(tmp_path / "avg")]
    assert main(average) == 2
    message = f"{best}: not a readable record of the validation scores"
    assert message in capsys.readouterr().err
    resumed = BestCheckpoint(broken / "checkpoints", metric="loss")  # what a resumed run reads
    with pytest.raises(ValueError, match="remove it to go on without the earlier epochs' scores"):
        resumed.on_train_begin()


def test_a_missing_optional_dependency_is_a_one_line_error_with_its_install_hint(
    crashed_and_finished_run, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # `import ctranslate2` fails
    out = crashed_and_finished_run[0]
    export = [
        "export",
        "--model",
        str(out),
        "--format",
        "ctranslate2",
        "--out",
        str(tmp_path / "c"),
    ]
    assert main(export) == 2
    err = capsys.readouterr().err
    assert 'CTranslate2 is not installed: pip install "keras-s2s[ctranslate2]"' in err
    assert "Traceback" not in err and not (tmp_path / "c").exists()


def test_only_a_full_disk_is_told_that_the_same_command_continues(tmp_path, capsys):
    """An OSError that is not about space (here --out inside a file) gets no promise of resuming."""
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "run"
    assert main(["train", "gnmt", "--data", "demo", "--epochs", "1", "--out", str(out), *TINY]) == 1
    err = capsys.readouterr().err
    assert "keras-s2s: error:" in err and "continues from there" not in err


def test_a_folder_a_killed_process_was_building_is_removed_by_the_next_one(tmp_path):
    """`.tmp-NAME-PID` folders (a preset, an unpacked archive, an export) stayed forever after a kill."""
    import subprocess
    import sys
    import tarfile

    from keras_s2s.files import staging_folder
    from keras_s2s.presets import extract

    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; os.mkdir(f'.tmp-unpacked-{os.getpid()}'); os.mkdir(f"
            "'.tmp-preset-{os.getpid()}'); os.kill(os.getpid(), 9)",
        ],  # fmt: skip
        cwd=tmp_path,
    )
    assert killed.returncode == -9 and len(list(tmp_path.glob(".tmp-*"))) == 2
    alive = tmp_path / f".tmp-unpacked-{os.getppid()}"  # a process still at work: left alone
    alive.mkdir()
    (tmp_path / "config.json").write_text("{}")
    with tarfile.open(tmp_path / "archive.tar.gz", "w:gz") as archive:
        archive.add(tmp_path / "config.json", arcname="config.json")
    extract(tmp_path / "archive.tar.gz", tmp_path / "unpacked")
    assert (tmp_path / "unpacked" / "config.json").is_file()
    leftovers = sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.glob(".tmp-*"))
    assert leftovers == [".tmp-preset", ".tmp-unpacked"] and alive.is_dir(), (
        "another target's stays"
    )
    assert staging_folder(tmp_path / "preset") == tmp_path / f".tmp-preset-{os.getpid()}"
    assert [p.name for p in tmp_path.glob(".tmp-*")] == [alive.name], "the preset's leftover too"


def test_init_from_a_checkpoint_takes_the_tokenizer_of_its_run(
    crashed_and_finished_run, tmp_path, capsys
):
    """A new run from a checkpoint reads its corpus with the checkpoint's tokenizer (one learned on
    its own text gave the ids other meanings)."""
    import shutil

    checkpoint = crashed_and_finished_run[0] / "checkpoints" / "epoch-001.weights.h5"
    start = ["train", "gnmt", "--data", "demo", "--epochs", "1", *TINY]
    start += ["--set", f"training.init_from={checkpoint}"]
    assert main([*start, "--out", str(tmp_path / "same")]) == 0
    assert f"starting from the weights of {checkpoint}" in capsys.readouterr().out
    # other sentences: read with the checkpoint's tokenizer, not one learned on them
    other = ["--set", "num_train=200"]
    assert main([*start, *other, "--out", str(tmp_path / "other")]) == 0
    donor = load_run_tokenizer(crashed_and_finished_run[0], "sentencepiece", True)
    taken = load_run_tokenizer(tmp_path / "other", "sentencepiece", True)
    assert taken.get_config() == donor.get_config()
    # an encoded corpus carries its own tokenizer: refused, nothing written
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    splits = DemoCorpus(seed=0).split(200, 12, 10, seed=1)
    for name, pairs in zip(("train", "dev", "test"), splits, strict=True):
        (corpus / f"{name}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    encode = ["encode", "--data", str(corpus), "--out", str(tmp_path / "ids")]
    assert main([*encode, "--vocab-size", "120"]) == 0
    start[3] = str(tmp_path / "ids")
    assert main([*start, "--out", str(tmp_path / "encoded")]) == 2
    assert "reads text with theirs" in capsys.readouterr().err
    assert not (tmp_path / "encoded").exists(), "nothing written"
    start[3] = "demo"
    loose = tmp_path / "loose.weights.h5"  # no run beside it: loaded, with a warning
    shutil.copy(checkpoint, loose)
    start[-1] = f"training.init_from={loose}"
    assert main([*start, "--out", str(tmp_path / "loose")]) == 0
