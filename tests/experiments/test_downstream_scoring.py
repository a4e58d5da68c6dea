"""The learned retrievers' downstream table scores its blind and oracle columns by one
function: given the same outcomes, the two columns are equal, even when the decision rule
abstains (an oracle column scored by the decision rule and a blind one by the soft posterior
would read 0 against 1 here)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from experiments._setup import learned


class _Outcome:
    """The outcome protocol: the soft posterior's top is the gold answer, but the decision
    rule abstained (``answer`` None)."""

    def __init__(self, question):
        self.question, self.answer, self.result = question, None, object()

    def answer_probabilities(self, which):
        return ("gold", "other"), np.array([0.7, 0.3])


class _System:
    def __init__(self, *args, **kwargs):
        pass

    def answer_batch(self, questions):
        return [_Outcome(q) for q in questions]


def test_both_columns_come_from_one_scorer(monkeypatch):
    test = [
        SimpleNamespace(text=f"q{i}", topic="t", id=f"q{i}", answers=("gold",)) for i in range(4)
    ]
    # the held-out wordings of the same questions (here the same stubs)
    monkeypatch.setattr(learned, "SETTINGS", {False: {"stub": None}})
    monkeypatch.setattr(learned, "build", lambda setting: (SimpleNamespace(questions=test),))
    monkeypatch.setattr(learned, "blind_paths", lambda bench, log: ({}, {"reader": None}))
    monkeypatch.setattr(learned, "fitted", lambda make, bench, valid: (None, 1.0))
    monkeypatch.setattr(learned, "BlindQA", _System)
    monkeypatch.setattr(learned, "GroundedQA", _System)
    bench = SimpleNamespace(name="stub")
    out = learned.downstream(bench, None, {}, {}, test, test, lambda s: None)
    row = out["pcr"]
    assert row["blind_hits1"] == row["oracle_hits1"] == 1.0
    assert row["blind_coverage"] == row["oracle_coverage"] == 0.0
    assert row["blind_vs_oracle"]["diff"] == 0.0
