"""grounding: evidence-relative grounding of LLM trajectories under incomplete KG evidence.

The public API is flat: ``grounding.<name>`` for every name in the ``__all__`` of the modules
listed in :data:`FLAT_MODULES` (checked by ``tests/test_api.py``), each documented with the
equation or result of the paper it implements (*Grounding LLM Reasoning under Incomplete
Graph Evidence*, Li & Song). ``docs/theory.md`` maps results to code and tests;
``docs/architecture.md`` the layers. Namespaces: :mod:`grounding.alignment`,
:mod:`grounding.regularize`, :mod:`grounding.worlds`, :mod:`grounding.learn`,
:mod:`grounding.retrieval`, :mod:`grounding.datasets`, :mod:`grounding.testing`,
:mod:`grounding.examples`.
"""

from grounding import bounds as _bounds
from grounding import decision as _decision
from grounding import energy as _energy
from grounding import evidence as _evidence
from grounding import geometry as _geometry
from grounding import graph as _graph
from grounding import paths as _paths
from grounding import posterior as _posterior
from grounding import problem as _problem
from grounding import result as _result
from grounding import semiring as _semiring
from grounding import solver as _solver
from grounding.bounds import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.decision import *  # noqa: F403
from grounding.energy import *  # noqa: F403
from grounding.evidence import *  # noqa: F403
from grounding.geometry import *  # noqa: F403
from grounding.graph import *  # noqa: F403
from grounding.paths import *  # noqa: F403
from grounding.posterior import *  # noqa: F403
from grounding.problem import *  # noqa: F403
from grounding.result import *  # noqa: F403
from grounding.semiring import *  # noqa: F403
from grounding.solver import *  # noqa: F403

__version__ = "0.1.0"

#: The modules whose ``__all__`` make up the flat API, bottom floor first.
FLAT_MODULES = (
    _posterior,
    _geometry,
    _semiring,
    _graph,
    _evidence,
    _energy,
    _bounds,
    _decision,
    _paths,
    _problem,
    _result,
    _solver,
)

__all__ = [name for module in FLAT_MODULES for name in module.__all__]
