"""Retrieval metrics (:mod:`grounding.retrieval.metrics`): bounds, edge cases and the
evaluation of a retriever on a tiny graph."""

from __future__ import annotations

import numpy as np
import pytest
from _retrieval import _chain
from hypothesis import given
from hypothesis import strategies as st

from grounding.retrieval import (
    PCR,
    Query,
    VectorRetriever,
    distance_penalty,
    evaluate_retrieval,
    recall_at_k,
    relevance_at_k,
    structural_consistency,
    summarize_retrieval,
)


@given(
    st.lists(st.integers(0, 9), max_size=10, unique=True),
    st.sets(st.integers(0, 9), min_size=1),
    st.integers(1, 12),
)
def test_relevance_and_recall_bounds(retrieved, relevant, k):
    rel, rec = relevance_at_k(retrieved, relevant, k), recall_at_k(retrieved, relevant, k)
    assert 0.0 <= rec <= rel <= 1.0
    hits = len(set(retrieved[:k]) & relevant)
    assert rel == hits / min(k, len(relevant)) and rec == hits / len(relevant)


def test_metric_edge_cases():
    dist = np.array([0, 1, -1])
    assert structural_consistency([], dist) == 1.0 and distance_penalty([], dist) == 0.0
    with pytest.raises(ValueError, match="no relevant"):
        relevance_at_k([1], set(), 1)
    with pytest.raises(ValueError, match="an int >= 1"):
        recall_at_k([1], {1}, 0)


def test_evaluate_and_evidence_state_on_a_tiny_graph():
    g, index = _chain()
    qs = [Query("q", anchor="a", relevant=("c", "d"), id="q1"), Query("q", "zzz", ("d",), "q2")]
    rows = evaluate_retrieval(PCR(index), g, qs, k=2)
    assert rows[0]["consistency"] == 1.0 and rows[0]["relevance@10"] == 0.5
    assert rows[0]["distance"] == pytest.approx((0.2 + 0.1) / 2)  # c (2 hops), b (1 hop)
    assert rows[1]["fallback"] and rows[1]["consistency"] == 0.0
    vec = evaluate_retrieval(VectorRetriever(index), g, qs, k=2)[0]
    assert vec["consistency"] == 0.5 and vec["relevance@10"] == 1.0
    res = PCR(index).retrieve(qs[0], 1)  # retrieves c only; evidence keeps the path a->b->c
    ev = res.evidence
    assert sorted(ev.graph.triples()) == [("a", "related_to", "b"), ("b", "related_to", "c")]
    assert ev.provenance["retriever"] == "pcr" and ev.provenance["nodes"] == ("c",)
    summary = summarize_retrieval(rows)
    assert summary["retriever"] == "pcr" and summary["n_queries"] == 2
    assert summary["n_fallback"] == 1 and summary["consistency"] == 0.5
    assert summary["relevance@10"] == np.mean([r["relevance@10"] for r in rows])
    assert "graph=" not in repr(res) and "index=array([2])" in repr(res)  # not the whole graph
    with pytest.raises(ValueError, match="no rows"):
        summarize_retrieval([])
