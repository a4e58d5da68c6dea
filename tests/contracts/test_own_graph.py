"""A user's own graph: entities the facts do not mention (``TypedGraph.with_entities``,
``load_triples(entities=)``) and what grounding does with a candidate before and after it is
added (unsupported either way: an entity without edges is what an out-of-graph name is
grounded as)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import grounding as g
from grounding.datasets import load_triples

TRIPLES = [("vemurafenib", "inhibits", "braf"), ("braf", "part_of", "mapk_pathway")]


def test_with_entities_adds_isolated_entities_and_keeps_everything_else():
    base = g.TypedGraph.from_triples(TRIPLES, [0.9, 0.8])
    grown = base.with_entities(["mtor_pathway", "braf", "egfr", "mtor_pathway"])
    assert grown.entities == (*base.entities, "mtor_pathway", "egfr")  # once each, in order
    assert grown.triples() == base.triples() and grown.relations == base.relations
    np.testing.assert_array_equal(np.asarray(grown.reliability), np.asarray(base.reliability))
    assert [grown.entity_index(e) for e in base.entities] == list(range(base.n_nodes))
    assert grown.texts == () and base.with_entities([]).entities == base.entities
    with_texts = g.TypedGraph.from_triples(
        TRIPLES, entities=["vemurafenib", "braf", "mapk_pathway"], texts=["V", "B", "M"]
    )
    assert with_texts.with_entities(["mtor_pathway"]).texts == ("V", "B", "M", "mtor pathway")
    assert with_texts.with_entities(["x"], texts=["The X."]).texts[-1] == "The X."
    assert base.with_entities(["x"], texts=["The X."]).texts == (*base.node_texts, "The X.")


@pytest.mark.parametrize(
    "names, texts, error, words",
    [
        ("mtor", None, TypeError, "not a string"),
        ([3], None, TypeError, "must be str"),
        (["a\tb"], None, ValueError, "holds the control character"),
        ([" pad"], None, ValueError, "has leading or trailing whitespace"),
        (["x", "y"], ["X"], ValueError, "2 names but 1 texts"),
    ],
)
def test_with_entities_refuses_bad_names_naming_them(names, texts, error, words):
    with pytest.raises(error, match=words):
        g.TypedGraph.from_triples(TRIPLES).with_entities(names, texts)


def test_load_triples_takes_the_entities_the_file_does_not_mention(tmp_path):
    path = tmp_path / "targets.tsv"
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in TRIPLES), encoding="utf-8")
    graph = load_triples(path, entities=["mtor_pathway", "braf"])
    assert graph.entities == ("vemurafenib", "braf", "mapk_pathway", "mtor_pathway")
    assert graph.triples() == TRIPLES


def test_an_added_entity_grounds_as_the_out_of_graph_name_did():
    """Adding a candidate's entity changes its index, not its grounding: without edges it is
    unsupported either way, with the same posterior."""
    chains = [
        g.ClaimChain(("vemurafenib", None, target), ("inhibits", "part_of"))
        for target in ("mapk_pathway", "mtor_pathway")
    ]
    problem = g.GroundingProblem("which pathway?", chains, jnp.log(jnp.array([0.4, 0.6])))
    base = g.TypedGraph.from_triples(TRIPLES)
    before = g.ground(problem, base, lam=2.0, kappa=1.0)
    after = g.ground(problem, base.with_entities(["mtor_pathway"]), lam=2.0, kappa=1.0)
    S = g.EvidenceStatus
    assert [S(int(s)) for s in after.status] == [S.SUPPORTED, S.UNSUPPORTED]
    np.testing.assert_array_equal(np.asarray(before.status), np.asarray(after.status))
    np.testing.assert_allclose(after.posterior(), before.posterior(), rtol=1e-12)
