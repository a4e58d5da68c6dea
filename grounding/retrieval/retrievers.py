"""Deprecated module: split into :mod:`grounding.retrieval.base` (``Retrieval``,
``Retriever``, ``TextIndex``), :mod:`grounding.retrieval.pcr` (``PCR``, ``SoftPCR``) and
:mod:`grounding.retrieval.baselines`. Importing this module warns; its names work for one
release."""

import warnings

from grounding.retrieval.base import Retrieval, Retriever, TextIndex  # noqa: F401
from grounding.retrieval.baselines import (  # noqa: F401
    BM25Retriever,
    HybridRetriever,
    VectorRetriever,
)
from grounding.retrieval.pcr import PCR, SoftPCR  # noqa: F401

warnings.warn(
    "grounding.retrieval.retrievers is deprecated and will be removed in the next release; "
    "import from grounding.retrieval",
    DeprecationWarning,
    stacklevel=2,
)
