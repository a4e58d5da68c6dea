"""FanOutQA's dev questions (grounding.datasets.fanoutqa): the shipped file as its README
describes it, and malformed files refused with the file and the question named."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import pytest

from grounding.datasets import load_fanoutqa


def test_the_shipped_dev_set():
    qs = load_fanoutqa()
    assert len(qs) == 310 and len({q.id for q in qs}) == 310
    assert sum(q.fans_out for q in qs) == 278
    first = qs[0]
    assert first.text.startswith("What is the batting hand of each of the first five picks")
    assert first.depends_on == ((), (0,), (0,), (0,), (0,), (0,)) and first.fans_out
    assert json.loads(first.answer)["Pat Burrell"] == "Right"
    data = resources.files("grounding.datasets") / "data" / "fanoutqa"
    readme = (data / "README.md").read_text()
    digest = hashlib.sha256((data / "fanout-final-dev.json").read_bytes()).hexdigest()
    assert digest in readme and "CC BY-SA 4.0" in readme
    assert "Attribution-ShareAlike 4.0" in (data / "LICENSE").read_text()


def _write(tmp_path, rows):
    path = tmp_path / "f.json"
    path.write_text(json.dumps(rows))
    return path


def _step(i, deps=()):
    return {"id": i, "question": f"{i}?", "depends_on": list(deps)}


@pytest.mark.parametrize(
    "rows, match",
    [
        ([], "non-empty"),
        ([{"id": "a", "question": "q?", "answer": 1}], "question 0: missing field 'decomposition'"),
        ([{"id": "a", "question": "q?", "answer": 1, "decomposition": [_step("x", ["y"])]}],
         "question 0: sub-question 'x' depends on unknown"),
        ([{"id": "a", "question": "q?", "answer": 1,
           "decomposition": [_step("x", ["y"]), _step("y", ["x"])]}], "cycle"),
        ([{"id": "a", "question": " ", "answer": 1, "decomposition": [_step("x")]}], "text"),
    ],
)  # fmt: skip
def test_malformed_files_are_refused_by_name(tmp_path, rows, match):
    path = _write(tmp_path, rows)
    with pytest.raises(ValueError, match=match) as err:
        load_fanoutqa(path)
    assert str(path) in str(err.value)


def test_not_json(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("[{")
    with pytest.raises(ValueError, match="not JSON"):
        load_fanoutqa(path)
