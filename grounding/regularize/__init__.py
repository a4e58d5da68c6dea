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

import warnings

from grounding import geometry as _geometry
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

_BUILTIN_KINDS = {
    "identity": lambda params: identity_map(),
    "translation": translation_map,
    "linear": linear_map,
    "rotation": rotation_map,
}


def _builtin_map(kind: str, params=None):
    """Deprecated: ``BuiltinMap(kind, params)``; use :mod:`grounding.geometry`'s maps."""
    if kind not in _BUILTIN_KINDS:
        raise ValueError(f"kind must be one of {sorted(_BUILTIN_KINDS)}, got {kind!r}")
    return _BUILTIN_KINDS[kind](params)


def __getattr__(name: str):
    if name == "BuiltinMap":
        warnings.warn(
            "grounding.regularize.BuiltinMap is deprecated and will be removed in the next "
            "release; use grounding.geometry.translation_map / linear_map / rotation_map / "
            "identity_map",
            DeprecationWarning,
            stacklevel=2,
        )
        return _builtin_map
    if name == "RelationMap":
        warnings.warn(
            "grounding.regularize.RelationMap is deprecated; use grounding.geometry.RelationMap",
            DeprecationWarning,
            stacklevel=2,
        )
        return _geometry.RelationMap
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
