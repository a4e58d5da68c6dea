"""The one fallback rule of a batched stage (:func:`grounding.qa.pipeline.batch_or_each`)."""

from __future__ import annotations

import pytest

from grounding.qa.pipeline import batch_or_each


class Stage:
    """A batched stage that fails on ``bad`` items (with ``error``) and records its calls;
    with ``batch_only``, it also fails on any batch holding every item of ``together``."""

    def __init__(self, bad=(), error=ValueError, together=()):
        self.bad, self.error, self.together, self.calls = set(bad), error, set(together), []

    def __call__(self, items):
        self.calls.append(list(items))
        if self.bad & set(items) or (self.together and self.together <= set(items)):
            raise self.error(f"cannot run {sorted(items)}")
        return [f"{x}@{len(items)}" for x in items]  # an output that shows the batch size


def test_a_batch_that_runs_is_one_call():
    stage = Stage()
    assert batch_or_each(stage, "abc", "s") == ["a@3", "b@3", "c@3"]
    assert stage.calls == [["a", "b", "c"]]
    assert batch_or_each(stage, [], "s") == []


def test_a_failing_batch_runs_each_item_alone_and_names_the_failures():
    stage = Stage(bad={"b"})
    got = batch_or_each(stage, "abc", "scoring")
    assert got == ["a@1", "scoring failed (ValueError): cannot run ['b']", "c@1"]
    assert stage.calls == [["a", "b", "c"], ["a"], ["b"], ["c"]]


def test_again_runs_the_items_that_pass_alone_once_more_together():
    stage = Stage(bad={"b"})
    got = batch_or_each(stage, "abc", "s", again=True)
    assert got[0] == "a@2" and got[2] == "c@2" and got[1].startswith("s failed")
    assert stage.calls[-1] == ["a", "c"]
    # every item passes alone: the whole batch is what failed, the outputs alone are kept
    pair = Stage(together={"a", "b"})
    assert batch_or_each(pair, "ab", "s", again=True) == ["a@1", "b@1"]
    # the second batch fails too: each of its items gets that reason
    flaky = Stage(bad={"b"}, together={"a", "c"})
    got = batch_or_each(flaky, "abc", "s", again=True)
    assert got[0] == got[2] == "s failed (ValueError): cannot run ['a', 'c']"


def test_one_item_runs_alone_once_unless_it_has_its_own_single_form():
    stage = Stage(bad={"a"})
    assert batch_or_each(stage, "a", "s") == ["s failed (ValueError): cannot run ['a']"]
    assert stage.calls == [["a"]]
    stage, single = Stage(), []
    got = batch_or_each(stage, "a", "s", one=lambda x: single.append(x) or f"{x}!")
    assert got == ["a@1"] and stage.calls == [["a"]] and single == []  # the batch first
    got = batch_or_each(Stage(bad={"a"}), "ab", "s", one=lambda x: f"{x}!")
    assert got == ["a!", "b!"]
    assert batch_or_each(None, "ab", "s", one=lambda x: f"{x}!") == ["a!", "b!"]  # no batch


def test_other_errors_propagate_and_a_short_batch_is_refused():
    with pytest.raises(TypeError, match="cannot run"):
        batch_or_each(Stage(bad={"a"}, error=TypeError), "ab", "s")  # not a question error
    with pytest.raises(TypeError, match="s returned 1 outputs for 2 questions"):
        batch_or_each(lambda items: ["x"], "ab", "s")
