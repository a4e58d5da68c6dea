"""Atomic writes: a new file gets the permissions a plain open() would give and an existing
one keeps its own; only the package's own temporaries of a killed writer on this machine are
removed, never a user's file or another machine's, and a name is never read as a pattern."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grounding import io as gio
from grounding.io import atomic_write_bytes


def _dead_pid() -> str:
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def test_atomic_write_honours_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        p = atomic_write_bytes(tmp_path / "a.json", b"{}")
    finally:
        os.umask(old)
    assert p.read_bytes() == b"{}"
    assert (p.stat().st_mode & 0o777) == 0o640  # mkstemp alone gave 0o600 whatever the umask


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_an_existing_file_keeps_its_permissions(tmp_path, mode):
    p = tmp_path / "secret.json"
    p.write_bytes(b"old")
    os.chmod(p, mode)
    atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"new" and (p.stat().st_mode & 0o777) == mode


def test_only_our_temporaries_of_a_killed_writer_here_are_removed(tmp_path):
    dead, host = _dead_pid(), gio._host()
    ours = f".fig.png.{gio.MARK}.{host}"
    stale = tmp_path / f"{ours}.{dead}.x1y2z3.tmp"  # ours, this machine, writer gone: removed
    live = tmp_path / f"{ours}.{os.getppid()}.abcdef.tmp"  # a running writer: kept
    elsewhere = tmp_path / f".fig.png.{gio.MARK}.00000000.{dead}.abcdef.tmp"  # another host
    users = tmp_path / f".fig.png.{dead}.x1y2z3.tmp"  # a user's file of the same shape
    legacy = tmp_path / ".fig.png.k9_ab3cd.tmp"
    other = tmp_path / f".other.png.{gio.MARK}.{host}.{dead}.abcdef.tmp"  # another target
    for f in (stale, live, elsewhere, users, legacy, other):
        f.write_bytes(b"partial")
    atomic_write_bytes(tmp_path / "fig.png", b"png")
    left = sorted(f.name for f in tmp_path.iterdir())
    want = ["fig.png", live.name, elsewhere.name, users.name, legacy.name, other.name]
    assert left == sorted(want)


def test_a_name_is_never_a_pattern(tmp_path):
    dead, host = _dead_pid(), gio._host()
    victim = tmp_path / f".data.csv.{gio.MARK}.{host}.{dead}.abc.tmp"  # another target's
    victim.write_bytes(b"keep")
    atomic_write_bytes(tmp_path / "*", b"star")
    atomic_write_bytes(tmp_path / "[d]ata.csv", b"brackets")
    assert victim.exists() and (tmp_path / "*").read_bytes() == b"star"
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(["*", "[d]ata.csv", victim.name])


def test_a_failed_write_leaves_no_temporary_and_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "r.json"
    p.write_bytes(b"old")

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(gio.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(p, b"new")
    assert [f.name for f in tmp_path.iterdir()] == ["r.json"] and p.read_bytes() == b"old"
