r"""KG-induced relational geometry (Sec. 5.1): metrics, relation maps, residuals.

A geometric realisation is an entity map :math:`\eta: \mathcal V_R \to \mathcal M`
(an array ``[n_entities, d]``) and relation maps :math:`T_r` (pytrees below). The typed
residual of an edge is Eq. (8); the entity-alignment cost of an assignment is Eq. (9).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from grounding._checks import as_float_array, check_nonnegative_scalar, check_reliability
from grounding._numerics import safe_norm

__all__ = [
    "Metric",
    "euclidean",
    "manhattan",
    "get_metric",
    "Translation",
    "Linear",
    "Rotation",
    "Identity",
    "BilinearEnergy",
    "typed_residual",
    "edge_residuals",
    "entity_cost",
]

Metric = Callable[[jax.Array, jax.Array], jax.Array]


def euclidean(x: ArrayLike, y: ArrayLike) -> jax.Array:
    """:math:`d_{\\mathcal M}(x, y) = \\|x - y\\|_2` over the last axis (zero gradient at x = y)."""
    return safe_norm(jnp.asarray(x) - jnp.asarray(y), axis=-1)


def manhattan(x: ArrayLike, y: ArrayLike) -> jax.Array:
    """:math:`d_{\\mathcal M}(x, y) = \\|x - y\\|_1` over the last axis."""
    return safe_norm(jnp.asarray(x) - jnp.asarray(y), axis=-1, ord=1)


_METRICS: dict[str, Metric] = {"euclidean": euclidean, "manhattan": manhattan}


def get_metric(metric: str | Metric) -> Metric:
    """Resolve a metric given by name (``"euclidean"``, ``"manhattan"``) or as a callable."""
    if callable(metric):
        return metric
    try:
        return _METRICS[metric]
    except KeyError:
        raise ValueError(
            f"metric must be one of {sorted(_METRICS)} or a callable, got {metric!r}"
        ) from None


# ----------------------------------------------------------------------------- relation maps
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Translation:
    """TransE map :math:`T_r(x) = x + t_r` (Sec. 9.4); ``vectors``: ``[n_relations, d]``."""

    vectors: jax.Array
    symmetric = False

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        return jnp.asarray(x) + self.vectors[r]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Linear:
    """Linear map :math:`T_r(x) = W_r x`; ``matrices``: ``[n_relations, d, d]``."""

    matrices: jax.Array
    symmetric = False

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        return jnp.einsum("...ij,...j->...i", self.matrices[r], jnp.asarray(x))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Rotation:
    """RotatE-style map: rotate coordinate pairs ``(x[2i], x[2i+1])`` by ``angles[r, i]``.

    ``angles``: ``[n_relations, d // 2]``; ``d`` must be even.
    """

    angles: jax.Array
    symmetric = False

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape[-1] % 2:
            raise ValueError(f"Rotation needs an even embedding dimension, got {x.shape[-1]}")
        th = self.angles[r]
        a, b = x[..., 0::2], x[..., 1::2]
        c, s = jnp.cos(th), jnp.sin(th)
        out = jnp.stack([c * a - s * b, s * a + c * b], axis=-1)
        return out.reshape(x.shape)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Identity:
    """Identity map :math:`T_r = I` (the untyped / Laplacian case of Prop. 10). Declared symmetric."""

    symmetric = True

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        del r
        return jnp.asarray(x)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class BilinearEnergy:
    """Bilinear compatibility as an energy (Sec. 9.4): :math:`-s_r(u, v) = -h_u^\\top W_r h_v`.

    Not a distance, so it is used as an energy term directly, not inside Eq. (8)'s metric.
    """

    matrices: jax.Array

    def energy(self, r: ArrayLike, hu: ArrayLike, hv: ArrayLike) -> jax.Array:
        return -jnp.einsum(
            "...i,...ij,...j->...", jnp.asarray(hu), self.matrices[r], jnp.asarray(hv)
        )


RelationMap = Translation | Linear | Rotation | Identity


# ----------------------------------------------------------------------------- residuals
def typed_residual(
    eta_u: ArrayLike,
    eta_v: ArrayLike,
    r: ArrayLike,
    relation_map: RelationMap,
    reliability: ArrayLike = 1.0,
    xi: ArrayLike = 1.0,
    metric: str | Metric = "euclidean",
) -> jax.Array:
    r"""Typed residual of an edge ``(u, r, v)``, Eq. (8):

    .. math::
        c_{\mathrm{rel}}(e; R) = d_{\mathcal M}(T_r\,\eta(u), \eta(v)) + \xi\,(-\log w_e).

    Args:
        eta_u, eta_v: ``[..., d]`` embeddings of head and tail.
        r: relation index (broadcastable to the leading shape).
        relation_map: a :class:`Translation`, :class:`Linear`, :class:`Rotation` or :class:`Identity`.
        reliability: :math:`w_e \in (0, 1]`.
        xi: :math:`\xi \ge 0`, the scale of the reliability cost.
        metric: the metric :math:`d_{\mathcal M}`.

    Returns:
        ``[...]`` residuals, zero for a consistent edge with ``w_e = 1``.

    Example:
        >>> import jax.numpy as jnp
        >>> T = Translation(jnp.array([[1.0, 0.0]]))
        >>> float(typed_residual(jnp.zeros(2), jnp.array([1.0, 0.0]), 0, T))
        0.0
    """
    eta_u = as_float_array(eta_u, "eta_u", min_ndim=1)
    eta_v = as_float_array(eta_v, "eta_v", min_ndim=1)
    if eta_u.shape[-1] != eta_v.shape[-1]:
        raise ValueError(f"eta_u and eta_v differ in dimension: {eta_u.shape} vs {eta_v.shape}")
    w = check_reliability(reliability, "reliability")
    xi = check_nonnegative_scalar(xi, "xi")
    d = get_metric(metric)(relation_map.apply(r, eta_u), eta_v)
    return d + xi * (-jnp.log(w))  # Eq. (8)


def edge_residuals(
    graph,
    embeddings: ArrayLike,
    relation_map: RelationMap,
    xi: ArrayLike = 1.0,
    metric: str | Metric = "euclidean",
) -> jax.Array:
    """Eq. (8) for every edge of a :class:`~grounding.TypedGraph`: ``[n_edges]``."""
    emb = as_float_array(embeddings, "embeddings", min_ndim=2)
    if emb.shape[0] != graph.n_nodes:
        raise ValueError(
            f"embeddings must have one row per entity ({graph.n_nodes}), got {emb.shape}"
        )
    return typed_residual(
        emb[graph.head],
        emb[graph.tail],
        graph.relation,
        relation_map,
        jnp.asarray(graph.reliability).astype(emb.dtype),  # keep the embeddings' precision
        xi,
        metric,
    )


def entity_cost(
    psi: ArrayLike, eta_assigned: ArrayLike, metric: str | Metric = "euclidean"
) -> jax.Array:
    r"""Entity-alignment cost of an assignment, Eq. (9):
    :math:`c_{\mathrm{ent}}(X_\rho, a) = \sum_{(i, v)\in a} d_{\mathcal M}(\psi_i(\rho), \eta(v))`.

    Args:
        psi: ``[..., m, d]`` claim/mention representations.
        eta_assigned: ``[..., m, d]`` embeddings of the entities they are assigned to.

    Returns:
        ``[...]`` summed cost.
    """
    psi = as_float_array(psi, "psi", min_ndim=2)
    eta_assigned = as_float_array(eta_assigned, "eta_assigned", min_ndim=2)
    if psi.shape[-2:] != eta_assigned.shape[-2:]:
        raise ValueError(f"psi {psi.shape} and eta_assigned {eta_assigned.shape} do not match")
    return jnp.sum(get_metric(metric)(psi, eta_assigned), axis=-1)  # Eq. (9)
