"""A benchmark's output paths are checked when its arguments are parsed, before minutes of
measuring: a path it could not write is an argument error at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "grounded_qa.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("flag", ["--out", "--plot"])
def test_an_output_path_that_cannot_be_written_fails_before_the_run(flag, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for value, message in (
        (str(tmp_path), "is a directory"),
        (str(blocker / "x.json"), "cannot create the folder"),
        ("", "must name a file"),
    ):
        got = _run(flag, value)
        assert got.returncode == 2, got.stdout[-500:]
        assert message in got.stderr
        assert "CoDEx-M" not in got.stdout  # nothing was run


def test_a_writable_output_path_passes_the_check(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _common import output_file
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    target = tmp_path / "new" / "bench.json"
    assert output_file(str(target)) == str(target) and target.parent.is_dir()
