"""Quick runs of the experiments and the checks every experiment's output must pass (shared by
the experiment test files, which split the experiments between them so that the test workers
share the work)."""

from __future__ import annotations

import csv
import importlib
import json

import pytest

#: The question-answering experiments: they share one trained answerer (memoized in-process).
#: Grounded QA runs in the default suite (at :func:`smoke_scale`); PankRAG and the learned
#: retrievers, which need CoDEx-M, run under ``-m slow`` in a file of their own.
QA = ("grounded_qa", "pankrag", "learned_retrievers")


def quick_runs(names, tmp_path_factory, smoke: bool = False) -> dict:
    """Each named experiment once, in quick mode (``smoke``: at :func:`smoke_scale`):
    name -> (out dir, returned paths)."""
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        if smoke:
            smoke_scale(patch)
        for name in names:
            d = tmp_path_factory.mktemp(name)
            main = importlib.import_module(f"experiments.{name}").main
            out[name] = d, main(["--quick", "--out", str(d)])
    return out


def shared_tests(names, smoke: bool = True) -> tuple:
    """For a test file running ``names`` together: its module-scoped ``runs`` fixture (the
    default suite at :func:`smoke_scale`, ``-m slow`` at quick mode's own; ``smoke=False``:
    quick mode only), its ``results`` fixture, and the output and panel checks parametrized
    over ``names``."""
    scales = ["smoke"] * smoke + [pytest.param("quick", marks=pytest.mark.slow)]

    @pytest.fixture(scope="module", params=scales)
    def runs(request, tmp_path_factory):
        return quick_runs(names, tmp_path_factory, smoke=request.param == "smoke")

    @pytest.fixture(scope="module")
    def results(runs):
        return results_of(runs)

    @pytest.mark.parametrize("name", names)
    def test_outputs_exist_and_are_complete(runs, name):
        check_outputs(runs, name)

    @pytest.mark.parametrize("name", names)
    def test_every_panel_is_labeled_and_its_numbers_are_written(runs, name):
        check_panels(runs, name)

    return (runs, results, test_outputs_exist_and_are_complete,
            test_every_panel_is_labeled_and_its_numbers_are_written)  # fmt: skip


def smoke_scale(patch: pytest.MonkeyPatch) -> None:
    """The experiments' quick mode at a smaller scale for the default suite: grounded QA on
    UMLS and CoDEx-S (not CoDEx-M), on fewer questions, training epochs and answerer dimensions
    (TransE at 32 instead of 256), with two label weights for the chain predictors instead of
    four; PRoH on 12 instead of 20 questions per hop count, HyperGraphRAG's budget curve at two
    retrieval sizes. The same code paths in about a minute each on one idle core here, mostly
    compiling. Quick mode itself (and PankRAG and the learned retrievers, which need CoDEx-M)
    runs under ``-m slow`` and in the main job."""
    from experiments import _setup, proh

    S = _setup.Setting
    small = {
        "umls": S("umls", 60, 5, dim=32),
        "codex-s": S("codex-s", 60, 3, negatives=True, dim=32),
    }
    patch.setitem(_setup.SETTINGS, False, small)
    patch.setattr(proh, "QUICK_PER_HOP", 12)
    patch.setattr(proh, "BUDGET_K", (20, 60))  # two points of HyperGraphRAG's budget curve
    # two label weights instead of four for the chain predictors (the choice on validation is
    # the same code path on a shorter grid)
    patch.setattr(_setup.qa, "LABEL_WEIGHTS", (0.5, 1.0))


def results_of(runs) -> dict:
    return {name: json.loads((d / f"{name}.json").read_text()) for name, (d, _) in runs.items()}


#: Tables an experiment writes besides ``<name>.csv``.
EXTRA_TABLES = {"grounded_qa": ["grounded_qa_blind.csv", "grounded_qa_paths.csv"]}


def check_outputs(runs, name):
    out, paths = runs[name]
    expected = [f"{name}.{ext}" for ext in ("png", "panels.json", "csv", "json")]
    expected += EXTRA_TABLES.get(name, [])
    assert sorted(p.name for p in paths) == sorted(expected)
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
    assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for table in [f"{name}.csv", *EXTRA_TABLES.get(name, [])]:
        with open(out / table, newline="") as fh:
            rows = list(csv.reader(fh))
        assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows), table
    json.loads((out / f"{name}.json").read_text())  # valid strict JSON
    assert not [f for f in out.iterdir() if f.name.endswith(".tmp")]  # atomic writes cleaned up


def check_panels(runs, name):
    """``<figure>.panels.json``: each plotted panel has a title and both axis labels, every
    series drawn on it is there with its numbers, probabilities are drawn inside [0, 1], and
    a quick run says so."""
    out, _ = runs[name]
    figure = json.loads((out / f"{name}.panels.json").read_text())
    assert figure["figure"] == f"{name}.png" and figure["quick"] is True
    plotted = [p for p in figure["panels"] if "xscale" in p]  # graph drawings have no axes
    assert plotted
    for panel in plotted:
        assert panel["title"] and panel["xlabel"] and panel["ylabel"], panel["title"]
        assert panel["series"], panel["title"]
        for series in panel["series"]:
            values = series.get("y", series.get("height"))
            assert any(v is not None for v in values), (panel["title"], series["label"])
        label = panel["ylabel"].lower()
        if "mass" in label or "probability" in label or "accuracy" in label:
            ys = [v for s in panel["series"] for v in s.get("y", s.get("height")) if v is not None]
            assert min(ys) >= 0 and max(ys) <= 1 + 1e-9, panel["title"]
