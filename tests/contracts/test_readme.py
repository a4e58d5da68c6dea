"""Every Python block of README.md and of the documentation pages (docs/*.md) runs as
written, each in a fresh interpreter with JAX's default settings (as a reader would paste
it), so neither can go stale. A block whose first line reads ``# run as N processes: ...``
runs as N concurrent processes, process ``i`` with ``sys.argv[1] == "i"``; a block for a
cluster (first line ``# on every host of a cluster ...``) cannot run on one machine and is
compiled only. User-facing text speaks of the software, not of how it was made."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grounding.testing.processes import run_processes

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = re.compile(r"# run as (\d+) processes:")
CLUSTER = "# on every host of a cluster"
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
#: A block that only includes a section of a script (``--8<-- "path:section"``, shown by the
#: docs build) is not run alone: the script it comes from runs whole (tests/contracts/test_first_use.py).
SNIPPET = re.compile(r'\A(\s*--8<-- "[^"]+"\s*)+\Z')
DOC_BLOCKS = [
    (f"{page.stem}{i}", code)
    for page in USER_DOCS[1:]
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))
    if not SNIPPET.match(code)
]
#: Words about how the work was organized, which user documentation must not use.
PROCESS_WORDS = re.compile(
    r"\bgoals?\b|\breview|\bissues?\b|literature helper|\bseed 0\d\d|shared/|\bsession",
    flags=re.I,
)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs_as_written(code, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, f"README block failed:\n{code}\n{out.stderr[-3000:]}"


@pytest.mark.parametrize("name, code", DOC_BLOCKS, ids=[n for n, _ in DOC_BLOCKS])
def test_docs_block_runs_as_written(name, code, tmp_path):
    if code.startswith(CLUSTER):
        compile(code, name, "exec")
    elif n := PROCESSES.match(code):
        script = tmp_path / "recipe.py"
        script.write_text(code)
        cmds = [[sys.executable, str(script), str(i)] for i in range(int(n.group(1)))]
        run_processes(cmds, dict(os.environ), tmp_path, timeout_s=300)
    else:
        test_readme_block_runs_as_written(code, tmp_path)


def test_docs_have_one_cluster_block_and_one_multiprocess_block():
    """The two special kinds of block exist (so neither convention is dead code)."""
    kinds = [c.startswith(CLUSTER) or bool(PROCESSES.match(c)) for _, c in DOC_BLOCKS]
    assert sum(kinds) == 2


@pytest.mark.parametrize("page", USER_DOCS, ids=[str(p.relative_to(ROOT)) for p in USER_DOCS])
def test_user_docs_speak_of_the_software(page):
    hits = [
        f"{page.name}:{n}: {line.strip()}"
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if PROCESS_WORDS.search(line)
    ]
    assert not hits, "\n".join(hits)
