"""Learned triple retrievers (SubgraphRAG's scorer and the structurally gated GNN):

- :mod:`~grounding.retrieval.learned.features`: the question subgraph (anchors,
  neighbourhood expansion) and its structural features (DDE, structural tags);
- :mod:`~grounding.retrieval.learned.gnn`: the JAX scorers (MLP, gated GNN);
- :mod:`~grounding.retrieval.learned.prepared`: :class:`PreparedQuestions`, questions'
  subgraphs and features built once and padded into a few fixed shapes for training;
- :mod:`~grounding.retrieval.learned.candidates`: :class:`QuestionCandidates`, a question's
  candidate facts (its embedding, anchor facts and candidate subgraph), what the retrievers of
  a graph share;
- :mod:`~grounding.retrieval.learned.retriever`: :class:`TripleRetriever`, the scorer over
  those candidates, its training (:meth:`TripleRetriever.fit`, on the schedule of
  :mod:`~grounding.retrieval.learned.schedule`) and checkpoints.
"""

from grounding.retrieval.learned.candidates import QuestionCandidates
from grounding.retrieval.learned.features import FactGraph, QuestionSubgraph, gold_facts
from grounding.retrieval.learned.gnn import GNNConfig
from grounding.retrieval.learned.prepared import PreparedQuestions
from grounding.retrieval.learned.retriever import TripleRetriever
from grounding.retrieval.learned.schedule import RetrieverTrainConfig, TrainLog

__all__ = [
    "TripleRetriever",
    "RetrieverTrainConfig",
    "TrainLog",
    "GNNConfig",
    "PreparedQuestions",
    "QuestionCandidates",
    "FactGraph",
    "QuestionSubgraph",
    "gold_facts",
]
