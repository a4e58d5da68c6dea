"""Atomic file writes: a reader never sees a half-written file; an interrupted write keeps the old one."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes"]

#: The mark of the package's own temporary files: ``.<name>.<MARK>.<host>.<pid>.<random>.tmp``.
MARK = "grounding-tmp"


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same directory and ``os.replace``.

    A file that exists keeps its permission bits; a new one gets those of a plain
    ``open(path, "w")`` (``0o666`` less the umask). The temporary file is named
    ``.<name>.grounding-tmp.<host>.<pid>.<random>.tmp`` (``host``: a short hash of this
    machine's name). Only such files are ever removed: this write's own when it fails, and
    those of ``path`` left by a writer on this machine that was killed while writing (its pid
    no longer alive). Any other file (a user's ``.<name>.1234.tmp``, another machine's
    temporaries on a shared disk) is left alone, and the name is matched as a plain string,
    never as a pattern (a file named ``*`` is one file).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}.{MARK}.{_host()}."
    _remove_stale_temporaries(path.parent, prefix)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
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


def _host() -> str:
    """This machine's name as 8 hex digits (a name may hold dots; a hash does not)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; restored at once
    os.umask(mask)
    return mask


def _remove_stale_temporaries(folder: Path, prefix: str) -> None:
    """Unlink the files of ``folder`` named ``<prefix><pid>.<random>.tmp`` (this package's
    temporaries of one target, written on this machine) whose writer is no longer running."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix) :].split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            os.unlink(entry.path)
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
