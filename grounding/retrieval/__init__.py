"""Retrieval layer: retrievers that turn a query into ranked nodes (or triples) and an
:class:`~grounding.EvidenceState` for :func:`grounding.ground`.

- :mod:`~grounding.retrieval.base`: :class:`Query`, :class:`Retrieval`, the
  :class:`Retriever` protocol, :class:`TextIndex`, the base classes — where a new retriever
  starts;
- :mod:`~grounding.retrieval.pcr`: Path-Constrained Retrieval, hard (:class:`PCR`) and soft
  (:class:`SoftPCR`, through :func:`grounding.ground`);
- :mod:`~grounding.retrieval.ann`: :class:`ANNIndex`, approximate search for
  ``PCR(search="ann")`` (optional extra ``ann``: faiss);
- :mod:`~grounding.retrieval.baselines`: vector, BM25 and hybrid baselines;
- :mod:`~grounding.retrieval.plan`: :class:`Plan`, sub-question DAGs for planners;
- :mod:`~grounding.retrieval.planner`: planners (templated, heuristic free text, LLM);
- :mod:`~grounding.retrieval.community`: hierarchical Leiden communities, global retrieval;
- :mod:`~grounding.retrieval.rerank`: PankRAG's dependency-aware reranker;
- :mod:`~grounding.retrieval.proh`: knowledge-hypergraph retrieval (EWO beam search, plan
  context, target hyperedges) for PRoH, and the HyperGraphRAG baseline;
- :mod:`~grounding.retrieval.subgraph`, :mod:`~grounding.retrieval.gnn`,
  :mod:`~grounding.retrieval.learned`: learned triple retrievers (SubgraphRAG and the
  structurally gated GNN): question subgraphs, the JAX scorers, training and checkpoints;
- :mod:`~grounding.retrieval.metrics`: the PCR paper's metrics and :func:`evaluate_retrieval`;
- :mod:`~grounding.retrieval.text`: encoders (offline hashing, optional MiniLM), cache, BM25.
"""

import warnings as _warnings

from grounding.retrieval import _deprecated
from grounding.retrieval import ann as _ann
from grounding.retrieval import base as _base
from grounding.retrieval import baselines as _baselines
from grounding.retrieval import community as _community
from grounding.retrieval import learned as _learned
from grounding.retrieval import metrics as _metrics
from grounding.retrieval import pcr as _pcr
from grounding.retrieval import plan as _plan
from grounding.retrieval import planner as _planner
from grounding.retrieval import proh as _proh
from grounding.retrieval import rerank as _rerank
from grounding.retrieval import text as _text
from grounding.retrieval.ann import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.retrieval.base import *  # noqa: F403
from grounding.retrieval.baselines import *  # noqa: F403
from grounding.retrieval.community import *  # noqa: F403
from grounding.retrieval.gnn import GNNConfig
from grounding.retrieval.learned import *  # noqa: F403
from grounding.retrieval.metrics import *  # noqa: F403
from grounding.retrieval.pcr import *  # noqa: F403
from grounding.retrieval.plan import *  # noqa: F403
from grounding.retrieval.planner import *  # noqa: F403
from grounding.retrieval.proh import *  # noqa: F403
from grounding.retrieval.rerank import *  # noqa: F403
from grounding.retrieval.subgraph import FactGraph, QuestionSubgraph, gold_facts
from grounding.retrieval.text import *  # noqa: F403
from grounding.semiring import UNREACHABLE  # noqa: F401  (the engine's one constant)

__all__ = [
    *_base.__all__,
    *_pcr.__all__,
    *_ann.__all__,
    *_baselines.__all__,
    *_plan.__all__,
    *_planner.__all__,
    *_community.__all__,
    *_rerank.__all__,
    *_proh.__all__,
    *_learned.__all__,
    "GNNConfig",
    "FactGraph",
    "QuestionSubgraph",
    "gold_facts",
    *_metrics.__all__,
    *_text.__all__,
]


def __getattr__(name: str):
    if name == "TextGraph":  # warns when used
        return _deprecated.TextGraph
    if name == "evaluate":
        _warnings.warn(
            "grounding.retrieval.evaluate is deprecated and will be removed in the next "
            "release; use evaluate_retrieval",
            DeprecationWarning,
            stacklevel=2,
        )
        return _metrics.evaluate_retrieval
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
