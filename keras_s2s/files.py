"""Writing run files so that readers never see half a file, and one writer per run directory.

Example:
    >>> atomic_write(Path("runs/x/eval.json"), lambda p: p.write_text("{}"))
    >>> with run_lock(Path("runs/x")):   # a second process is refused until this one ends
    ...     train()
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import math
import os
import re
import shutil
import socket
from pathlib import Path

LOCK_FILE = ".keras-s2s.lock"


def read_text(path: str | Path) -> str:
    """The text of a UTF-8 file (a byte order mark dropped); a ValueError naming the file, line and
    column where its bytes are not UTF-8 (a binary file, or another encoding).

    Example:
        >>> read_text("corpus/train.de")
        ValueError: corpus/train.de, line 3: bytes that are not UTF-8 at column 7 (b'\\xe4rz'); ...
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        start = error.start + 3 * data.startswith(b"\xef\xbb\xbf")  # the offset in `data`
        line = data.count(b"\n", 0, start) + 1
        column = start - data.rfind(b"\n", 0, start)
        raise ValueError(
            f"{path}, line {line}: bytes that are not UTF-8 at column {column} "
            f"({data[start : start + 4]!r}); a text file in UTF-8 is expected"
        ) from None


def atomic_write(path: Path, write) -> None:
    """Call `write(tmp_path)`, then rename onto `path`: readers never see half a file."""
    path = Path(path)
    # keeps suffixes such as .weights.h5 that writers check
    tmp = path.with_name(f".tmp-{path.name}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def staging_folder(target: Path) -> Path:
    """An empty path beside `target` (`.tmp-NAME-PID`) for this process to build `target` in and then
    rename. The ones that processes which are gone left behind (killed mid-write) are removed first.

    Example:
        >>> tmp = staging_folder(Path("runs/x/preset")); tmp.mkdir(); ...; os.replace(tmp, target)
    """
    target = Path(target)
    for stale in target.parent.glob(f".tmp-{glob.escape(target.name)}-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            _remove(stale)
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    _remove(tmp)
    return tmp


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def run_lock(directory: Path, command: str = "train"):
    """Within: this process alone writes `directory`. An advisory lock (`flock`) on
    `directory/.keras-s2s.lock`, which the OS drops when the process ends, killed or not, so no
    stale lock blocks the next run; the file names the holder for the refusal message. A run that
    wrote nothing leaves neither the file nor a folder it created."""
    import fcntl

    directory = Path(directory)
    created = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    handle = open(directory / LOCK_FILE, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by another process
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ValueError(
            f"{directory} is being written by {holder}: wait for it to end (or stop it), or choose "
            "another --out"
        ) from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"keras-s2s {command} (PID {os.getpid()} on {socket.gethostname()})\n")
        handle.flush()
        yield
    finally:
        # a run that wrote nothing (it failed first) leaves nothing, not even the lock or the folder
        if [path.name for path in directory.iterdir()] == [LOCK_FILE]:
            (directory / LOCK_FILE).unlink()
            if created:
                directory.rmdir()
        handle.close()


def variables_bytes(variables) -> int:
    """Bytes that `variables` take when saved (their shapes times their dtypes' sizes)."""
    return sum(math.prod(v.shape) * _itemsize(str(v.dtype)) for v in variables)


def weights_file_bytes(model) -> int:
    """About how many bytes `model.save_weights` writes: the weights and, once compiled, the optimizer's
    variables (Keras saves both)."""
    optimizer = getattr(model, "optimizer", None)
    return variables_bytes(
        [*model.weights, *(optimizer.variables if optimizer is not None else [])]
    )


def _itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name: float32 -> 4, bfloat16 -> 2, int64 -> 8, bool -> 1."""
    bits = re.search(r"\d+", dtype)
    return int(bits.group()) // 8 if bits else 1


def ensure_free_space(directory: Path, needed_bytes: int) -> None:
    """An OSError (ENOSPC) naming `directory` when it has less than `needed_bytes` (plus 5%) free, so a
    checkpoint is never started on a disk it cannot fit on (HDF5 can crash the process there).

    Example:
        >>> ensure_free_space(Path("runs/x"), weights_file_bytes(model))
    """
    free, needed = shutil.disk_usage(directory).free, int(needed_bytes * 1.05) + 2**20
    if free < needed:
        raise OSError(
            errno.ENOSPC,
            f"{directory}: {free / 2**20:.0f} MiB free, the checkpoint needs about "
            f"{needed / 2**20:.0f} MiB; free some space",
        )


def write_results(
    out_dir: Path, name: str, lines: list[str], result: dict, beam_width: int = 1
) -> None:
    """`name.txt` and `eval.json` for greedy decoding, `name-beamK.txt` and `eval-beamK.json` for beam K."""
    suffix = "" if beam_width == 1 else f"-beam{beam_width}"
    atomic_write(
        Path(out_dir) / f"{name}{suffix}.txt",
        lambda p: p.write_text("\n".join(lines) + "\n", encoding="utf-8"),
    )
    atomic_write(
        Path(out_dir) / f"eval{suffix}.json",
        lambda p: p.write_text(json.dumps(result, indent=2), encoding="utf-8"),
    )
