r"""Paths: grounding a claim chain over all walks, path families by enumeration, and the best
supporting walks of a report.

A trajectory asserting ``z_0 -r_1-> z_1 ... -r_T-> z_T`` is grounded against every
``T``-hop walk :math:`\gamma = (v_0, e_1, v_1, \dots, e_T, v_T)` of :math:`G_R` with the
monotone one-to-one assignment (mention ``t`` <-> node ``v_t``), which makes Eq. (10)
additive along the walk:

.. math::
    e_\gamma = \sum_{t=0}^T d_{\mathcal M}(\psi_t, \eta(v_t))
             + \sum_{t=1}^T \big[\alpha\,c_{\mathrm{rel}}(e_t; R) + \mathrm{mismatch}(r_t, r_{e_t})\big].

Eq. (11) is the minimum over walks and Eq. (13) the entropic aggregate.

- :mod:`~grounding.paths.costs`: the node and step costs of a chain;
- :mod:`~grounding.paths.chains`: :func:`chain_energy` over all walks by the semiring
  recursion of :mod:`grounding.semiring` (``O(T |E|)``);
- :mod:`~grounding.paths.walks`: :func:`chain_path_energies` and the walk families by
  enumeration (``O(deg^T)``: the test oracle, and the only way to restrict to simple paths);
  walks may repeat nodes (cycles), :func:`simple_paths` filters to node-distinct paths;
- :mod:`~grounding.paths.kbest`: :func:`top_paths`, the best supporting walks of a report by
  a k-best recursion with backtracking.
"""

from grounding.paths import chains as _chains
from grounding.paths import kbest as _kbest
from grounding.paths import walks as _walks
from grounding.paths.chains import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.paths.kbest import *  # noqa: F403
from grounding.paths.walks import *  # noqa: F403

__all__ = [*_walks.__all__, *_chains.__all__, *_kbest.__all__]
