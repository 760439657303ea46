"""Presets: a trained model as a directory, and safe, verified downloads of them.

A preset directory holds::

    config.json          the model's Keras config (tokenizer / vocabulary / feature extractor inside)
    model.weights.h5     the weights
    metadata.json        the model card: data, training steps, metrics, precision, keras_s2s version

`load_preset(source)` takes a preset directory, a `file://` or `https://`
URL of a preset archive (.tar.gz, .tgz, .tar or .zip), or `package:NAME`
for an archive shipped with keras_s2s (in `zoo/presets/`), with an expected
sha256. Downloads land in `KERAS_S2S_HOME/presets/` (verified before use; a
mismatch removes the file and is an error), resume after an interruption
(HTTP Range), retry transient failures, and never touch the network when
`KERAS_S2S_OFFLINE=1`. Archive extraction refuses absolute paths, `..`,
links, device files and members larger than the limit.

Example:
    >>> save_to_preset(model, "presets/gnmt_demo", metadata={"bleu": 87.2})
    >>> model = load_preset("https://example.org/gnmt_demo.tar.gz", sha256="9f2c...")
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import keras

from keras_s2s.config import is_sha256
from keras_s2s.files import atomic_write, staging_folder
from keras_s2s.home import home, zoo_dir

log = logging.getLogger("keras_s2s")
CONFIG, WEIGHTS, METADATA = "config.json", "model.weights.h5", "metadata.json"
MAX_MEMBER_BYTES = 4 * 2**30  # no preset file is larger than 4 GiB
MAX_TOTAL_BYTES = 16 * 2**30  # nor a whole preset larger than 16 GiB
# unpacked size / archive size: weights hardly compress; a far higher ratio is a bomb
MAX_RATIO = 100
# in an unpacked archive: every file's sha256, written when it was unpacked
UNPACKED_MARK = ".complete"
PACKAGE_PRESETS = zoo_dir() / "presets"  # `package:NAME` URLs


class PresetError(ValueError):
    """A preset is missing, corrupt, tampered with, or unsafe to unpack."""


# --- saving and loading a preset directory --------------------------------------------------------


def save_to_preset(
    model: keras.Model,
    directory: str | Path,
    metadata: dict | None = None,
    weights_dtype: str = "float32",
) -> Path:
    """Write `model` as a preset directory (atomically: a temporary directory renamed at the end).

    `weights_dtype="float16"` stores the weights in half the bytes (a shipped
    preset); they load into float32 variables as usual.
    """
    from keras_s2s import __version__

    directory = Path(directory)
    if directory.exists():
        raise PresetError(f"{directory} already exists; choose another directory")
    tmp = staging_folder(directory)
    tmp.mkdir(parents=True)
    try:
        config = keras.saving.serialize_keras_object(model)
        # the loading machine's precision policy applies, not the trainer's
        config["config"].pop("dtype", None)
        (tmp / CONFIG).write_text(json.dumps(config, indent=1))
        # weights only: a fresh copy without the optimizer's slots (a third of the size with Adam)
        previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy(weights_dtype)  # the stored copy's variables
        try:
            bare = keras.saving.deserialize_keras_object(config)
            bare.build()
        finally:
            keras.config.set_dtype_policy(previous)
        bare.set_weights(model.get_weights())
        bare.save_weights(tmp / WEIGHTS)
        card = {
            "architecture": type(model).__name__,
            "parameters": model.count_params(),
            "keras_s2s_version": __version__,
            "keras_version": keras.__version__,
            "dtype_policy": keras.mixed_precision.global_policy().name,
            "weights_dtype": weights_dtype,
        }
        card.update(metadata or {})
        (tmp / METADATA).write_text(json.dumps(card, indent=2))
        os.replace(tmp, directory)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return directory


def load_preset_directory(directory: str | Path) -> keras.Model:
    """The model saved in a preset directory (built, weights loaded, not compiled)."""
    directory = Path(directory)
    for name in (CONFIG, WEIGHTS):
        if not (directory / name).is_file():
            raise PresetError(f"{directory}: not a preset (no {name})")
    try:
        config = json.loads((directory / CONFIG).read_text())
    except json.JSONDecodeError as exc:
        raise PresetError(f"{directory / CONFIG}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise PresetError(f"{directory / CONFIG}: not a model config (a JSON object is expected)")
    config.pop("compile_config", None)  # not compiled: the loader compiles with its card's settings
    try:
        model = keras.saving.deserialize_keras_object(config)
        model.build()
    except Exception as exc:  # Keras reports a malformed config in several types
        raise PresetError(
            f"{directory / CONFIG}: not a loadable model config ({type(exc).__name__}: "
            f"{str(exc)[:160]})"
        ) from None
    try:
        model.load_weights(directory / WEIGHTS)
    except Exception as exc:  # h5py/Keras report corrupt or mismatched weights in several types
        raise PresetError(
            f"{directory / WEIGHTS}: weights do not load ({str(exc)[:200]})"
        ) from None
    _set_default_decoding(model, directory)
    return model


DECODING_KEYS = ("alpha", "beta", "beam_width", "lexicon", "oov_penalty")


TRANSLATION_DECODING_KEYS = ("beam_width", "length_penalty")


def _set_default_decoding(model, directory: Path) -> None:
    """A preset's tuned search becomes the model's default decoding: a translation preset's beam
    (metadata `decoding`, `translate` without arguments uses it), a recognizer preset's word LM
    search (metadata `lm`: its file and tuned settings; `transcribe` without arguments uses it)."""
    metadata = read_metadata(directory)
    if isinstance(getattr(model, "default_decoding", None), dict) and "decoding" in metadata:
        decoding = metadata["decoding"]
        model.default_decoding = {
            k: decoding[k] for k in TRANSLATION_DECODING_KEYS if k in decoding
        }
        return
    decoding = metadata.get("lm")
    if not decoding or not hasattr(model, "set_default_decoding"):
        return
    path = directory / str(decoding.get("file", "lm.arpa.gz"))
    if not path.is_file():
        raise PresetError(f"{directory}: its metadata names a word LM {path.name} that it lacks")
    model.set_default_decoding(path, **{k: decoding[k] for k in DECODING_KEYS if k in decoding})


def read_metadata(directory: str | Path) -> dict:
    path = Path(directory) / METADATA
    return json.loads(path.read_text()) if path.is_file() else {}


# --- downloads ------------------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def offline() -> bool:
    return os.environ.get("KERAS_S2S_OFFLINE", "").lower() in ("1", "true", "yes")


def _progress(done: int, total: int | None, start: float) -> None:
    if not sys.stderr.isatty():
        return
    rate = done / max(time.time() - start, 1e-9) / 2**20
    of = f"/{total / 2**20:.1f}" if total else ""
    print(
        f"\rdownloading {done / 2**20:.1f}{of} MiB ({rate:.1f} MiB/s)",
        end="",
        file=sys.stderr,
        flush=True,
    )


def _fetch(url: str, partial: Path, timeout: float) -> None:
    """Append the rest of `url` to `partial` (HTTP Range when part of it is there already)."""
    done = partial.stat().st_size if partial.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={done}-"} if done else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if done and response.status != 206:  # the server ignored the range: start over
            done = 0
        total = response.headers.get("Content-Length")
        total = int(total) + done if total else None
        start = time.time()
        with open(partial, "ab" if done else "wb") as out:
            for block in iter(lambda: response.read(1 << 16), b""):
                out.write(block)
                done += len(block)
                _progress(done, total, start)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    # the connection dropped: what arrived is kept for a resume
    if total is not None and done < total:
        raise ConnectionError(f"connection closed after {done} of {total} bytes")


def _cache_path(url: str, sha256: str | None, cache_dir: Path | None = None) -> Path:
    """Where a download of `url` is cached: keyed by its sha256 when known, else by the whole URL."""
    key = sha256 or hashlib.sha256(url.encode()).hexdigest()
    name = Path(urllib.parse.urlparse(url).path).name or "download"
    return (cache_dir or home() / "presets" / "downloads") / f"{key[:16]}-{name}"


def download(
    url: str,
    sha256: str | None = None,
    cache_dir: Path | None = None,
    retries: int = 3,
    timeout: float = 60.0,
) -> Path:
    """The verified local copy of `url` (downloaded once into the cache). Without `sha256` an
    http(s) download is not verified, and a warning says so."""
    if sha256 is not None and not is_sha256(sha256):
        raise PresetError(
            f"{url}: sha256 must be 64 hexadecimal characters (or None: unverified); got {sha256!r}"
        )
    sha256 = sha256.lower() if sha256 else None
    if url.startswith("package:"):  # an archive shipped inside keras_s2s (the demo presets)
        url = (PACKAGE_PRESETS / url[len("package:") :]).as_uri()
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        if not path.exists():
            raise PresetError(f"{url}: file not found")
        if sha256 and path.is_file() and sha256_of(path) != sha256:
            raise PresetError(f"{url}: sha256 mismatch (expected {sha256}, got {sha256_of(path)})")
        return path
    if parsed.scheme not in ("http", "https"):
        raise PresetError(
            f"{url}: unsupported URL scheme {parsed.scheme!r} (use https://, http:// or file://)"
        )
    if sha256 is None:
        log.warning("%s: no sha256 given: the download is not verified", url)
    target = _cache_path(url, sha256, cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_file() and (not sha256 or sha256_of(target) == sha256):
        return target
    if offline():
        raise PresetError(f"{url}: not in the cache ({target}) and KERAS_S2S_OFFLINE is set")
    partial = target.with_name(target.name + ".partial")
    for attempt in range(1, retries + 1):
        try:
            _fetch(url, partial, timeout)
            break
        except (
            urllib.error.URLError,
            ConnectionError,
            TimeoutError,
            http.client.HTTPException,
        ) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code in (403, 404, 410):
                raise PresetError(f"{url}: HTTP {exc.code} {exc.reason}") from None
            if attempt == retries:
                raise PresetError(
                    f"{url}: download failed after {retries} attempts ({exc}); run again to resume"
                ) from None
            log.warning("%s: attempt %d failed (%s); retrying", url, attempt, exc)
            time.sleep(min(2**attempt, 10))
    if sha256:
        actual = sha256_of(partial)
        if actual != sha256:
            partial.unlink()
            raise PresetError(
                f"{url}: sha256 mismatch (expected {sha256}, got {actual}); the download was "
                "removed"
            )
    os.replace(partial, target)
    return target


# --- safe extraction ------------------------------------------------------------------------------


def _check_member(name: str, size: int, archive: Path) -> None:
    parts = Path(name).parts
    if Path(name).is_absolute() or name.startswith(("/", "\\")) or ".." in parts:
        raise PresetError(
            f"{archive}: refusing member {name!r}: its path leaves the extraction folder"
        )
    if size > MAX_MEMBER_BYTES:
        raise PresetError(
            f"{archive}: refusing member {name!r}: {size} bytes is over the {MAX_MEMBER_BYTES} limit"
        )


def _check_total(total: int, archive: Path) -> None:
    """Refuse an archive whose members add up to more than a preset can be (a decompression bomb)."""
    limit = min(MAX_TOTAL_BYTES, MAX_RATIO * max(archive.stat().st_size, 2**20))
    if total > limit:
        raise PresetError(
            f"{archive}: refusing to unpack {total / 2**20:,.0f} MiB from "
            f"{archive.stat().st_size / 2**20:,.1f} MiB: over the {limit / 2**20:,.0f} MiB a preset "
            f"of this archive's size can hold (at most {MAX_RATIO}x, and {MAX_TOTAL_BYTES >> 30} GiB)"
        )


def extract(archive: Path, destination: Path) -> Path:
    """Unpack a .tar(.gz) or .zip archive into `destination` (atomically), refusing unsafe members."""
    tmp = staging_folder(destination)
    tmp.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    _check_member(info.filename, info.file_size, archive)
                    if (info.external_attr >> 16) & 0o170000 == 0o120000:
                        raise PresetError(
                            f"{archive}: refusing member {info.filename!r}: links are not allowed"
                        )
                _check_total(sum(info.file_size for info in zf.infolist()), archive)
                zf.extractall(tmp)
        else:
            try:
                tf_archive = tarfile.open(archive)
            except tarfile.TarError as exc:
                raise PresetError(
                    f"{archive}: not a readable .tar.gz, .tar or .zip archive ({exc})"
                ) from None
            with tf_archive:
                members, total = [], 0
                # header by header: a bad member is refused before the rest is read
                for member in tf_archive:
                    _check_member(member.name, member.size, archive)
                    members.append(member)
                    if not (member.isfile() or member.isdir()):
                        raise PresetError(
                            f"{archive}: refusing member {member.name!r}: only plain files and "
                            "folders are allowed (no links or devices)"
                        )
                    total += member.size
                    _check_total(total, archive)
                tf_archive.extractall(tmp, members=members, filter="data")
        if destination.exists():
            shutil.rmtree(destination)
        os.replace(tmp, destination)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise PresetError(f"{archive}: the archive is damaged or truncated ({exc})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return destination


def _preset_root(folder: Path) -> Path:
    """The preset inside an unpacked archive: the folder itself or its single subfolder."""
    if (folder / CONFIG).is_file():
        return folder
    children = [p for p in folder.iterdir() if p.is_dir()]
    if len(children) == 1 and (children[0] / CONFIG).is_file():
        return children[0]
    raise PresetError(f"{folder}: the archive holds no preset ({CONFIG} + {WEIGHTS})")


def fetch_preset(source: str, sha256: str | None = None) -> Path:
    """A local preset directory for `source`: a directory, or an archive URL (downloaded, verified, unpacked)."""
    return _use_preset(source, sha256, lambda directory: directory)


def load_preset(source: str, sha256: str | None = None) -> keras.Model:
    """The model of a preset directory or archive URL (see `fetch_preset`)."""
    return _use_preset(source, sha256, load_preset_directory)


def _use_preset(source: str, sha256: str | None, use):
    """`use(preset directory)` for a directory or an archive URL; a download that does not unpack, or that
    `use` finds broken (a `PresetError`), is removed from the cache, so the next run fetches it afresh."""
    if "://" not in source and not source.startswith("package:"):
        path = Path(source)
        if not path.exists():
            raise PresetError(f"{source}: no such preset directory or archive")
        if path.is_dir():
            return use(path)
        source = path.resolve().as_uri()
    archive = download(source, sha256)  # verified again each time when its sha256 is known
    unpacked = home() / "presets" / "unpacked" / ((sha256 or sha256_of(archive))[:16])
    try:
        if not _intact(unpacked):
            _unpack(archive, unpacked)
        return use(_preset_root(unpacked))
    except PresetError as error:
        if urllib.parse.urlparse(source).scheme not in ("http", "https"):
            raise  # the user's own file or a shipped one: never deleted
        shutil.rmtree(unpacked, ignore_errors=True)
        archive.unlink(missing_ok=True)
        raise PresetError(
            f"{error}; the cached download {archive} was removed, so the next run downloads "
            f"{source} afresh"
        ) from None


def _intact(unpacked: Path) -> bool:
    """Whether an unpacked archive still holds every file it was unpacked with, byte for byte; a copy
    that does not (a file removed, truncated or changed since) is unpacked again, with a warning."""
    mark = unpacked / UNPACKED_MARK
    if not mark.exists() or mark.stat().st_size == 0:  # (empty: an older version's mark)
        return False
    try:
        digests = json.loads(mark.read_text())
        changed = [
            name
            for name, digest in digests.items()
            if not (unpacked / name).is_file() or sha256_of(unpacked / name) != digest
        ]
    except (OSError, ValueError, AttributeError, TypeError):
        changed = [UNPACKED_MARK]
    if changed:
        log.warning(
            "%s: damaged since it was unpacked (%s); unpacking it again", unpacked, changed[0]
        )
    return not changed


def _unpack(archive: Path, unpacked: Path) -> None:
    extract(archive, unpacked)
    digests = {
        str(path.relative_to(unpacked)): sha256_of(path)
        for path in unpacked.rglob("*")
        if path.is_file()
    }
    atomic_write(unpacked / UNPACKED_MARK, lambda path: path.write_text(json.dumps(digests)))


def pack_preset(directory: str | Path, archive: str | Path) -> str:
    """Write a preset directory as a reproducible .tar.gz (sorted members, fixed times); returns its sha256."""
    import gzip

    directory, archive = Path(directory), Path(archive)
    with open(archive, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped:
        with tarfile.open(fileobj=zipped, mode="w") as tar:
            for path in sorted(directory.rglob("*")):
                info = tar.gettarinfo(
                    str(path), arcname=f"{directory.name}/{path.relative_to(directory)}"
                )
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                if path.is_file():
                    with open(path, "rb") as handle:
                        tar.addfile(info, handle)
                else:
                    tar.addfile(info)
    return sha256_of(archive)
