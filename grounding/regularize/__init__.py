r"""Relation-aware regularization (Sec. 9, App. G): Laplacian energy vs the typed residual.

Node representations are a matrix ``H`` of shape ``[n, d]``. The classical energy
:math:`\mathrm{Tr}(H^\top L H)` (Eq. (23)) rewards adjacent rows for being *equal*
(:mod:`grounding.regularize.smoothing`, with its spectral form, Prop. 16); the typed residual
regularizer :math:`\Omega_R(H)` (Eq. (24)) rewards ``h_v`` for matching the
relation-conditioned prediction :math:`T_r(h_u)` (:mod:`grounding.regularize.typed`, with the
reversal residual of Eq. (25) and the fits of Sec. 9.2). Prop. 10: the two coincide for
identity maps when every undirected edge is stored as both ordered arcs (stored once: a
factor 1/2).

The relation maps are :mod:`grounding.geometry`'s (re-exported here: :func:`identity_map`,
:func:`translation_map`, :func:`linear_map`, :func:`rotation_map`).
"""

from __future__ import annotations

from grounding.geometry import identity_map, linear_map, rotation_map, translation_map
from grounding.regularize import smoothing as _smoothing
from grounding.regularize import typed as _typed
from grounding.regularize.smoothing import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.regularize.typed import *  # noqa: F403

__all__ = [
    *_smoothing.__all__,
    "identity_map",
    "translation_map",
    "linear_map",
    "rotation_map",
    *_typed.__all__,
]
