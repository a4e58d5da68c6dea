"""ChainWalks: the evidence of predicted relation chains is the edges of their walks."""

import pytest

from grounding import TypedGraph
from grounding.retrieval import ChainWalks

G = TypedGraph.from_triples(
    [
        ("m1", "starred", "a1"),
        ("m2", "starred", "a1"),
        ("a1", "starred^-1", "m1"),
        ("a1", "starred^-1", "m2"),
        ("m1", "directed_by", "d1"),
        ("m2", "directed_by", "d2"),
        ("m2", "genre", "drama"),
        ("m3", "directed_by", "d3"),
    ]
)


def test_every_walk_of_the_chain_and_nothing_else():
    state = ChainWalks(G).evidence("a1", [("starred^-1", "directed_by")])
    assert sorted(state.graph.triples()) == [
        ("a1", "starred^-1", "m1"),
        ("a1", "starred^-1", "m2"),
        ("m1", "directed_by", "d1"),
        ("m2", "directed_by", "d2"),
    ]
    assert state.graph.entities == G.entities and not state.provenance["cut"]


def test_chains_are_united_and_dead_ends_stop():
    w = ChainWalks(G)
    edges, _ = w.edges("a1", [("starred^-1", "genre"), ("no_such_relation", "genre")])
    got = sorted(G.triples()[e] for e in edges)
    assert ("m2", "genre", "drama") in got and ("m1", "directed_by", "d1") not in got
    assert len(w.edges("d3", [("directed_by",)])[0]) == 0  # no edge of the chain leaves d3


def test_a_frontier_is_cut_and_said():
    state = ChainWalks(G, max_nodes=1).evidence("a1", [("starred^-1", "directed_by")])
    assert state.provenance["cut"]
    assert ("m2", "directed_by", "d2") not in state.graph.triples()


def test_bad_input():
    with pytest.raises(KeyError, match="nobody"):
        ChainWalks(G).evidence("nobody", [("starred",)])
    with pytest.raises(TypeError, match="TypedGraph"):
        ChainWalks([("a", "r", "b")])
    with pytest.raises(ValueError):
        ChainWalks(G, max_nodes=0)


def test_without_revisits_no_walk_passes_back_through_the_topic():
    """m1's director d1 is reached from m1 through its own actor only by walking back through
    m1: without revisits it is not an end, and no edge into m1 is kept."""
    chain = ("starred", "starred^-1", "directed_by")
    both = ChainWalks(G).walk("m1", [chain])[1][0]
    other = ChainWalks(G, revisit=False).walk("m1", [chain])
    assert set(both) == {"d1", "d2"} and other[1][0] == ("d2",)
    assert all(
        t != "m1"
        for _, _, t in ChainWalks(G, revisit=False).evidence("m1", [chain]).graph.triples()
    )
    with pytest.raises(TypeError, match="revisit"):
        ChainWalks(G, revisit=1)
