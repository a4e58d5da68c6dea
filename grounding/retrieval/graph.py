"""Deprecated module: ``Query`` moved to :mod:`grounding.retrieval.base`, ``TextGraph`` is
replaced by :class:`grounding.TypedGraph` (with node texts), ``UNREACHABLE`` is
:data:`grounding.UNREACHABLE`. Importing this module warns; its names work for one release."""

import warnings

from grounding.retrieval._deprecated import TextGraph  # noqa: F401
from grounding.retrieval.base import Query  # noqa: F401
from grounding.semiring import UNREACHABLE  # noqa: F401

warnings.warn(
    "grounding.retrieval.graph is deprecated and will be removed in the next release; "
    "use grounding.retrieval.Query and grounding.TypedGraph",
    DeprecationWarning,
    stacklevel=2,
)
