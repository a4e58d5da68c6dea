"""``grounding.plot``: structural checks (what is drawn, labeled and colored), not pixels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import grounding as g  # noqa: E402
from grounding import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _grounded(n_paths=3):
    graph = g.TypedGraph.from_triples(
        [("curie", "born_in", "warsaw"), ("warsaw", "located_in", "poland"),
         ("curie", "worked_in", "paris"), ("paris", "located_in", "france")],
        reliability=[0.9, 1.0, 0.95, 1.0])  # fmt: skip
    chains = [g.ClaimChain(("curie", c, k), ("born_in", "located_in"))
              for c, k in (("warsaw", "poland"), ("paris", "france"))]  # fmt: skip
    problem = g.GroundingProblem("Where was Curie born?", chains, jnp.log(jnp.array([0.3, 0.7])))
    return graph, g.ground(problem, graph, lam=4.0, kappa=1.0, eps=1.0, n_paths=n_paths)


def test_posterior_bars_draw_prior_soft_and_hard_with_statuses():
    _, r = _grounded()
    ax = plot.posterior_bars(r)
    heights = np.array([p.get_height() for p in ax.patches]).reshape(3, 2)  # series x candidates
    order = np.argsort(-r.posterior(), kind="stable")
    np.testing.assert_allclose(heights[0], np.exp(np.asarray(r.log_prior))[order])
    np.testing.assert_allclose(heights[1], r.posterior()[order])
    np.testing.assert_allclose(heights[2], np.exp(np.asarray(r.hard_log_posterior))[order])
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["curie->warsaw->poland\nSUPPORTED", "curie->paris->france\nUNSUPPORTED"]
    colors = [t.get_color() for t in ax.get_xticklabels()]
    assert colors == [plot.STATUS_COLORS[g.EvidenceStatus.SUPPORTED],
                      plot.STATUS_COLORS[g.EvidenceStatus.UNSUPPORTED]]  # fmt: skip
    assert ax.get_ylabel() == "probability" and ax.get_title() == "Where was Curie born?"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "prior", "soft posterior", "hard posterior"]  # fmt: skip
    ax = plot.posterior_bars(r, labels=["Poland", "France"])
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "Poland\nSUPPORTED",
        "France\nUNSUPPORTED",
    ]
    with pytest.raises(ValueError, match="^labels must name the 2 candidates"):
        plot.posterior_bars(r, labels=["Poland"])


def test_tv_bound_curves_are_the_paper_and_sharp_bounds():
    x = np.linspace(0, 8, 50)
    ax = plot.tv_bound_curves(x, measured=([1.0, 2.0], [0.1, 0.3]))
    paper, sharp = ax.lines[:2]
    np.testing.assert_allclose(paper.get_ydata(), np.tanh(x / 2), rtol=1e-6)
    np.testing.assert_allclose(sharp.get_ydata(), np.tanh(x / 4), rtol=1e-6)
    np.testing.assert_allclose(ax.collections[0].get_offsets(), [[1.0, 0.1], [2.0, 0.3]])
    assert "total variation" in ax.get_ylabel() and "omega" in ax.get_xlabel()
    with pytest.raises(ValueError, match="sorted"):
        plot.tv_bound_curves([2.0, 1.0])
    with pytest.raises(ValueError, match="measured"):
        plot.tv_bound_curves(x, measured=([1.0], [0.1, 0.2]))


def test_risk_coverage_by_hand():
    # scores 0.9 (right), 0.8 (wrong), 0.8 (right), 0.1 (wrong): the tie enters together
    ax = plot.risk_coverage([0.9, 0.8, 0.8, 0.1], [1, 0, 1, 0], label="ours")
    line = ax.lines[-1]
    np.testing.assert_allclose(line.get_xdata(), [0.25, 0.75, 1.0])
    np.testing.assert_allclose(line.get_ydata(), [0.0, 1 / 3, 0.5])
    assert "coverage" in ax.get_xlabel() and "risk" in ax.get_ylabel()
    for bad in (([0.5], [2]), ([np.nan], [1]), ([], []), ([0.1, 0.2], [1])):
        with pytest.raises(ValueError):
            plot.risk_coverage(*bad)


def test_evidence_paths_draw_the_best_candidates_walks_with_their_weights():
    graph, r = _grounded()
    ax = plot.evidence_paths(graph, r)
    assert ax.get_title() == "supporting walks of curie->warsaw->poland"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    w = float(r.paths.weight[0, 0])
    assert legend == [f"walk 1: E={float(r.paths.cost[0, 0]):.3g}, nu*={w:.3f}"]
    texts = {t.get_text() for t in ax.texts}
    assert {"curie", "warsaw", "poland", "born_in", "located_in"} <= texts
    assert "paris" not in texts  # only the subgraph the walks span
    ax2 = plot.evidence_paths(graph, r, candidate=1)  # no walk matches the claim
    assert "no supporting walk" in {t.get_text() for t in ax2.texts}
    with pytest.raises(ValueError, match="n_paths"):
        plot.evidence_paths(graph, _grounded(n_paths=0)[1])
    with pytest.raises(ValueError, match="candidate"):
        plot.evidence_paths(graph, r, candidate=5)


def test_style_is_a_context():
    before = plt.rcParams["axes.spines.top"]
    with plot.style():
        assert plt.rcParams["axes.spines.top"] is False
    assert plt.rcParams["axes.spines.top"] == before


def test_figure_data_reads_back_every_series_as_drawn():
    fig, (a, b, c) = plt.subplots(1, 3)
    a.plot([1.0, 2.0, 3.0], [0.5, np.nan, 0.25], label="curve")
    a.axhline(0.7, label="level")
    a.scatter([1.0, 2.0], [3.0, 4.0], label="points")
    a.set(title="A", xlabel="x", ylabel="y", yscale="log")
    b.bar(["one", "two"], [0.2, 0.8], label="bars")
    b.plot(["one", "two"], [0.1, 0.9], label="cat")
    c.set_title("graph")
    c.set_axis_off()
    panels = plot.figure_data(fig)
    assert [p["title"] for p in panels] == ["A", "", "graph"]
    first = panels[0]
    assert (first["xlabel"], first["ylabel"], first["yscale"]) == ("x", "y", "log")
    line, level, points = first["series"]
    assert line == {"kind": "line", "label": "curve", "x": [1.0, 2.0, 3.0], "y": [0.5, None, 0.25]}
    assert level["x_axes_fraction"] and level["y"] == [0.7, 0.7] and "x_axes_fraction" not in line
    assert points == {"kind": "scatter", "label": "points", "x": [1.0, 2.0], "y": [3.0, 4.0]}
    bars, cat = panels[1]["series"]
    assert bars == {"kind": "bar", "label": "bars", "x": [0.0, 1.0], "height": [0.2, 0.8]}
    assert panels[1]["xticklabels"] == ["one", "two"] and cat["y"] == [0.1, 0.9]
    assert panels[2]["series"] == [] and "xscale" not in panels[2]


def test_mark_quick_writes_the_note_on_the_figure():
    fig, _ = plt.subplots()
    plot.mark_quick(fig)
    assert [t.get_text() for t in fig.texts] == [
        "quick run: small sample, not the paper-quality figure"]  # fmt: skip
