"""The experiments' figures read as words: labels instead of Wikidata ids in the grounded-QA
worked example, legends without code names, panel titles that say what they show, a zoomed
axis that says so, and every point of a scatter inside its axes. Drawn from small synthetic
results (no experiment is run here)."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import grounding as g  # noqa: E402
from experiments import grounded_qa, kg_incomplete, retrieval_pcr  # noqa: E402
from grounding import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def _no_code_names(texts) -> None:
    """No ``snake_case`` name outside of math (``$...$``)."""
    for text in texts:
        words = re.sub(r"\$[^$]*\$", "", text)
        assert "_" not in words, text


def _codex_example():
    """A 2-hop CoDEx-style question (ids for entities and relations, one relation read
    backwards) grounded with its supporting walks: (graph, result, candidate entities)."""
    triples = [("Q9056", "P37^-1", "Q213"), ("Q213", "P530", "Q33946"),
               ("Q9056", "P37^-1", "Q214"), ("Q214", "P1050", "Q12204")]  # fmt: skip
    entities = ["Q12204", "Q213", "Q214", "Q33946", "Q9056"]
    texts = ["Q12204 (disease)", "Q213 (sovereign state)", "Q214 (sovereign state)",
             "Q33946 (historical country)", "Q9056 (language)"]  # fmt: skip
    graph = g.TypedGraph.from_triples(triples, entities=entities, texts=texts)
    chains = [g.ClaimChain(("Q9056", "Q213", "Q33946"), ("P37^-1", "P530")),
              g.ClaimChain(("Q9056", "Q213", "Q12204"), ("P37^-1", "P530"))]  # fmt: skip
    problem = g.GroundingProblem("Which country ...?", chains, jnp.log(jnp.array([0.4, 0.6])))
    result = g.ground(problem, graph, lam=4.0, kappa=1.0, eps=1.0, n_paths=2)
    return graph, result, ["Q33946", "Q12204"]


def _qa_report(dataset: str) -> dict:
    rng = np.random.default_rng(0)
    part = {m: {"hits1": 0.5, "aurc": 0.3} for m in ("prior", "hard", "soft")}
    part["selective"] = {m: {"confidence": rng.random(20).tolist(),
                             "hit": rng.integers(0, 2, 20).tolist()}
                         for m in ("prior", "hard", "soft")}  # fmt: skip
    part["lambda_sweep"] = np.linspace(0.2, 0.6, len(grounded_qa.LAMBDA_GRID)).tolist()
    return {"dataset": dataset, "lam": 3.0, "per_hop": {h: part for h in (1, 2, 3)}}


def test_grounded_qa_example_names_entities_and_relations_by_their_labels():
    graph, result, answers = _codex_example()
    fig = grounded_qa.figure([_qa_report("codex-m"), _qa_report("umls")], (graph, result, answers))
    walks = next(ax for ax in fig.axes if ax.get_title().startswith("Supporting walks of"))
    drawn = {t.get_text().replace("\n", " ") for t in walks.texts}
    assert "official language (inverse)" in drawn  # P37^-1, CoDEx's label of P37, read back
    assert "diplomatic relation" in drawn and "Q213 (sovereign state)" in drawn
    assert not {"P37^-1", "P530", "Q213"} & drawn  # no bare id where a label exists
    post = next(ax for ax in fig.axes if ax.get_title().startswith("One CoDEx-M"))
    ticks = [t.get_text().replace("\n", " ") for t in post.get_xticklabels()]
    assert any(t.startswith("tuberculosis (Q12204)") for t in ticks), ticks  # CoDEx's own label
    assert any(t.startswith("Q33946 (historical country)") for t in ticks), ticks
    legends = _legend_texts(fig)
    assert "soft grounding (Eq. 7)" in legends
    _no_code_names(legends)
    assert all("codex" not in ax.get_title() for ax in fig.axes)  # CoDEx-M, not codex-m


def test_evidence_paths_labels_fall_back_to_names_and_read_inverses():
    graph, result, _ = _codex_example()
    ax = plot.evidence_paths(graph, result, node_labels={"Q213": "Czech Republic"},
                             relation_labels={"P37": "official language"})  # fmt: skip
    drawn = {t.get_text() for t in ax.texts}
    assert {"Czech Republic", "official language (inverse)", "Q9056", "P530"} <= drawn
    assert plot.relation_text("P530", {}) == "P530"
    assert plot.relation_text("P37^-1", {"P37^-1": "is official language of"}) == (
        "is official language of"
    )


def _kg_result() -> dict:
    n = len(kg_incomplete.LAMS)
    curve = [{"mass_true": 0.5, "floor_true": 0.1 / (1 + i), "soft_map_acc": 0.3 + i / (4 * n)}
             for i in range(n)]  # fmt: skip
    hard = {r: {"mass_true": 0.2, "map_acc": 0.25} for r in ("adjacent", "reach2")}
    rng = np.random.default_rng(0)
    table = [{"score": s, "theta": t, "error_emitted": 0.3 - t / 5}
             for s in ("calibrated", "raw") for t in np.linspace(0.1, 0.9, 5)]  # fmt: skip
    nll = {"fixed_grid": 1.669, "global_gradient": 1.663, "coverage_aware": 1.664}
    return {
        "dataset": "umls",
        "support_collapse": {"curves": curve, "hard": hard, "prior_acc": 0.22},
        "coverage": {
            "m_q": [1, 1, 2, 3],
            "coverage": [0.8, 0.8, 0.96, 0.99],
            "retention": [0.8, 0.78, 0.95, 0.99],
        },  # fmt: skip
        "stability": {"scatter": {"lam_omega": rng.random(30), "tv": rng.random(30) / 5}},
        "selective": {"table": table},
        "calibration": {k: {"test": {"nll": v}} for k, v in nll.items()},
    }


def test_kg_incomplete_titles_say_what_each_panel_shows_and_close_values_are_visible():
    fig = kg_incomplete._figure(_kg_result())
    for ax in fig.axes:
        title = ax.get_title().replace("\n", " ")
        ref = re.search(r"\((?:Prop|Thm|Axiom)\.? [^()]*\)$", title)
        assert ref, title  # the theorem number stays, in brackets, at the end
        assert len(title[: ref.start()].split()) >= 5, title  # words say what is shown
    _no_code_names(_legend_texts(fig))
    nll = fig.axes[-1]
    low, high = nll.get_ylim()
    ys = [1.669, 1.663, 1.664]
    assert low > 0 and "not start at 0" in nll.get_ylabel()
    assert (max(ys) - min(ys)) / (high - low) > 0.3  # the difference fills the axis
    assert low < min(ys) and max(ys) < high


def _pcr_result() -> dict:
    names = ("pcr", "soft_pcr", "vector", "bm25", "hybrid")
    points = ((1.0, 0.70), (0.69, 0.755), (0.34, 0.778), (0.26, 0.744), (0.32, 0.767))
    curve = [{"lam": lam, "recall": 0.11} for lam in (0.0, 1.0, 10.0)]
    return {
        "encoder": "hashing (test)",
        "pathrag6": {
            "all": {n: {"consistency": x, "relevance@10": y} for n, (x, y) in zip(names, points)}
        },  # fmt: skip
        "depth_ablation": {
            "1": {"relevance@10": 0.57, "distance": 0.05},
            "unlimited": {"relevance@10": 0.70, "distance": 0.16},
        },  # fmt: skip
        "anchor_sensitivity": {"correct": {"relevance@10": 0.7}, "random": {"relevance@10": 0.2}},
        "umls": {"depths": {"1": {"soft_curve": curve, "hard_recall": 0.12}}},
    }


def test_retrieval_pcr_points_lie_inside_their_axes_and_legends_use_names():
    fig = retrieval_pcr._figure(_pcr_result())
    fig.canvas.draw()
    ax = fig.axes[0]
    to_axes = ax.transData + ax.transAxes.inverted()
    for col in ax.collections:  # clear of the edges by more than matplotlib's 5 % margins
        for x, y in to_axes.transform(col.get_offsets()):
            assert 0.06 < x < 0.94 and 0.06 < y < 0.94, (col.get_label(), x, y)
    [published] = [c for c in ax.collections if c.get_label().startswith("PCR, published")]
    assert not np.asarray(published.get_facecolors())[:, 3].any()  # hollow: PCR shows through
    legends = _legend_texts(fig)
    assert {"path-constrained retrieval (PCR)", "soft PCR", "BM25"} <= set(legends)
    _no_code_names(legends)


def test_learned_retrievers_legends_name_the_retrievers():
    from experiments import learned_retrievers as lr

    table = {h: {f"triple@{k}": [0.5, 0.05] for k in lr.KS} for h in ("all", "1", "2", "3")}
    recall = {n: table for n in ("subgraphrag", "gated", "ungated", "pcr", "soft_pcr")}
    smooth = {"structural": [1.0, 0.5, 0.3], "mean": [1.0, 0.2, 0.05]}
    fig = lr.figure(recall, smooth, {"all": 0.9, "1": 0.9, "2": 0.8, "3": 0.7})
    legends = _legend_texts(fig)
    assert {"SubgraphRAG", "soft PCR", "structural gate"} <= set(legends)
    _no_code_names(legends)
