"""docs/theory.md lists one row per result of shared/THEORY.md, and every node id exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = [
    "Eq. (1)",
    "Eq. (2)",
    "Eq. (3), Def. of cost",
    "Def. 2",
    "Sec. 3.3",
    "Eq. (5)-(6)",
    "Eq. (7)",
    "Eq. (8)",
    "Eq. (9)-(10)",
    "Eq. (11)",
    "Eq. (13)",
    "Eq. (15)",
    "Eq. (16)/(18)",
    "Eq. (19)",
    "Eq. (20)",
    "Eq. (22)",
    "Eq. (23)-(24)",
    "Eq. (25)",
    "Eq. (28)-(30)",
    *[f"Axiom {i}" for i in range(1, 9)],
    "Table 2",
    "Prop. 1",
    "Prop. 2",
    "Thm. 1",
    "Prop. 3",
    "Prop. 4",
    "Thm. 2",
    "Prop. 5",
    "Prop. 6",
    "Prop. 7",
    "Cor. 1",
    "Prop. 8",
    "Thm. 3",
    "Prop. 9",
    "Prop. 10",
    "Sec. 9.2",
    "Prop. 11",
    "Prop. 12",
    "Prop. 13",
    "Prop. 14",
    "Prop. 15",
    "Prop. 16",
]


def _rows():
    text = (ROOT / "docs" / "theory.md").read_text()
    rows, ledger = {}, False  # rows of the tables headed "| result | code | test |" only
    for line in text.splitlines():
        if not line.startswith("|"):
            ledger = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells == ["result", "code", "test"]:
            ledger = True
        elif ledger and len(cells) == 3 and cells[0] != "---":
            rows[cells[0]] = cells[2]
    return rows


def test_every_theory_result_has_a_row():
    rows = _rows()
    missing = [r for r in REQUIRED if r not in rows]
    assert not missing, missing


def test_every_listed_node_id_exists():
    defined: dict[str, set[str]] = {}
    for test in _rows().values():
        ids = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", test)
        assert ids, test
        for path, name in ids:
            if path not in defined:
                tree = ast.parse((ROOT / path).read_text())
                defined[path] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert name in defined[path], f"{path}::{name}"


def test_every_docstring_example_runs():
    """The Examples of every module of the package run and give the values they state (a
    module whose optional extra is not installed is reported, not silently passed)."""
    import doctest
    import importlib
    import pkgutil

    import grounding

    attempted, failed = 0, []
    for info in pkgutil.walk_packages(grounding.__path__, "grounding."):
        mod = importlib.import_module(info.name)
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        if result.failed:
            failed.append(info.name)
    assert not failed, failed
    assert attempted > 100
