"""Learned realizations: KG embeddings (the models: :mod:`~grounding.learn.embedding` and
:mod:`~grounding.learn.reciprocal`; their training: :mod:`~grounding.learn.kge` and
:mod:`~grounding.learn.onevsall`), filtered ranking
(:mod:`~grounding.learn.linkpred`) and closed-form fits
(:mod:`~grounding.learn.least_squares`).

Every learned model exposes its relation maps as :mod:`grounding.geometry` maps, so it plugs
into the core wherever a realization is taken.
"""

from grounding.learn import embedding as _embedding
from grounding.learn import kge as _kge
from grounding.learn import least_squares as _least_squares
from grounding.learn import linkpred as _linkpred
from grounding.learn import onevsall as _onevsall
from grounding.learn import reciprocal as _reciprocal
from grounding.learn.embedding import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.learn.kge import *  # noqa: F403
from grounding.learn.least_squares import *  # noqa: F403
from grounding.learn.linkpred import *  # noqa: F403
from grounding.learn.onevsall import *  # noqa: F403
from grounding.learn.reciprocal import *  # noqa: F403

__all__ = [
    *_embedding.__all__,
    *_kge.__all__,
    *_reciprocal.__all__,
    *_onevsall.__all__,
    *_linkpred.__all__,
    *_least_squares.__all__,
]
