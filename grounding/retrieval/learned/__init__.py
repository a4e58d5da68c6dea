"""Learned triple retrievers (SubgraphRAG's scorer and the structurally gated GNN):

- :mod:`~grounding.retrieval.learned.features`: the question subgraph (anchors,
  neighbourhood expansion) and its structural features (DDE, structural tags);
- :mod:`~grounding.retrieval.learned.gnn`: the JAX scorers (MLP, gated GNN);
- :mod:`~grounding.retrieval.learned.prepared`: :class:`PreparedQuestions`, questions'
  subgraphs and features built once and padded into a few fixed shapes for training;
- :mod:`~grounding.retrieval.learned.retriever`: :class:`TripleRetriever`, its training and
  checkpoints.
"""

from grounding.retrieval.learned.features import FactGraph, QuestionSubgraph, gold_facts
from grounding.retrieval.learned.gnn import GNNConfig
from grounding.retrieval.learned.prepared import PreparedQuestions
from grounding.retrieval.learned.retriever import RetrieverTrainConfig, TrainLog, TripleRetriever

__all__ = [
    "TripleRetriever",
    "RetrieverTrainConfig",
    "TrainLog",
    "GNNConfig",
    "PreparedQuestions",
    "FactGraph",
    "QuestionSubgraph",
    "gold_facts",
]
