"""Retrieval: retrievers that turn a query into ranked nodes (or triples) and an
:class:`~grounding.EvidenceState` for :func:`grounding.ground`, by kind.

- :mod:`~grounding.retrieval.base`: :class:`Query`, :class:`Retrieval`, the
  :class:`Retriever` protocol, :class:`TextIndex`, the base classes — where a new retriever
  starts;
- text and graph retrieval: :mod:`~grounding.retrieval.pcr` (hard :class:`PCR`),
  :mod:`~grounding.retrieval.chain_walks` (the walks of predicted relation chains,
  :class:`ChainWalks`),
  :mod:`~grounding.retrieval.soft_pcr` (soft :class:`SoftPCR`, grounded by the solver),
  :mod:`~grounding.retrieval.baselines` (vector, BM25, hybrid), :mod:`~grounding.retrieval.ann`
  (approximate search, optional extra ``ann``), :mod:`~grounding.retrieval.community`
  (hierarchical Leiden communities, global retrieval), :mod:`~grounding.retrieval.rerank`
  (dependency-aware reranking), :mod:`~grounding.retrieval.linking` (the entities a free-text
  question names, by the linking rule of :mod:`grounding.language`);
- :mod:`~grounding.retrieval.hyperedge_search`: knowledge-hypergraph retrieval (entity-weighted
  overlap beam search, plan context, target hyperedges) and the HyperGraphRAG baseline;
- :mod:`~grounding.retrieval.learned`: learned triple retrievers (question subgraphs, the
  JAX scorers, training and checkpoints);
- :mod:`~grounding.retrieval.metrics`: retrieval metrics and :func:`evaluate_retrieval`.
"""

from grounding.retrieval import learned
from grounding.retrieval.ann import ANNIndex
from grounding.retrieval.base import (
    AnchoredRetriever,
    BaseRetriever,
    Query,
    Retrieval,
    Retriever,
    TextIndex,
    subgraph_evidence,
)
from grounding.retrieval.baselines import BM25Retriever, HybridRetriever, VectorRetriever
from grounding.retrieval.chain_walks import ChainWalks
from grounding.retrieval.community import (
    Communities,
    Community,
    CommunityRetriever,
    LLMSummarizer,
)
from grounding.retrieval.hyperedge_search import (
    HypergraphIndex,
    HyperPath,
    LLMRelevance,
    beam_search,
    hypergraphrag,
    plan_context,
    target_hyperedges,
)
from grounding.retrieval.learned import GNNConfig, RetrieverTrainConfig, TripleRetriever
from grounding.retrieval.linking import EntityLinker
from grounding.retrieval.metrics import (
    answer_recall_at_k,
    distance_penalty,
    evaluate_retrieval,
    recall_at_k,
    relevance_at_k,
    structural_consistency,
    summarize_retrieval,
)
from grounding.retrieval.pcr import PCR
from grounding.retrieval.rerank import dependency_rerank
from grounding.retrieval.soft_pcr import SoftPCR

__all__ = [
    # base
    "Query",
    "Retrieval",
    "Retriever",
    "BaseRetriever",
    "AnchoredRetriever",
    "TextIndex",
    "subgraph_evidence",
    # text and graph
    "PCR",
    "ChainWalks",
    "SoftPCR",
    "VectorRetriever",
    "BM25Retriever",
    "HybridRetriever",
    "ANNIndex",
    "Community",
    "Communities",
    "CommunityRetriever",
    "LLMSummarizer",
    "dependency_rerank",
    "EntityLinker",
    # hypergraph
    "HypergraphIndex",
    "HyperPath",
    "beam_search",
    "plan_context",
    "target_hyperedges",
    "hypergraphrag",
    "LLMRelevance",
    # learned
    "learned",
    "TripleRetriever",
    "RetrieverTrainConfig",
    "GNNConfig",
    # metrics
    "relevance_at_k",
    "recall_at_k",
    "answer_recall_at_k",
    "structural_consistency",
    "distance_penalty",
    "evaluate_retrieval",
    "summarize_retrieval",
]
