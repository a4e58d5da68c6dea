"""One small world that the four QA systems of ``grounding.qa`` can all answer, and the four
systems built on it with one ``GroundingConfig`` (shared by the agreement and calibration
tests)."""

from __future__ import annotations

import numpy as np

from grounding.datasets import KGQuestion
from grounding.qa import (
    Candidates,
    GroundedQA,
)
from grounding.retrieval import TextIndex

# One small world the four systems can all answer: alice received prize1 (certain) and prize2
# (reliability 0.5: a walk of energy log 2 ~ 0.69 < kappa = 1, so supported but not at
# eps = 0); film1 is what the award was for, so the claim "alice -award-> film1" has no walk.
# The hypergraph carries the same facts as statements (film1 a qualifier of prize1's
# statement): PRoH's claims run over role relations, and its evidence (the bipartite graph of
# the hyperedges its beam search visits, here all of them) gives each answer entity the same
# walk energies, so the four systems are compared candidate by candidate by answer entity.
WORLD_PRIOR = {"prize1": 0.2, "prize2": 0.5, "film1": 0.3}
_WORLD_TEXT = "Which award did alice receive?"


def _world_graph():
    from grounding import TypedGraph

    return TypedGraph.from_triples(
        [
            ("alice", "award", "prize1"),
            ("alice", "award", "prize2"),
            ("alice", "for_work", "film1"),
        ],
        reliability=[1.0, 0.5, 1.0],
        entities=["alice", "prize1", "prize2", "film1", "bob"],
    )


def _world_hypergraph():
    from grounding.hypergraph import KnowledgeHypergraph

    return KnowledgeHypergraph.from_statements(
        [("alice", "award", "prize1", (("for_work", "film1"),)), ("alice", "award", "prize2", ())],
        reliability=[1.0, 0.5],
    )


class _WorldModel:
    """The candidate model: the same three answers and prior for every question."""

    def propose(self, question, k):
        return Candidates.from_scores(list(WORLD_PRIOR), np.log(list(WORLD_PRIOR.values())), k=k)


class _WorldAnswerer:
    """BlindQA's answerer: the same prior along any chain (entities outside it: -inf)."""

    def __init__(self, entities):
        self.entities = tuple(entities)

    def log_scores(self, topic, chain):
        return np.array([np.log(WORLD_PRIOR[e]) if e in WORLD_PRIOR else -np.inf
                         for e in self.entities])  # fmt: skip


class _WorldPredictor:
    """BlindQA's predictor: the chain ``award`` with probability 1."""

    def predict(self, questions, k):
        return [[(("award",), 1.0)] for _ in questions]


class _WholeGraph:
    """A retriever whose evidence is the whole graph."""

    def __init__(self, graph):
        self.graph = graph

    def retrieve(self, query, k):
        from grounding import EvidenceState
        from grounding.retrieval import Retrieval

        n = self.graph.n_nodes
        return Retrieval(query, np.arange(n), np.zeros(n), self.graph, "whole",
                         given_evidence=EvidenceState(self.graph))  # fmt: skip


class _OnePlan:
    def __init__(self, plan):
        self._plan = plan

    def plan(self, question):
        return self._plan


def four_systems(config, **kw):
    """The world's question through GroundedQA, BlindQA, PankRAG and PRoH with ``config``
    (and the keywords ``kw`` every system takes, e.g. ``release_programs``): each outcome
    (from ``answer_batch`` of the one question) and the PRoH step's problem and evidence
    graph."""
    from grounding.hypergraph import hop_relations
    from grounding.plans import Plan, SubQuestion
    from grounding.qa import BlindQA, PankRAG, PRoH
    from grounding.query import BlindQuestion
    from grounding.retrieval import HypergraphIndex

    graph, kh = _world_graph(), _world_hypergraph()
    q = KGQuestion("q", _WORLD_TEXT, "alice", ("award",), ("prize1",), ("prize1",), "test")
    step = SubQuestion("q1", _WORLD_TEXT, anchors=("alice",), relations=("award",))
    roles = hop_relations("subject:award", "object:award")
    hstep = SubQuestion("q1", _WORLD_TEXT, anchors=("alice",), relations=roles)
    index = HypergraphIndex(kh)
    systems = {
        "GroundedQA": (GroundedQA(_WorldModel(), _WholeGraph(graph), config, **kw), q),
        "BlindQA": (
            BlindQA(
                _WorldAnswerer(graph.entities),
                _WorldPredictor(),
                _WholeGraph(graph),
                config,
                **kw,
            ),
            BlindQuestion(_WORLD_TEXT, "alice"),
        ),  # fmt: skip
        "PankRAG": (
            PankRAG(
                _OnePlan(Plan(_WORLD_TEXT, (step,))),
                _WorldModel(),
                TextIndex(graph),
                config,
                **kw,
            ),
            q,
        ),  # fmt: skip
        "PRoH": (PRoH(_OnePlan(Plan(_WORLD_TEXT, (hstep,))), index, config, **kw), q),
    }
    outs = {
        name: system.answer_batch([question])[0] for name, (system, question) in systems.items()
    }
    return outs, index.graph
