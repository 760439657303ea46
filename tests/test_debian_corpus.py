"""examples/debian_gettext_corpus.py: .mo catalogs read, cleaned, deduplicated and split by message."""

import importlib.util
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "debian_gettext_corpus.py"
spec = importlib.util.spec_from_file_location("debian_gettext_corpus", SCRIPT)
corpus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(corpus)


def mo_bytes(entries: dict[bytes, bytes], charset="UTF-8") -> bytes:
    """A little-endian .mo catalog (the GNU format: header, two string tables, the strings)."""
    entries = {b"": f"Content-Type: text/plain; charset={charset}\n".encode(), **entries}
    keys = sorted(entries)
    count = len(keys)
    originals, translations = 28, 28 + 8 * count
    offset = 28 + 16 * count
    tables, blob = [b"", b""], b""
    for side in (0, 1):
        for key in keys:
            text = key if side == 0 else entries[key]
            tables[side] += struct.pack("<2I", len(text), offset + len(blob))
            blob += text + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, count, originals, translations, 0, 0)
    return header + tables[0] + tables[1] + blob


def test_catalog_entries_with_contexts_plurals_and_other_charsets_are_read():
    data = mo_bytes(
        {
            "Open File".encode(): "Datei öffnen".encode(),
            b"menu\x04Save": b"Speichern",
            b"%d file\x00%d files": b"%d Datei\x00%d Dateien",
        }
    )
    assert sorted(corpus.read_mo(data)) == [
        ("%d file", "%d Datei"),
        ("Open File", "Datei öffnen"),
        ("Save", "Speichern"),
    ]
    latin = mo_bytes({b"Close": "Schließen".encode("latin-1")}, charset="ISO-8859-1")
    assert corpus.read_mo(latin) == [("Close", "Schließen")]
    with pytest.raises(corpus.MoError, match="x.mo: not a .mo file"):
        corpus.read_mo(b"x" * 40, "x.mo")
    with pytest.raises(corpus.MoError, match="too short"):
        corpus.read_mo(b"\xde\x12\x04\x95", "y.mo")
    with pytest.raises(corpus.MoError, match="points past the end"):
        corpus.read_mo(data[:-20], "cut.mo")


def test_pairs_are_cleaned_and_only_translations_are_kept():
    assert corpus.clean("<b>Open &amp;Recent</b>\n") == "Open Recent"
    assert corpus.clean("&Open File") == "Open File" and corpus.clean("_Save As…") == "Save As…"
    assert corpus.clean("Rock && Roll") == "Rock && Roll"  # no single accelerator to remove
    assert corpus.clean("file_name_here") == "file_name_here"
    assert corpus.clean("_: KDE context\nReal text") == "Real text"
    assert corpus.usable("Open File", "Datei öffnen")
    for source, target in [
        ("%s: %d", "%s: %d"),
        ("%1 (%2)", "%1 (%2)"),
        ("OK", "OK"),
        ("Your names", "Max Mustermann"),
        ("{name}", "{name}x"),
        ("Yes", "Dies ist eine viel zu lange Übersetzung für ein Wort"),
        ("word " * 90, "Wort " * 90),
    ]:
        assert not corpus.usable(source, target), (source, target)


def test_one_target_per_message_and_variants_share_a_split():
    pairs = [("Open", "Öffnen"), ("Open", "Aufmachen"), ("Open", "Öffnen"), ("Save", "Speichern")]
    assert corpus.best_targets(pairs) == {"Open": "Öffnen", "Save": "Speichern"}
    unique = {f"Message {i}": f"Nachricht {i}" for i in range(200)}
    # variants in case and punctuation
    unique.update({f"message {i}:": f"Nachricht {i}:" for i in range(200)})
    train, dev, test = corpus.split_pairs(unique, num_dev=20, num_test=30, seed=1)
    assert len(train) + len(dev) + len(test) == 400 and len(test) >= 30 and len(dev) >= 20
    side = {
        corpus.split_key(s): name
        for name, split in (("train", train), ("dev", dev), ("test", test))
        for s, _ in split
    }
    for name, split in (("train", train), ("dev", dev), ("test", test)):
        assert all(side[corpus.split_key(s)] == name for s, _ in split)
    assert corpus.split_pairs(unique, 20, 30, seed=1) == (train, dev, test), (
        "the same seed, the same splits"
    )


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (Debian tools)")
def test_a_package_is_read_into_pairs_and_split_files(tmp_path):
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: demo-l10n\nVersion: 1.0-1\nArchitecture: all\n"
        "Maintainer: t <t@example.org>\nDescription: test\n"
    )
    messages = root / "usr" / "share" / "locale" / "de" / "LC_MESSAGES"
    messages.mkdir(parents=True)
    (messages / "demo.mo").write_bytes(
        mo_bytes({f"Item number {i}".encode(): f"Eintrag Nummer {i}".encode() for i in range(30)})
    )
    (messages / "broken.mo").write_bytes(b"not a catalog at all, but long enough")
    cache = tmp_path / "debs"
    cache.mkdir()
    subprocess.run(
        [
            "dpkg-deb",
            "--build",
            "--root-owner-group",
            str(root),
            str(cache / "demo-l10n_1.0-1_all.deb"),
        ],
        check=True,
        capture_output=True,
    )
    # LibreOffice: never used
    (tmp_path / "packages.txt").write_text("demo-l10n\nlibreoffice-l10n-de\n")
    out = tmp_path / "corpus"
    corpus.main(
        [
            str(out),
            "--cache",
            str(cache),
            "--packages",
            str(tmp_path / "packages.txt"),
            "--dev",
            "5",
            "--test",
            "5",
        ]
    )
    sizes = {
        name: len((out / f"{name}.tsv").read_text().splitlines())
        for name in ("train", "dev", "test")
    }
    assert sizes == {"train": 20, "dev": 5, "test": 5}
    assert (out / "packages.tsv").read_text() == "demo-l10n\t1.0-1\t30\n"
    assert "Item number" in (out / "train.tsv").read_text()
