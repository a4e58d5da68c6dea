"""The results folder's index: ``README.md`` for people and ``index.json`` for scripts,
written by ``python -m experiments`` after each experiment (atomically), merged with what
earlier runs into the same folder wrote there, so that a run of ``--only`` one experiment
keeps the others' entries."""

from __future__ import annotations

import datetime
import importlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments import EXPERIMENTS
from experiments._io import atomic_write_text, write_json

#: What each kind of file holds, by its name's ending.
KINDS = (
    (".panels.json", "the figure's numbers, panel by panel, as drawn"),
    (".png", "figure"),
    (".csv", "table (10 significant digits; the JSON has every digit)"),
    (".json", "every number of the run"),
)


def about(name: str) -> str:
    """The first sentence of an experiment module's docstring."""
    doc = importlib.import_module(f"experiments.{name}").__doc__ or name
    para = " ".join(doc.strip().split("\n\n")[0].split())
    end = re.search(r"\.\s+(?=[A-Z])", para)  # not "Thm. 3", "Fig. 2"
    return para if end is None else para[: end.start() + 1]


def record(out: Path, name: str, seconds: float, paths: Sequence[Path], mode: str) -> list[Path]:
    """Add one experiment's run to the index of ``out``; returns the two index files."""
    index = _load(out / "index.json")
    index[name] = dict(
        about=about(name),
        mode=mode,
        seconds=round(seconds, 1),
        finished=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        files=[Path(p).name for p in paths],
    )
    index = {
        n: index[n] for n in (*EXPERIMENTS, *sorted(set(index) - set(EXPERIMENTS))) if n in index
    }
    return [
        write_json(out / "index.json", index),
        atomic_write_text(out / "README.md", render(index)),
    ]


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(index, dict) and all(isinstance(v, dict) for v in index.values()):
            return index
    except (OSError, ValueError):
        pass
    print(f"{path}: not an index written here; it is written again", file=sys.stderr)
    return {}


def kind(filename: str) -> str:
    return next((what for end, what in KINDS if filename.endswith(end)), "")


def render(index: dict) -> str:
    """The index as Markdown: a table of the experiments, then each one's files."""
    lines = [
        "# Results",
        "",
        "Written by `python -m experiments` (the last run of each experiment into this folder;",
        "`index.json` holds the same). Every figure `X.png` has `X.panels.json` beside it with",
        "the numbers of each panel as drawn. A figure from a quick run says so in its corner.",
        "",
        "| experiment | what it is | mode | seconds | finished (UTC) |",
        "|---|---|---|---:|---|",
    ]
    for name, e in index.items():
        lines.append(
            f"| [{name}](#{name}) | {e.get('about', '')} | {e.get('mode', '')} "
            f"| {e.get('seconds', '')} | {e.get('finished', '')} |"
        )
    for name, e in index.items():
        lines += ["", f"## {name}", "", e.get("about", ""), ""]
        lines += [f"- [{f}]({f}): {kind(f)}" for f in e.get("files", [])]
    return "\n".join(lines) + "\n"
