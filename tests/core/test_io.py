"""Atomic writes: permissions as a plain open() would give, and no temporary files left
behind by a writer that was killed."""

from __future__ import annotations

import os
import subprocess
import sys

from grounding.io import atomic_write_bytes


def test_atomic_write_honours_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        p = atomic_write_bytes(tmp_path / "a.json", b"{}")
    finally:
        os.umask(old)
    assert p.read_bytes() == b"{}"
    assert (p.stat().st_mode & 0o777) == 0o640  # mkstemp alone gave 0o600 whatever the umask


def test_temporaries_of_a_killed_writer_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    stale = tmp_path / f".fig.png.{dead}.x1y2z3.tmp"
    legacy = tmp_path / ".fig.png.k9_ab3cd.tmp"  # older versions: no pid in the name
    live = tmp_path / f".fig.png.{os.getppid()}.abcdef.tmp"  # a running process's write
    other = tmp_path / f".other.png.{dead}.abcdef.tmp"  # another target: not ours to clean
    for f in (stale, legacy, live, other):
        f.write_bytes(b"partial")
    atomic_write_bytes(tmp_path / "fig.png", b"png")
    left = sorted(f.name for f in tmp_path.iterdir())
    assert left == sorted(["fig.png", live.name, other.name])
