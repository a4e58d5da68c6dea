"""Atomic file writes: a reader never sees a half-written file; an interrupted write keeps the old one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes"]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same directory and ``os.replace``.

    The file gets the permissions of a plain ``open(path, "w")`` (``0o666`` less the umask).
    The temporary file is named ``.<name>.<pid>.<random>.tmp``; those left by a process that
    was killed while writing ``path`` (its pid no longer alive) are removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent
    )
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; restored at once
    os.umask(mask)
    return mask


def _remove_stale_temporaries(path: Path) -> None:
    """Unlink ``.<name>.<pid>.*.tmp`` files of ``path`` whose writer is no longer running
    (and ``.<name>.<random>.tmp`` files of older versions, which carry no pid)."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        pid = tmp.name[len(path.name) + 2 :].split(".")[0]
        if pid.isdigit() and _alive(int(pid)):
            continue
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
