"""``grounding.plot`` refuses what it cannot draw faithfully: a graph other than the one the
result was grounded on, a candidate that is not an index or a name, a non-positive count."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import grounding as g  # noqa: E402
from grounding import plot  # noqa: E402

TRIPLES = [("curie", "born_in", "warsaw"), ("warsaw", "located_in", "poland"),
           ("curie", "worked_in", "paris"), ("paris", "located_in", "france")]  # fmt: skip


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _grounded(n_paths=3):
    graph = g.TypedGraph.from_triples(TRIPLES, reliability=[0.9, 1.0, 0.95, 1.0])
    chains = [g.ClaimChain(("curie", c, k), ("born_in", "located_in"))
              for c, k in (("warsaw", "poland"), ("paris", "france"))]  # fmt: skip
    problem = g.GroundingProblem("Where was Curie born?", chains, jnp.log(jnp.array([0.3, 0.7])))
    return graph, g.ground(problem, graph, lam=4.0, kappa=1.0, eps=1.0, n_paths=n_paths)


@pytest.mark.parametrize(
    "other",
    [
        # the same counts, entities and relations; edges listed in another order
        [TRIPLES[2], TRIPLES[3], TRIPLES[0], TRIPLES[1]],
        # the same structure (indices), other names
        [
            ("x", "born_in", "y"),
            ("y", "located_in", "z"),
            ("x", "worked_in", "u"),
            ("u", "located_in", "v"),
        ],  # fmt: skip
        # the same names, relations swapped on the first two edges
        [("curie", "located_in", "warsaw"), ("warsaw", "born_in", "poland"), *TRIPLES[2:]],
        # fewer edges than the walk's edge indices
        [("curie", "born_in", "warsaw")],
    ],
)
def test_evidence_paths_refuses_another_graph(other):
    graph, r = _grounded()
    plot.evidence_paths(graph, r)  # the graph grounded on draws
    with pytest.raises(ValueError, match="graph is not the one the result was grounded on"):
        plot.evidence_paths(g.TypedGraph.from_triples(other), r)


def test_evidence_paths_candidate_is_an_index_in_range_or_a_name():
    graph, r = _grounded()
    ax = plot.evidence_paths(graph, r, candidate="curie->warsaw->poland")
    assert ax.get_title() == "supporting walks of curie->warsaw->poland"
    assert plot.evidence_paths(graph, r, candidate=np.int64(1)).get_title().endswith("france")
    idx = r"candidate \(an index, when not a candidate name\) must be an int >= 0"
    for bad, what in [(1.9, idx), (1.0, idx), (True, idx), ([0], idx), (-1, idx),
                      (2, r"lie in \[0, 2\)"), ("nobody", "'nobody' is not one of")]:  # fmt: skip
        with pytest.raises(ValueError, match=what):
            plot.evidence_paths(graph, r, candidate=bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", None])
def test_posterior_bars_max_candidates_must_be_a_positive_int(bad):
    _, r = _grounded()
    with pytest.raises(ValueError, match="max_candidates must be an int >= 1"):
        plot.posterior_bars(r, max_candidates=bad)
    assert len(plot.posterior_bars(r, max_candidates=1).patches) == 3  # one candidate, 3 series
