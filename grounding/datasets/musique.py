r"""MuSiQue questions with their gold sub-question decompositions (a test of question planners).

MuSiQue (Trivedi, Balasubramanian, Khot and Sabharwal, *MuSiQue: Multihop Questions via
Single-hop Question Composition*, TACL 2022; CC BY 4.0) composes 2-4 hop questions from
single-hop ones. The shipped file holds 3,000 answerable questions with their gold
decompositions, whose sub-questions refer to earlier answers as ``#1``, ``#2``, ... (see
``data/musique/README.md``). No supporting paragraphs ship: this tests planning only.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from os import PathLike
from pathlib import Path

from grounding.datasets._lines import decode_utf8, excerpt, split_lines

__all__ = ["MusiqueQuestion", "load_musique"]


@dataclasses.dataclass(frozen=True)
class MusiqueQuestion:
    """One question.

    Attributes:
        id: the file's id.
        text: the question.
        decomposition: the gold sub-questions, in order (``#k`` = the answer of the ``k``-th).
        sub_answers: the gold answer of each sub-question.
        answer: the question's answer.
    """

    id: str
    text: str
    decomposition: tuple[str, ...]
    sub_answers: tuple[str, ...]
    answer: str

    @property
    def hops(self) -> int:
        return len(self.decomposition)


def load_musique(path: str | PathLike | None = None) -> tuple[MusiqueQuestion, ...]:
    """The shipped MuSiQue questions (or a file of the same JSON-lines format).

    Raises:
        ValueError: naming the file and the line, for a line that is not JSON or lacks a
            text field (``question``, ``question_decomposition`` with ``question`` and
            ``answer`` per step, ``answer``, ``id``), bytes that are not UTF-8, or a file
            without questions. Lines end at line feeds only (a raw U+2028 inside a JSON string
            is text, as JSON allows).
    """
    if path is None:
        src = resources.files("grounding.datasets") / "data" / "musique" / "musique_questions.jsonl"
        name, raw = "musique_questions.jsonl", src.read_bytes()
    else:
        name, raw = str(path), Path(path).read_bytes()
    out = []
    for line_no, line in enumerate(split_lines(decode_utf8(raw, name)), 1):
        if not line.strip():
            continue
        try:
            out.append(_question(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            why = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            raise ValueError(f"{name}, line {line_no}: {why}") from None
    if not out:
        raise ValueError(f"{name}: no question")
    return tuple(out)


def _question(row: object) -> MusiqueQuestion:
    """One question from a parsed JSON line (ValueError, KeyError or TypeError if malformed)."""
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    steps = row["question_decomposition"]
    if not isinstance(steps, list) or not steps:
        raise ValueError("question_decomposition must be a non-empty list")
    if not all(isinstance(s, dict) for s in steps):
        raise ValueError("question_decomposition must hold JSON objects")
    return MusiqueQuestion(
        id=_id(row["id"]),
        text=_text(row["question"]),
        decomposition=tuple(_text(s["question"]) for s in steps),
        sub_answers=tuple(_text(s["answer"]) for s in steps),
        answer=_text(row["answer"]),
    )


def _id(x: object) -> str:
    """An id written as a JSON string or integer, as text."""
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    if not isinstance(x, str):
        raise ValueError(f"id must be a string or an integer, got {excerpt(x)}")
    return x


def _text(x: object) -> str:
    if not isinstance(x, str):
        raise ValueError(f"expected text, got {excerpt(x)}")
    return x
