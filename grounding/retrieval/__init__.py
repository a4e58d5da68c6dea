"""Retrieval layer: retrievers that turn a query into ranked nodes and an evidence state.

Path-Constrained Retrieval (hard and soft), the PCR paper's baselines, text encoders and
BM25, and the paper's metrics. See :mod:`grounding.retrieval.retrievers`.
"""

from grounding.retrieval import graph as _graph
from grounding.retrieval import metrics as _metrics
from grounding.retrieval import retrievers as _retrievers
from grounding.retrieval import text as _text
from grounding.retrieval.graph import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.retrieval.metrics import *  # noqa: F403
from grounding.retrieval.retrievers import *  # noqa: F403
from grounding.retrieval.text import *  # noqa: F403

__all__ = [*_graph.__all__, *_text.__all__, *_retrievers.__all__, *_metrics.__all__]
