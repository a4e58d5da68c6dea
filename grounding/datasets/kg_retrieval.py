"""Anchored retrieval on a real knowledge graph: the held-out answers of ``(h, r, ?)``
(:func:`kg_retrieval_benchmark`)."""

from __future__ import annotations

import numpy as np

from grounding.datasets.kg import load_kg
from grounding.datasets.pathrag6 import RetrievalBenchmark
from grounding.query import Query

__all__ = ["kg_retrieval_benchmark"]


def kg_retrieval_benchmark(
    name: str = "umls", split: str = "test", max_queries: int | None = None, seed: int = 0
) -> RetrievalBenchmark:
    """Anchored retrieval on a real knowledge graph: find the held-out answers of ``(h, r, ?)``.

    The graph is the training split (the observed evidence), directed, node texts the entity
    names with ``_`` read as a space. Each distinct ``(h, r)`` of the held-out ``split`` gives
    one query, text ``"<h> <r>"``, anchored at ``h``; its relevant nodes are every ``t'`` with
    ``(h, r, t')`` in train + valid + test but not in train (the true answers the evidence
    does not state; at least the held-out ``t``), sorted by entity id. Queries keep the order
    of first appearance in the split; ``max_queries`` keeps a seeded random subset of them (in
    that order). Ids are ``"<name>:<split>:<i>"``.

    Some relevant nodes are truly unreachable from the anchor in the observed graph. On UMLS,
    test split (measured with :meth:`grounding.TypedGraph.reachable`): 362 queries, 1,103 relevant
    (query, node) pairs (3.05 per query); 47.4% of the pairs (523) are unreachable within 1
    hop (for 140 queries no relevant node is), 1.1% (12) within 2 hops and 0.09% (1 pair:
    ``classification isa -> intellectual_product``) at any depth. Valid split: 46.7%, 1.3%,
    0.2%. Nations: every relevant node is within 1 hop (its training graph is nearly
    complete). Kinships: none is within 1 hop (each ordered pair of people carries exactly one
    kinship term, so a held-out pair has no training edge at all) and all are within 2.

    Raises:
        ValueError: for an unknown dataset, a split other than ``"valid"`` or ``"test"`` (train
            answers are all stated by the graph), or a negative ``max_queries``.

    Example:
        >>> b = kg_retrieval_benchmark("nations", max_queries=5)
        >>> len(b.queries), b.queries[0].id, b.graph.n_nodes
        (5, 'nations:test:0', 14)
    """

    if split not in ("valid", "test"):
        raise ValueError(f"split must be 'valid' or 'test', got {split!r}")
    if max_queries is not None and max_queries < 0:
        raise ValueError(f"max_queries must be >= 0 or None, got {max_queries!r}")
    kg = load_kg(name)
    graph = kg.graph("train")  # node texts: the names with "_" read as a space
    train = {(int(h), int(r), int(t)) for h, r, t in kg.train}
    answers: dict[tuple[int, int], set[int]] = {}
    for h, r, t in kg.all_triples():
        if (int(h), int(r), int(t)) not in train:
            answers.setdefault((int(h), int(r)), set()).add(int(t))
    pairs = list(dict.fromkeys((int(h), int(r)) for h, r, _ in kg.split(split)))
    if max_queries is not None and max_queries < len(pairs):
        keep = np.sort(np.random.default_rng(seed).choice(len(pairs), max_queries, replace=False))
        pairs = [pairs[i] for i in keep]
    text = [e.replace("_", " ") for e in kg.entities]
    rel_text = [r.replace("_", " ") for r in kg.relations]
    queries = tuple(
        Query(
            text=f"{text[h]} {rel_text[r]}",
            anchor=kg.entities[h],
            relevant=tuple(kg.entities[t] for t in sorted(answers[(h, r)])),
            id=f"{kg.name}:{split}:{i}",
        )
        for i, (h, r) in enumerate(pairs)
    )
    return RetrievalBenchmark(
        f"{kg.name}:{split}",
        graph,
        queries,
        f"{kg.name} knowledge graph (real), train split as evidence",
    )
