"""Build an English->German corpus from the gettext catalogs of Debian packages.

    apt-get install apt-file && apt-file update      # once: which packages ship de .mo files
    python examples/debian_gettext_corpus.py corpus/ --cache debs/
    keras-s2s train convs2s_demo --data corpus/ --time-limit 25m

Every message a package's translators wrote (`/usr/share/locale/de/LC_MESSAGES/
*.mo`) becomes a pair: the English `msgid` and the German `msgstr`. The script
downloads the packages with `apt-get download` (into `--cache`, reused by a
rerun), reads the catalogs straight from the `.deb` files, cleans the pairs
(keyboard accelerators, markup, line breaks), drops what carries no language
(placeholders only, identical sides, translator credits), keeps one German text
per English text, and splits by the English text, so that a message and its
variants in case and punctuation land in one split. Output: `train.tsv`,
`dev.tsv`, `test.tsv`, `packages.tsv` (package, version, pairs) and
`manifest.json` (counts, sha256 of each split).

Debian package descriptions (DDTP) and LibreOffice are not used: they are kept
for independent evaluation.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import html
import io
import json
import re
import struct
import subprocess
import sys
import tarfile
from pathlib import Path

EXCLUDED_PACKAGES = re.compile(r"libreoffice|openoffice", re.IGNORECASE)
MAX_WORDS = 80
TRANSLATOR_CREDITS = re.compile(
    r"^(your names?|your e-?mails?|translator[- _]credits|name of translators|"
    r"email of translators)$",
    re.IGNORECASE,
)
PLACEHOLDER = re.compile(
    r"%(\([^)]*\))?[-+ #0-9.*]*(l{0,2}|h{0,2}|[jzLqtI])[diouxXeEfFgGcsSpn%@]|%\d+|"
    r"\{[^{}\s]*\}|\$\{?[A-Za-z_]+\}?|<[^<>]+>"
)
TAG = re.compile(r"</?[A-Za-z][^<>]*>")
ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);")


class MoError(ValueError):
    """A catalog that is not a readable .mo file."""


def read_mo(data: bytes, where: str = "catalog") -> list[tuple[str, str]]:
    """The (msgid, msgstr) pairs of a compiled gettext catalog.

    Contexts are dropped, plural entries give their singular forms, the
    header (empty msgid) is skipped.

    Example:
        >>> read_mo(Path("de.mo").read_bytes())
        [('Open File', 'Datei öffnen'), ...]
    """
    if len(data) < 28:
        raise MoError(f"{where}: too short for a .mo file ({len(data)} bytes)")
    magic = data[:4]
    order = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}.get(magic)
    if order is None:
        raise MoError(f"{where}: not a .mo file (magic {magic.hex()})")
    _, count, originals, translations = struct.unpack(order + "4I", data[4:20])

    def strings(table: int) -> list[bytes]:
        out = []
        for index in range(count):
            length, offset = struct.unpack(
                order + "2I", data[table + 8 * index : table + 8 * index + 8]
            )
            if offset + length > len(data):
                raise MoError(f"{where}: entry {index} points past the end of the file")
            out.append(data[offset : offset + length])
        return out

    try:
        pairs = list(zip(strings(originals), strings(translations)))
    except struct.error as error:
        raise MoError(f"{where}: truncated string table ({error})") from None
    charset = "utf-8"
    for msgid, msgstr in pairs:
        if msgid == b"":
            found = re.search(rb"charset=([-\w]+)", msgstr)
            charset = found.group(1).decode("ascii") if found else charset
    result = []
    for msgid, msgstr in pairs:
        if not msgid:
            continue
        msgid = msgid.split(b"\x04", 1)[-1].split(b"\x00")[0]
        msgstr = msgstr.split(b"\x00")[0]
        try:
            result.append((msgid.decode("utf-8"), msgstr.decode(charset)))
        except (UnicodeDecodeError, LookupError):
            continue  # a catalog mislabelled with its charset: skip the entry
    return result


def _strip_accelerator(text: str, marker: str) -> str:
    """'&Open' / '_Open' -> 'Open' where the marker appears once before a letter."""
    if marker == "&":
        hits = [m for m in re.finditer(r"&(?=\w)", text) if not ENTITY.match(text, m.start())]
    else:
        hits = list(re.finditer(r"_(?=\w)", text))
        if text.count("_") != 1:
            return text
    if len(hits) != 1:
        return text
    return text[: hits[0].start()] + text[hits[0].start() + 1 :]


def clean(text: str) -> str:
    """One line of plain text: old KDE contexts, markup, accelerators and spacing removed.

    Example:
        >>> clean("<b>Open &amp;Recent</b>\\n")
        'Open Recent'
    """
    if text.startswith("_:") and "\n" in text:  # KDE3 context comment
        text = text.split("\n", 1)[1]
    text = TAG.sub(" ", text)
    text = _strip_accelerator(_strip_accelerator(text, "&"), "_")
    text = html.unescape(text)
    text = _strip_accelerator(text, "&")
    return " ".join(text.replace("\t", " ").split())


def has_language(text: str) -> bool:
    """Whether a text holds a word besides placeholders, markup and punctuation."""
    return re.search(r"[^\W\d_]{2,}", PLACEHOLDER.sub(" ", text)) is not None


def usable(source: str, target: str) -> bool:
    """Whether a cleaned pair is a translation worth learning from."""
    if not source or not target or source == target:
        return False
    if TRANSLATOR_CREDITS.match(source) or not has_language(source) or not has_language(target):
        return False
    if len(source.split()) > MAX_WORDS or len(target.split()) > MAX_WORDS:
        return False
    shorter, longer = sorted((len(source), len(target)))
    return longer <= 3 * shorter + 10  # far longer on one side: not a translation of the other


def split_key(source: str) -> str:
    """What variants of one message share: case, spacing, closing punctuation."""
    return re.sub(r"[\s.:…!?]+$", "", " ".join(source.lower().split()))


def best_targets(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """One German text per English text: the most frequent, the first seen on a tie."""
    counts = collections.defaultdict(collections.Counter)
    for source, target in pairs:
        counts[source][target] += 1
    return {source: targets.most_common(1)[0][0] for source, targets in counts.items()}


def split_pairs(pairs: dict[str, str], num_dev: int, num_test: int, seed: int = 0):
    """train, dev and test lists; all variants of a message (`split_key`) land in one split."""
    groups = collections.defaultdict(list)
    for source, target in pairs.items():
        groups[split_key(source)].append((source, target))
    keys = sorted(groups, key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).hexdigest())
    splits = {"test": [], "dev": [], "train": []}
    for key in keys:
        name = (
            "test"
            if len(splits["test"]) < num_test
            else "dev"
            if len(splits["dev"]) < num_dev
            else "train"
        )
        splits[name].extend(groups[key])
    return splits["train"], splits["dev"], splits["test"]


def catalogs_in_deb(deb: Path, language: str):
    """(path, bytes) of every `language` .mo catalog inside a .deb file."""
    pattern = re.compile(rf"^\.?/?usr/share/locale/{re.escape(language)}/LC_MESSAGES/[^/]+\.mo$")
    tar_bytes = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as archive:
        for member in archive:
            if member.isfile() and pattern.match(member.name):
                yield member.name, archive.extractfile(member).read()


def packages_with_catalogs(language: str) -> list[str]:
    """Debian packages that ship `language` catalogs, from apt-file's index."""
    try:
        found = subprocess.run(
            ["apt-file", "search", "-x", rf"^/usr/share/locale/{language}/LC_MESSAGES/.*\.mo$"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except FileNotFoundError:
        sys.exit(
            "apt-file is missing: run `apt-get install apt-file && apt-file update`, or pass --packages FILE"
        )
    names = sorted({line.split(":", 1)[0] for line in found.splitlines() if ":" in line})
    if not names:
        sys.exit("apt-file found no catalogs: run `apt-file update` first")
    return [name for name in names if not EXCLUDED_PACKAGES.search(name)]


def download(packages: list[str], cache: Path, chunk: int = 50) -> dict[str, Path]:
    """The .deb file of each package, downloaded into `cache` unless already there."""
    cache.mkdir(parents=True, exist_ok=True)

    def present() -> dict[str, Path]:
        return {deb.name.split("_", 1)[0]: deb for deb in sorted(cache.glob("*.deb"))}

    missing = [name for name in packages if name not in present()]
    for start in range(0, len(missing), chunk):
        names = missing[start : start + chunk]
        print(
            f"downloading packages {start + 1}-{start + len(names)} of {len(missing)}", flush=True
        )
        result = subprocess.run(
            ["apt-get", "download", "-q", *names], cwd=cache, capture_output=True, text=True
        )
        if result.returncode:  # one unknown name fails the batch: fetch the others one by one
            for name in names:
                if subprocess.run(
                    ["apt-get", "download", "-q", name], cwd=cache, capture_output=True
                ).returncode:
                    print(f"  skipped {name}: apt-get download failed", flush=True)
    have = present()
    return {name: have[name] for name in packages if name in have}


def collect(debs: dict[str, Path], language: str):
    """All usable pairs, and (package, version, pairs) rows saying where they came from."""
    pairs, rows = [], []
    for number, (name, deb) in enumerate(sorted(debs.items()), start=1):
        before = len(pairs)
        try:
            for path, data in catalogs_in_deb(deb, language):
                try:
                    entries = read_mo(data, f"{deb.name}:{path}")
                except MoError as error:
                    print(f"  skipped {error}", flush=True)
                    continue
                pairs.extend(
                    (s, t) for s, t in ((clean(s), clean(t)) for s, t in entries) if usable(s, t)
                )
        except (subprocess.CalledProcessError, tarfile.TarError) as error:
            print(f"  skipped {deb.name}: not a readable .deb ({error})", flush=True)
            continue
        rows.append((name, deb.name.split("_")[1], len(pairs) - before))
        if number % 100 == 0 or number == len(debs):
            print(f"read {number} of {len(debs)} packages: {len(pairs)} pairs", flush=True)
    return pairs, rows


def write_tsv(path: Path, pairs: list[tuple[str, str]]) -> str:
    data = "".join(f"{source}\t{target}\n" for source, target in pairs).encode("utf-8")
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    temporary.replace(path)
    return hashlib.sha256(data).hexdigest()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory for train.tsv, dev.tsv, test.tsv")
    parser.add_argument(
        "--cache", type=Path, default=Path("debs"), help="where the .deb files go (reused)"
    )
    parser.add_argument(
        "--packages", type=Path, help="file with one package name per line (default: apt-file)"
    )
    parser.add_argument("--language", default="de", help="catalog language (default de)")
    parser.add_argument("--dev", type=int, default=1000, help="dev pairs (default 1000)")
    parser.add_argument("--test", type=int, default=2000, help="test pairs (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.dev < 0 or args.test < 0:
        parser.error("--dev and --test must be at least 0")
    if args.packages:
        names = [line.strip() for line in args.packages.read_text().splitlines() if line.strip()]
        packages = [name for name in names if not EXCLUDED_PACKAGES.search(name)]
    else:
        packages = packages_with_catalogs(args.language)
    print(f"{len(packages)} packages ship {args.language} catalogs", flush=True)
    pairs, rows = collect(download(packages, args.cache), args.language)
    unique = best_targets(pairs)
    print(f"{len(pairs)} usable pairs, {len(unique)} with distinct English text", flush=True)
    if len(unique) < args.dev + args.test + 1:
        sys.exit(
            f"only {len(unique)} distinct pairs: too few for {args.dev} dev and {args.test} test pairs"
        )
    train, dev, test = split_pairs(unique, args.dev, args.test, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    digests = {
        name: write_tsv(args.out / f"{name}.tsv", split)
        for name, split in (("train", train), ("dev", dev), ("test", test))
    }
    write_tsv(
        args.out / "packages.tsv",
        [(f"{name}\t{version}", str(count)) for name, version, count in rows],
    )
    manifest = {
        "language": f"en-{args.language}",
        "packages": len(rows),
        "usable_pairs": len(pairs),
        "sizes": {"train": len(train), "dev": len(dev), "test": len(test)},
        "sha256": digests,
        "excluded": "Debian package descriptions (DDTP) and LibreOffice: kept for independent evaluation",
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(
        f"wrote {args.out}: {len(train)} train, {len(dev)} dev, {len(test)} test pairs", flush=True
    )


if __name__ == "__main__":
    main()
