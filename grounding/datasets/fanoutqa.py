r"""FanOutQA's dev questions with their human-written sub-question graphs (a test of planners
on fan-out shapes).

FanOutQA (Zhu, Hwang, Dugan and Callison-Burch, *FanOutQA: A Multi-Hop, Multi-Document
Question Answering Benchmark for Large Language Models*, ACL 2024; data CC BY-SA 4.0) asks
questions such as *What is the batting hand of each of the first five picks in the 1998 MLB
draft?*, written by people together with their decompositions: one sub-question finds a set
(the five picks), then one sub-question per member depends on it (a *fan-out*), sometimes
joined again. MuSiQue's decompositions are chains; these are mostly one root and many
parallel dependants, the shape a DAG planner exists for. The shipped file is the dev set (310
questions; ``data/fanoutqa/README.md``). Only the top-level sub-questions are read (26
questions nest a further decomposition inside a sub-question; it is not expanded).
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from os import PathLike
from pathlib import Path

from grounding.datasets._lines import decode_utf8, excerpt

__all__ = ["FanOutQuestion", "load_fanoutqa"]


@dataclasses.dataclass(frozen=True)
class FanOutQuestion:
    """One question.

    Attributes:
        id: the file's id.
        text: the question.
        decomposition: the gold sub-questions, in the file's order.
        depends_on: per sub-question, the indices of the sub-questions it needs (earlier or
            later in the file's order; the graph is acyclic).
        answer: the question's answer, as JSON text (a string, list or mapping).
    """

    id: str
    text: str
    decomposition: tuple[str, ...]
    depends_on: tuple[tuple[int, ...], ...]
    answer: str

    @property
    def hops(self) -> int:
        """Number of sub-questions (MuSiQue's name for it)."""
        return len(self.decomposition)

    @property
    def fans_out(self) -> bool:
        """Whether some sub-question has two or more dependants."""
        counts = [sum(i in d for d in self.depends_on) for i in range(self.hops)]
        return max(counts, default=0) >= 2


def load_fanoutqa(path: str | PathLike | None = None) -> tuple[FanOutQuestion, ...]:
    """The shipped FanOutQA dev questions (or a file of the same JSON format: a list of
    ``{"id", "question", "decomposition": [{"id", "question", "depends_on"}], "answer"}``).

    Raises:
        ValueError: naming the file and the question's position, for text that is not JSON or
            UTF-8, a missing field, a dependency on an unknown sub-question, a cycle, or a file
            without questions.
    """
    if path is None:
        src = resources.files("grounding.datasets") / "data" / "fanoutqa" / "fanout-final-dev.json"
        name, raw = "fanout-final-dev.json", src.read_bytes()
    else:
        name, raw = str(path), Path(path).read_bytes()
    try:
        rows = json.loads(decode_utf8(raw, name))
    except json.JSONDecodeError as err:
        raise ValueError(f"{name}: not JSON ({err})") from None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{name}: expected a non-empty JSON list of questions")
    out = []
    for i, row in enumerate(rows):
        try:
            out.append(_question(row))
        except (KeyError, TypeError, ValueError) as err:
            why = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            raise ValueError(f"{name}, question {i}: {why}") from None
    return tuple(out)


def _question(row: object) -> FanOutQuestion:
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    steps = row["decomposition"]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise ValueError("decomposition must be a non-empty list of JSON objects")
    index = {_text(s["id"]): k for k, s in enumerate(steps)}
    deps = []
    for s in steps:
        if not isinstance(s["depends_on"], list):
            raise ValueError(f"depends_on must be a list, got {excerpt(s['depends_on'])}")
        unknown = [d for d in s["depends_on"] if d not in index]
        if unknown:
            raise ValueError(f"sub-question {s['id']!r} depends on unknown {unknown}")
        deps.append(tuple(index[d] for d in s["depends_on"]))
    _check_acyclic(deps)
    return FanOutQuestion(
        id=_text(row["id"]),
        text=_text(row["question"]),
        decomposition=tuple(_text(s["question"]) for s in steps),
        depends_on=tuple(deps),
        answer=json.dumps(row["answer"], ensure_ascii=False),
    )


def _check_acyclic(deps: list[tuple[int, ...]]) -> None:
    done: set[int] = set()
    while len(done) < len(deps):
        ready = [k for k in range(len(deps)) if k not in done and set(deps[k]) <= done]
        if not ready:
            raise ValueError("the sub-question graph has a cycle")
        done.update(ready)


def _text(x: object) -> str:
    if not isinstance(x, str) or not x.strip():
        raise ValueError(f"expected text, got {excerpt(x)}")
    return x
