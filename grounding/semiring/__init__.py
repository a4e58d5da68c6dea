r"""The path engine: all-walks path aggregation by sparse semiring dynamic programming
(Eqs. (10), (11), (13)), its gradient (Prop. 2), and reachability.

When the path prior factorises over steps, :math:`\omega(\gamma)=\prod_{e\in\gamma}\omega(e)`,
and the path energy is additive over edges (Eq. (10)), the entropic aggregate of Eq. (13)
over *all walks* from a source ``s`` to a node ``v`` with ``1..K`` hops is a ``K``-step
forward recursion in the log semiring:

.. math::
    a_0(u) = \log\delta_{u,s}, \qquad
    a_t(v) = \log\!\!\sum_{e=(u\to v)}\! \exp\big(a_{t-1}(u) + \log\omega(e) - c(e)/\tau\big),
    \qquad
    E(s, v) = -\tau \log \sum_{t=1}^{K} e^{a_t(v)} ,

and for :math:`\tau = 0` the min-plus (Viterbi) recursion of Eq. (11) with
:math:`a_t(v) = \max_e [a_{t-1}(u) - c(e)]` over edges of non-zero prior weight. The work is
``O(K |E|)`` per source instead of the ``O(deg^K)`` of enumeration, every step is
differentiable, and the gradient of :math:`E(s, v)` with respect to the edge costs is the
expected edge usage under the optimizer :math:`\nu^*` of Prop. 2 (:func:`edge_usage`).

The recursion runs over *walks* (nodes may repeat). Simple paths — the family
:func:`grounding.paths.simple_paths` enumerates — have no such factorization; on a DAG the two
families coincide.

Layout. Values are kept node-major, ``[n_nodes, n_sources]``, so one gather moves a
contiguous row of source values. Modules, each one idea, imported bottom-up:

- :mod:`~grounding.semiring.kernels`: one hop (row reductions; the segment layout);
- :mod:`~grounding.semiring.fused`: the fused CPU kernel (numba): a hop, its backward pass,
  and the whole ``K``-hop recursion in one host call;
- :mod:`~grounding.semiring.recursion`: the ``K``-hop recursion, its gradient, BFS;
- :mod:`~grounding.semiring.layout`: :class:`EdgeIndex`, the layout built once per graph,
  with the fused backend on CPU and the ELL blocks (XLA) on GPU/TPU (used automatically
  from ``ELL_MIN_EDGES`` edges);
- :mod:`~grounding.semiring.fields`: the public functions on edge arrays;
- :mod:`~grounding.semiring.reach`: reachable sets and hop distances
  (:class:`Reachability`). Measured speed: ``docs/performance.md``.
"""

from grounding.semiring import fields as _fields
from grounding.semiring import layout as _layout
from grounding.semiring import reach as _reach
from grounding.semiring.fields import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.semiring.layout import *  # noqa: F403
from grounding.semiring.reach import *  # noqa: F403
from grounding.semiring.recursion import UNREACHABLE  # noqa: F401  (importable; a constant, not in __all__)

__all__ = [*_layout.__all__, *_fields.__all__, *_reach.__all__]
