"""Presets: save/load, verified downloads from a server on 127.0.0.1, resume, and unsafe archives."""

import hashlib
import http.server
import io
import json
import os
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_s2s import tasks, zoo
from keras_s2s.config import CardError
from keras_s2s.presets import (
    PACKAGE_PRESETS,
    PresetError,
    download,
    extract,
    fetch_preset,
    load_preset,
    read_metadata,
    save_to_preset,
)
from keras_s2s.text.tokenizer import load_run_tokenizer


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with HTTP Range support; counts requests; can cut a response short."""

    requests = []
    cut_after = None  # bytes sent before dropping the connection (once)

    def log_message(self, *args):
        pass

    def do_GET(self):
        RangeHandler.requests.append((self.path, self.headers.get("Range")))
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = (
            int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
        )
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        body = data[start:]
        if RangeHandler.cut_after is not None:
            body, RangeHandler.cut_after = body[: RangeHandler.cut_after], None
        self.wfile.write(body)


@pytest.fixture()
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = lambda *a, **k: RangeHandler(*a, directory=str(root), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    RangeHandler.requests = []
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_S2S_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KERAS_S2S_OFFLINE", raising=False)
    return tmp_path / "home"


@pytest.fixture(scope="module")
def preset(tmp_path_factory, demo_data):
    # untrained: its logits are close, so a fixed seed keeps the float16 round trip's argmax the same
    # whichever tests ran before in this process
    keras.utils.set_random_seed(1)
    model = zoo.load(
        "gnmt", tokenizer=demo_data.tokenizer, num_layers=2, units=16, precision="float32"
    )
    folder = save_to_preset(
        model, tmp_path_factory.mktemp("p") / "gnmt_tiny", metadata={"bleu": 1.5}
    )
    return model, folder


def pack(folder: Path, archive: Path) -> str:
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return hashlib.sha256(archive.read_bytes()).hexdigest()


def test_save_and_load_a_preset_directory(preset, demo_data):
    model, folder = preset
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "metadata.json",
        "model.weights.h5",
    ]
    metadata = read_metadata(folder)
    assert (
        metadata["bleu"] == 1.5
        and metadata["architecture"] == "GNMT"
        and "keras_s2s_version" in metadata
    )
    restored = load_preset(str(folder))
    sentences = demo_data.test_sources[:3]
    assert restored.translate(sentences) == model.translate(sentences)
    with pytest.raises(PresetError, match="already exists"):
        save_to_preset(model, folder)


def test_a_preset_stored_in_float16_is_half_the_size_and_loads_as_float32(
    preset, demo_data, tmp_path
):
    import h5py

    model, folder = preset
    half = save_to_preset(model, tmp_path / "half", weights_dtype="float16")
    assert read_metadata(half)["weights_dtype"] == "float16"
    with h5py.File(half / "model.weights.h5") as stored:
        kinds = set()
        stored.visititems(
            lambda name, item: kinds.add(str(item.dtype)) if hasattr(item, "dtype") else None
        )
    assert "float16" in kinds and "float32" not in kinds
    assert (half / "model.weights.h5").stat().st_size < 0.6 * (
        folder / "model.weights.h5"
    ).stat().st_size
    restored = load_preset(str(half))
    for mine, theirs in zip(model.weights, restored.weights):
        assert theirs.dtype == "float32"
        np.testing.assert_allclose(theirs.numpy(), mine.numpy(), rtol=1e-3, atol=1e-4)
    sentences = demo_data.test_sources[:3]
    assert restored.translate(sentences) == model.translate(sentences)


def test_zoo_load_from_a_url_verifies_the_checksum_and_translates(preset, server, home, demo_data):
    model, folder = preset
    root, url = server
    sha = pack(folder, root / "gnmt_tiny.tar.gz")
    registered = home.parent / "gnmt_with_preset.yaml"
    registered.write_text(
        f"base: gnmt\npresets:\n  tiny:\n    url: {url}/gnmt_tiny.tar.gz\n    sha256: {sha}\n"
        "    size: 1\n    description: a test preset\n"
    )
    loaded = zoo.load(str(registered), weights="tiny", precision="float32")
    sentences = demo_data.test_sources[:3]
    assert loaded.translate(sentences) == model.translate(sentences)
    assert loaded.optimizer is not None, "compiled with the card's training settings"
    assert len(RangeHandler.requests) == 1
    zoo.load(str(registered), weights="tiny", precision="float32")
    assert len(RangeHandler.requests) == 1, "the second load comes from the cache"
    os.environ["KERAS_S2S_OFFLINE"] = "1"
    try:
        zoo.load(str(registered), weights="tiny", precision="float32")  # cached: fine offline
        with pytest.raises(PresetError, match="KERAS_S2S_OFFLINE is set"):
            download(f"{url}/other.tar.gz")
    finally:
        del os.environ["KERAS_S2S_OFFLINE"]
    assert len(RangeHandler.requests) == 1


def test_a_tampered_download_is_rejected_and_removed(preset, server, home):
    _, folder = preset
    root, url = server
    sha = pack(folder, root / "p.tar.gz")
    data = bytearray((root / "p.tar.gz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (root / "p.tar.gz").write_bytes(bytes(data))
    with pytest.raises(PresetError, match="sha256 mismatch .* the download was removed"):
        fetch_preset(f"{url}/p.tar.gz", sha)
    assert not list((home / "presets" / "downloads").iterdir()), "nothing is left in the cache"
    with pytest.raises(PresetError, match="HTTP 404"):
        download(f"{url}/missing.tar.gz")


@pytest.mark.parametrize("sha256", ["", None, 1234, "1234", "g" * 64, "0" * 63])
def test_a_sha256_that_is_not_one_is_refused_never_skipped(sha256, tmp_path):
    """'' / null / a YAML number used to skip verification silently."""
    card = tmp_path / "card.yaml"
    card.write_text(
        "base: gnmt_demo\npresets:\n  mine:\n    url: https://example.org/m.tar.gz\n"
        f"    sha256: {json.dumps(sha256)}\n"
    )
    with pytest.raises(CardError, match=r"card.yaml, line 5: preset 'mine': sha256 must be 64 hex"):
        zoo.get_card(str(card))
    if sha256 is not None:
        with pytest.raises(PresetError, match="sha256 must be 64 hexadecimal characters"):
            download("https://example.org/m.tar.gz", sha256)


def test_a_preset_without_sha256_downloads_with_a_visible_warning(preset, server, home, caplog):
    _, folder = preset
    root, url = server
    pack(folder, root / "p.tar.gz")
    card = zoo.get_card("gnmt_demo", **{"presets.mine.url": f"{url}/p.tar.gz"})
    assert card.presets["mine"] == {"url": f"{url}/p.tar.gz"}
    with caplog.at_level("WARNING", logger="keras_s2s"):
        fetch_preset(f"{url}/p.tar.gz")
    assert f"{url}/p.tar.gz: no sha256 given: the download is not verified" in caplog.text


@pytest.mark.parametrize(
    "damage",
    [lambda c: c["config"].update(units="sixteen"), lambda c: c.pop("config"),
     lambda c: c.update(class_name="NoSuchModel", registered_name="keras_s2s>NoSuchModel"),
     lambda c: c.clear() or c.update(x=[1])],
)  # fmt: skip
def test_a_malformed_preset_config_is_named_and_its_download_removed(
    damage, preset, server, home, tmp_path
):
    _, folder = preset
    root, url = server
    broken = tmp_path / "gnmt_tiny"
    shutil.copytree(folder, broken)
    config = json.loads((broken / "config.json").read_text())
    damage(config)
    (broken / "config.json").write_text(json.dumps(config))
    sha = pack(broken, root / "bad.tar.gz")
    with pytest.raises(PresetError, match=r"config.json: not a loadable model config .* removed"):
        load_preset(f"{url}/bad.tar.gz", sha)
    assert not list((home / "presets" / "downloads").iterdir()), "the bad download is gone"


def test_an_interrupted_download_resumes_where_it_stopped(preset, server, home):
    _, folder = preset
    root, url = server
    sha = pack(folder, root / "p.tar.gz")
    size = (root / "p.tar.gz").stat().st_size
    RangeHandler.cut_after = size // 3
    path = download(f"{url}/p.tar.gz", sha, retries=3)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    assert (
        RangeHandler.requests[0][1] is None and RangeHandler.requests[1][1] == f"bytes={size // 3}-"
    )


def test_the_cache_tells_two_urls_with_one_file_name_apart(preset, server, home, demo_data):
    model, folder = preset
    root, url = server
    other = save_to_preset(
        zoo.load("gnmt", tokenizer=demo_data.tokenizer, num_layers=2, units=8, precision="float32"),
        home.parent / "gnmt_other",
    )
    for sub, source in (("a", folder), ("b", other)):
        (root / sub).mkdir()
        pack(source, root / sub / "model.tar.gz")
    first, second = (load_preset(f"{url}/{sub}/model.tar.gz") for sub in "ab")
    assert (
        first.count_params() == model.count_params()
        and second.count_params() != model.count_params()
    )


def test_a_truncated_download_is_removed_from_the_cache_so_a_rerun_recovers(preset, server, home):
    _, folder = preset
    root, url = server
    pack(folder, root / "p.tar.gz")
    whole = (root / "p.tar.gz").read_bytes()
    # served whole, but the file itself is cut
    (root / "p.tar.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(
        PresetError, match="damaged or truncated.* the cached download .* was removed, so the next"
    ):
        fetch_preset(f"{url}/p.tar.gz")
    assert not list((home / "presets" / "downloads").iterdir())
    (root / "p.tar.gz").write_bytes(whole)
    assert load_preset(f"{url}/p.tar.gz").count_params() == preset[0].count_params()
    bad = root.parent / "bad" / folder.name  # an archive whose weights do not load
    shutil.copytree(folder, bad)
    (bad / "model.weights.h5").write_bytes(b"not hdf5")
    pack(bad, root / "bad.tar.gz")
    with pytest.raises(
        PresetError, match="weights do not load.* the cached download .* was removed"
    ):
        load_preset(f"{url}/bad.tar.gz")
    assert len(list((home / "presets" / "downloads").iterdir())) == 1, "only the good one stays"


def test_an_unknown_preset_name_lists_the_cards_presets():
    with pytest.raises(
        PresetError, match="demo: not a preset of transformer \\(its presets: none\\)"
    ):
        zoo.load("transformer", weights="demo")
    with pytest.raises(PresetError, match="its presets: demo"):
        zoo.load("convs2s", weights="dem")
    with pytest.raises(
        PresetError,
        match=r"models with presets: .*convs2s \(demo\).*gnmt \(demo\).*jasper \(demo\)",
    ):
        zoo.load("transformer", weights="demo")


def test_truncated_and_malicious_archives_are_refused(tmp_path, home):
    good = tmp_path / "good.tar.gz"
    with tarfile.open(good, "w:gz") as tar:
        info = tarfile.TarInfo("p/config.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    with pytest.raises(PresetError, match="damaged or truncated|not a readable"):
        extract(truncated, tmp_path / "out1")

    def tar_with(member: tarfile.TarInfo, payload: bytes = b""):
        path = tmp_path / f"bad-{member.name.replace('/', '_')}.tar"
        with tarfile.open(path, "w") as tar:
            tar.addfile(member, io.BytesIO(payload) if payload else None)
        return path

    traversal = tarfile.TarInfo("../../evil.txt")
    traversal.size = 4
    with pytest.raises(PresetError, match="its path leaves the extraction folder"):
        extract(tar_with(traversal, b"evil"), tmp_path / "out2")
    absolute = tarfile.TarInfo("/etc/evil")
    absolute.size = 4
    with pytest.raises(PresetError, match="leaves the extraction folder"):
        extract(tar_with(absolute, b"evil"), tmp_path / "out3")
    link = tarfile.TarInfo("p/link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(PresetError, match="no links or devices"):
        extract(tar_with(link), tmp_path / "out4")
    huge = tarfile.TarInfo("p/huge.bin")
    huge.size = 5 * 2**30
    path = tmp_path / "huge.tar"
    with open(path, "wb") as handle:  # a header that claims 5 GiB, without the data
        handle.write(huge.tobuf())
    with pytest.raises(PresetError, match="over the .* limit"):
        extract(path, tmp_path / "out5")
    zipped = tmp_path / "evil.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("../evil.txt", "x")
    with pytest.raises(PresetError, match="leaves the extraction folder"):
        extract(zipped, tmp_path / "out6")
    assert not (tmp_path.parent / "evil.txt").exists() and not list(tmp_path.glob(".tmp-*"))


def test_an_archive_that_unpacks_far_beyond_its_size_is_refused_before_writing(tmp_path):
    """0.6 MB of gzip unpacked to 300 MiB: each member under the per-file limit, no total cap."""
    bomb = tmp_path / "bomb.tar.gz"
    zeros = bytes(2**20)
    with tarfile.open(bomb, "w:gz") as tar:
        for index in range(300):  # 300 x 1 MiB of zeros: ~0.3 MB compressed
            info = tarfile.TarInfo(f"p/part-{index:03d}.bin")
            info.size = len(zeros)
            tar.addfile(info, io.BytesIO(zeros))
    assert bomb.stat().st_size < 2**20
    with pytest.raises(
        PresetError, match=r"refusing to unpack 101 MiB from 0.\d MiB: over the 100 MiB"
    ):
        extract(bomb, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".tmp-*"))


def test_a_damaged_unpacked_preset_is_unpacked_again_from_its_verified_archive(
    preset, server, home, caplog
):
    """A preset's unpacked copy damaged after it was unpacked failed on every later load."""
    _, folder = preset
    root, url = server
    sha = pack(folder, root / "p.tar.gz")
    first = fetch_preset(f"{url}/p.tar.gz", sha)
    weights = first / "model.weights.h5"
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])  # truncated: a size the mark does not know
    with caplog.at_level("WARNING", logger="keras_s2s"):
        load_preset(f"{url}/p.tar.gz", sha)
    assert "damaged since it was unpacked (gnmt_tiny/model.weights.h5)" in caplog.text
    assert weights.read_bytes() == good
    flipped = bytearray(good)  # same size, other bytes: weights that would load, wrong
    flipped[len(good) // 3 : len(good) // 3 + 4096] = bytes(4096)
    weights.write_bytes(bytes(flipped))
    (first / "metadata.json").unlink()
    caplog.clear()
    with caplog.at_level("WARNING", logger="keras_s2s"):
        load_preset(f"{url}/p.tar.gz", sha)
    assert "damaged since it was unpacked" in caplog.text and weights.read_bytes() == good
    assert (first / "metadata.json").is_file()
    requests = [path for path, _ in RangeHandler.requests]
    assert requests == ["/p.tar.gz"], "downloaded once: the cached archive is unpacked again"


def test_bad_sources_are_named():
    with pytest.raises(PresetError, match="no such preset directory"):
        fetch_preset("/nonexistent/preset")
    with pytest.raises(PresetError, match="unsupported URL scheme 'ftp'"):
        download("ftp://example.org/x.tar.gz")
    with pytest.raises(Exception, match="preset 'x' needs url"):
        zoo.get_card("gnmt", **{"presets.x.sha256": "0" * 64})


def test_zoo_load_still_takes_a_weights_file(tmp_path, demo_data):
    args = dict(tokenizer=demo_data.tokenizer, num_layers=2, units=16, precision="float32")
    model = zoo.load("gnmt", **args)
    model.save_weights(tmp_path / "w.weights.h5")
    restored = zoo.load("gnmt", weights=str(tmp_path / "w.weights.h5"), **args)
    inputs, _ = next(iter(demo_data.train))
    np.testing.assert_allclose(restored(inputs), model(inputs), atol=1e-6)


def test_the_shipped_demo_preset_loads_offline_verified_and_translates(home, monkeypatch):
    from keras_s2s.data.parallel import read_splits
    from keras_s2s.metrics import score

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    model = zoo.load("convs2s_demo", weights="demo", precision="float32")
    _, _, test, _ = read_splits("demo", num_train=80000, num_valid=300, num_test=500, seed=0)
    test = test[:100]
    bleu = score(model.translate([s for s, _ in test]), [t for _, t in test])["bleu"]
    assert bleu > 60, f"the demo preset scored BLEU {bleu} (77.0 on all 500 when it was trained)"
    assert model.optimizer is not None and zoo.get_card("convs2s").presets["demo"]["size"] > 0


def test_the_shipped_gnmt_demo_preset_loads_offline_from_both_cards_and_translates(
    home, monkeypatch
):
    from keras_s2s.data.parallel import read_splits
    from keras_s2s.metrics import score

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    _, _, test, _ = read_splits("demo", num_train=80000, num_valid=300, num_test=500, seed=0)
    test = test[:100]
    for card in ("gnmt_demo", "gnmt"):  # the headline call, and the demo card's
        model = zoo.load(card, weights="demo", precision="float32")
        bleu = score(model.translate([s for s, _ in test]), [t for _, t in test])["bleu"]
        assert bleu > 50, f"the {card} demo preset scored BLEU {bleu} on 100 held-out sentences"
    assert zoo.get_card("gnmt").presets["demo"] == zoo.get_card("gnmt_demo").presets["demo"]


SOFTWARE_MESSAGES = [  # English -> German as a translator of a gettext catalog would write them
    ("Open File", "Datei öffnen"),
    ("Save the document", "Das Dokument speichern"),
    ("Could not open file %s", "Datei %s konnte nicht geöffnet werden"),
    ("Quit", "Beenden"),
    ("Show version information and exit", "Versionsinformationen anzeigen und beenden"),
    ("Permission denied", "Zugriff verweigert"),
    ("Unknown option: %s", "Unbekannte Option: %s"),
    ("Print this help message", "Diese Hilfemeldung ausgeben"),
    ("Cancel", "Abbrechen"),
    ("The file already exists. Do you want to replace it?",
     "Die Datei existiert bereits. Möchten Sie sie ersetzen?"),
]  # fmt: skip


def test_the_shipped_english_german_preset_translates_messages_and_fills_a_catalog_offline(
    home, monkeypatch, tmp_path, capsys
):
    import polib

    from keras_s2s.cli import main
    from keras_s2s.metrics import score

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    model = zoo.load("convs2s_gettext", weights="en-de")
    assert model.default_decoding == {"beam_width": 4, "length_penalty": 1.0}, "the preset's beam"
    translation = tasks.get("translation")  # what the commands decode with: flags over the preset's
    assert translation.decoding(model)["beam_width"] == 4
    assert translation.decoding(model, beam_width=1)["beam_width"] == 1
    hypotheses = model.translate([english for english, _ in SOFTWARE_MESSAGES])
    chrf = score(hypotheses, [german for _, german in SOFTWARE_MESSAGES])["chrf"]
    assert chrf > 70, f"the en-de preset's chrF on 10 common messages is {chrf} (94.6 when shipped)"
    assert hypotheses[2].count("%s") == 1 and hypotheses[6].count("%s") == 1
    catalog = tmp_path / "de.po"
    catalog.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        '#, c-format\nmsgid "Could not open file %s"\nmsgstr ""\n\n'
        'msgid "Open _File"\nmsgstr ""\n\nmsgid "Quit"\nmsgstr "Beenden"\n'
    )
    assert main(["translate", "--model", "convs2s_gettext:en-de", "--po", str(catalog)]) == 0
    assert "2 message(s) filled and marked fuzzy" in capsys.readouterr().err
    filled = polib.pofile(str(catalog))
    assert filled[0].fuzzy and filled[0].msgstr.count("%s") == 1 and "Datei" in filled[0].msgstr
    assert filled[1].msgstr.count("_") == 1 and filled[2].msgstr == "Beenden"
    archive = PACKAGE_PRESETS / "convs2s_gettext-en-de.tar.gz"
    assert zoo.get_card("convs2s_gettext").presets["en-de"]["size"] == archive.stat().st_size

    # training it further on one's own corpus: the run reads it with the preset's tokenizer
    corpus = tmp_path / "mine"
    corpus.mkdir()
    for split in ("train", "dev", "test"):
        (corpus / f"{split}.tsv").write_text("".join(f"{e}\t{g}\n" for e, g in SOFTWARE_MESSAGES))
    run = tmp_path / "run"
    further = ["train", "convs2s_gettext", "--data", str(corpus), "--steps", "1", "--out", str(run)]
    further += ["--set", "training.init_from=en-de", "--set", "batch_size=5"]
    assert main(further) == 0
    assert "starting from the weights of en-de" in capsys.readouterr().out
    stored = load_run_tokenizer(run, "sentencepiece", True)
    assert stored.get_config() == model.tokenizer.get_config(), "not one learned on 10 messages"


def test_the_shipped_speech_demo_preset_loads_offline_and_transcribes_new_speech(
    home, monkeypatch, tmp_path
):
    from keras_s2s.audio.manifest import read_manifest
    from keras_s2s.corpora.speech_demo import DemoSpeech
    from keras_s2s.metrics import error_rates

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    model = zoo.load("jasper_demo", weights="demo", precision="float32")
    folder = DemoSpeech(num_train=0, num_valid=0, num_test=24, seed=4321).prepare(root=tmp_path)
    utterances = read_manifest(folder / "test.csv")
    hypotheses = model.transcribe([u.path for u in utterances])
    wer = error_rates(hypotheses, [u.transcript for u in utterances])["wer"]
    assert wer < 10, (
        f"the speech demo preset's WER on 24 new utterances is {wer}% (0.45% when trained)"
    )
    assert (
        zoo.get_card("jasper").presets["demo"]["sha256"]
        == zoo.get_card("jasper_demo").presets["demo"]["sha256"]
    )


def test_a_recognizer_preset_with_a_word_lm_transcribes_from_the_command_line(
    home, monkeypatch, tmp_path, capsys
):
    import shutil

    from keras_s2s.audio.io import resample, write_wav
    from keras_s2s.cli import main
    from keras_s2s.corpora.espeak import synthesize
    from keras_s2s.decoding.ngram_lm import KneserNeyLM

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    folder = tmp_path / "with_lm"
    shutil.copytree(zoo.preset_directory("jasper_demo", "demo"), folder)
    text = "the red dog sees a cat"
    KneserNeyLM.estimate([text, "the old cat sees a dog"], order=2).write_arpa(
        folder / "lm.arpa.gz"
    )
    write_wav(tmp_path / "dog.wav", resample(*synthesize(text, voice="en-us"), 16000), 16000)
    metadata = json.loads((folder / "metadata.json").read_text())
    (folder / "metadata.json").write_text(
        json.dumps({**metadata, "lm": {"alpha": 0.9, "beta": 2.0}})
    )
    from keras_s2s.decoding import ctc_lm

    used = []
    real = ctc_lm.lm_decoder
    monkeypatch.setattr(ctc_lm, "lm_decoder", lambda *a, **k: used.append(a[1:4]) or real(*a, **k))
    capsys.readouterr()
    args = ["transcribe", "--model", f"jasper_demo:{folder}", str(tmp_path / "dog.wav")]
    assert main([*args, "--lm", "preset"]) == 0
    assert capsys.readouterr().out.strip() == text
    assert used[-1] == (str(folder / "lm.arpa.gz"), 0.9, 2.0), "the preset's tuned weight and bonus"
    assert main([*args, "--lm", "preset", "--alpha", "0.3"]) == 0 and used[-1][1:] == (0.3, 2.0)
    capsys.readouterr()
    assert main(args) == 0, "no flags: the preset's own LM search, tuned"
    assert capsys.readouterr().out.strip() == text
    model = zoo.load("jasper_demo", weights=str(folder))
    assert model.default_decoding["lm_path"] == str(folder / "lm.arpa.gz")
    assert (model.default_decoding["alpha"], model.default_decoding["beta"]) == (0.9, 2.0)
    clip = str(tmp_path / "dog.wav")
    assert model.transcribe([clip]) == model.transcribe([clip], lm=model.default_decoder())
    assert model.default_decoder() is model.default_decoder(), "built once"
    for lighter in (["--no-lm", "--beam-width", "4"], ["--beam-width", "4", "--no-lexicon"]):
        assert main([*args, *lighter]) == 0, lighter
        assert capsys.readouterr().out.strip() == text
    assert main([*args, "--no-lm", "--lm", "preset"]) == 2
    assert "--no-lm and --lm ask for opposite things" in capsys.readouterr().err
    (folder / "lm.arpa.gz").rename(folder / "gone.arpa.gz")  # the metadata names an LM it lacks
    assert main(args) == 2
    assert "names a word LM lm.arpa.gz that it lacks" in capsys.readouterr().err
    assert (
        main(
            [
                "transcribe",
                "--model",
                "jasper_demo:demo",
                "--lm",
                "preset",
                str(tmp_path / "dog.wav"),
            ]
        )
        == 2
    )
    assert "the preset ships no word LM" in capsys.readouterr().err
    assert main(["transcribe", "--model", "jasper_demo:nothing", str(tmp_path / "dog.wav")]) == 2
    assert "nothing: not a preset of jasper_demo (its presets: demo)" in capsys.readouterr().err


def test_a_zoo_preset_is_evaluated_on_a_corpus_with_its_word_lm(
    home, monkeypatch, tmp_path, capsys
):
    import shutil

    from keras_s2s.audio.manifest import read_manifest
    from keras_s2s.cli import main
    from keras_s2s.corpora.speech_demo import DemoSpeech
    from keras_s2s.decoding.ngram_lm import KneserNeyLM

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    corpus = DemoSpeech(num_train=0, num_valid=0, num_test=12, seed=99).prepare(root=tmp_path)
    transcripts = [u.transcript for u in read_manifest(corpus / "test.csv")]
    folder = tmp_path / "with_lm"
    shutil.copytree(zoo.preset_directory("jasper_demo", "demo"), folder)
    KneserNeyLM.estimate(transcripts, order=2).write_arpa(folder / "lm.arpa.gz")
    metadata = json.loads((folder / "metadata.json").read_text())
    (folder / "metadata.json").write_text(
        json.dumps({**metadata, "lm": {"alpha": 0.4, "beta": 1.5}})
    )
    args = ["evaluate", "--model", f"jasper_demo:{folder}", "--data", str(corpus)]
    assert (
        main([*args, "--lm", "preset", "--beam-width", "8", "--out", str(tmp_path / "eval")]) == 0
    )
    scores = json.loads((tmp_path / "eval" / "eval-beam8.json").read_text())
    assert scores["lm"] == str(folder / "lm.arpa.gz") and (scores["alpha"], scores["beta"]) == (
        0.4,
        1.5,
    )
    assert scores["utterances"] == 12 and scores["wer"] < 10
    assert len((tmp_path / "eval" / "transcripts-beam8.txt").read_text().splitlines()) == 12
    capsys.readouterr()
    before = sorted(p.name for p in folder.iterdir())
    assert main(args) == 0, "greedy, printed only: nothing is written into the preset"
    assert "held-out WER" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == before
    assert main(["evaluate", "--model", "jasper_demo:nothing", "--data", str(corpus)]) == 2
    assert "nothing: not a preset of jasper_demo" in capsys.readouterr().err
    assert main([*args, "--out", str(folder / "metadata.json")]) == 2
    assert "metadata.json: is a file; --out names a folder" in capsys.readouterr().err


def test_the_shipped_english_preset_loads_offline_with_its_lm_and_transcribes_new_speech(
    home, monkeypatch
):
    import random

    from keras_s2s.audio.io import resample
    from keras_s2s.corpora.espeak import synthesize
    from keras_s2s.corpora.speech_demo import DemoSpeech
    from keras_s2s.decoding.ctc_lm import LMDecoder
    from keras_s2s.metrics import error_rates

    monkeypatch.setenv("KERAS_S2S_OFFLINE", "1")
    model = zoo.load("jasper_english", weights="english")
    folder = zoo.preset_directory("jasper_english", "english")
    tuned = json.loads((folder / "metadata.json").read_text())["lm"]
    demo, rng = DemoSpeech(), random.Random(7)  # sentences it never trained on, random voices
    texts, audio = [], []
    for _ in range(16):
        texts.append(demo.sentence(rng))
        audio.append(resample(*synthesize(texts[-1], **demo.utterance_settings(rng)), 16000))
    cer = error_rates(model.transcribe(audio), texts)["cer"]
    assert cer < 40, (
        f"the English preset's CER on 16 new sentences is {cer}% (the first stage: 26%)"
    )
    lm = LMDecoder(
        model.vocabulary, folder / tuned["file"], alpha=tuned["alpha"], beta=tuned["beta"]
    )
    assert len(model.transcribe(audio[:2], lm=lm)) == 2
