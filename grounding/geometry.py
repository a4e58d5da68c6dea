r"""KG-induced relational geometry (Sec. 5.1): metrics, relation maps, residuals.

A geometric realization is an entity map :math:`\eta: \mathcal V_R \to \mathcal M`
(an array ``[n_entities, d]``) and relation maps :math:`T_r`. The relation maps here are the
package's one family (used by the energies, the typed regularizer of Eq. (24) and the learned
KG embeddings alike): :class:`Translation` (TransE), :class:`Linear`, :class:`Rotation`
(RotatE) and :class:`Identity`, pytrees of their parameters, built directly or by the
validating constructors :func:`translation_map`, :func:`linear_map`, :func:`rotation_map`,
:func:`identity_map`. The typed residual of an edge is Eq. (8); the entity-alignment cost of
an assignment is Eq. (9).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from grounding._checks import (
    as_float_array,
    check_float_array,
    check_index_array,
    check_nonnegative_scalar,
    check_reliability,
)
from grounding._numerics import safe_norm

__all__ = [
    "Metric",
    "euclidean",
    "manhattan",
    "complex_l1",
    "get_metric",
    "Translation",
    "Linear",
    "Rotation",
    "Identity",
    "RelationMap",
    "identity_map",
    "translation_map",
    "linear_map",
    "rotation_map",
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


def complex_l1(x: ArrayLike, y: ArrayLike) -> jax.Array:
    r"""RotatE's distance: coordinates read as complex numbers ``x[2i] + i x[2i+1]``,
    :math:`d(x, y) = \sum_i |x_i - y_i|` (zero gradient at x = y). A metric.

    References:
        Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in Complex
            Space", 2019.
    """
    diff = jnp.asarray(x) - jnp.asarray(y)
    if diff.shape[-1] % 2:
        raise ValueError(f"complex_l1 needs an even dimension, got {diff.shape[-1]}")
    pairs = diff.reshape(*diff.shape[:-1], -1, 2)
    return jnp.sum(safe_norm(pairs, axis=-1), axis=-1)


_METRICS: dict[str, Metric] = {
    "euclidean": euclidean,
    "manhattan": manhattan,
    "complex_l1": complex_l1,
}


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
class _MapCall:
    """Shared by the built-in maps: ``T(r, x)`` validates its inputs and runs compiled.

    ``apply(r, x)`` is the bare kernel (no checks; for use inside ``jit``). Calling the map
    checks that ``r`` holds relation ids in range and ``x`` is finite (on concrete input),
    then runs :meth:`apply` in one compiled program per input shape.
    """

    symmetric = False

    @property
    def n_relations(self) -> int | None:
        leaves = jax.tree_util.tree_leaves(self)
        return int(jnp.shape(leaves[0])[0]) if leaves else None

    def __call__(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        r = check_index_array(r, "relation", self.n_relations)
        return _apply_compiled(self, r, check_float_array(x, "x"))


@jax.jit
def _apply_compiled(relation_map, r, x):
    return relation_map.apply(r, x)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Translation(_MapCall):
    """TransE map :math:`T_r(x) = x + t_r` (Sec. 9.4); ``vectors``: ``[n_relations, d]``.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (8), Sec. 9.4.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013.
    """

    vectors: jax.Array

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        return jnp.asarray(x) + jnp.asarray(self.vectors)[r]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Linear(_MapCall):
    """Linear map :math:`T_r(x) = W_r x`; ``matrices``: ``[n_relations, d, d]``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (8), Sec. 9.4.
    """

    matrices: jax.Array

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        return jnp.einsum("...ij,...j->...i", jnp.asarray(self.matrices)[r], jnp.asarray(x))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Rotation(_MapCall):
    r"""RotatE map: rotate coordinate pairs ``(x[2i], x[2i+1])`` by ``angles[r, i]``, i.e.
    complex multiplication by :math:`e^{i\theta_r}` (Sun et al., 2019).

    ``angles``: ``[n_relations, d // 2]``; ``x`` must have dimension ``d``.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (8), Sec. 9.4.
        - Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in
          Complex Space", 2019.
    """

    angles: jax.Array

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        x = jnp.asarray(x)
        k = jnp.shape(self.angles)[-1]
        if x.shape[-1] != 2 * k:
            raise ValueError(
                f"Rotation: x has dimension {x.shape[-1]}, the angles theta [R, {k}] need {2 * k}"
            )
        th = jnp.asarray(self.angles)[r]
        a, b = x[..., 0::2], x[..., 1::2]
        c, s = jnp.cos(th), jnp.sin(th)
        return jnp.stack([c * a - s * b, s * a + c * b], axis=-1).reshape(x.shape)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Identity(_MapCall):
    """Identity map :math:`T_r = I` (the untyped / Laplacian case of Prop. 10). Declared symmetric.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 10.
    """

    symmetric = True

    def apply(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        del r
        return jnp.asarray(x)


RelationMap = Translation | Linear | Rotation | Identity
"""The built-in relation maps :math:`T_r`. Functions that take a relation map also accept any
callable ``(r, x) -> T_r(x)`` that broadcasts over leading axes, where they say so."""


def identity_map() -> Identity:
    """:math:`T_r = I` for every ``r``: the untyped / Laplacian case (Prop. 10).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 10.

    Example:
        >>> identity_map()(0, jnp.ones(2)).tolist()
        [1.0, 1.0]
    """
    return Identity()


def translation_map(r_vectors: ArrayLike) -> Translation:
    """TransE map :math:`T_r(x) = x + t_r` (Sec. 9.2, 9.4); ``r_vectors``: ``[n_relations, d]``.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Sec. 9.2, 9.4.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013.

    Example:
        >>> translation_map([[1.0, 2.0]])(0, jnp.zeros(2)).tolist()
        [1.0, 2.0]
    """
    return Translation(check_float_array(r_vectors, "r_vectors", ndim=2))


def linear_map(W: ArrayLike) -> Linear:
    """Linear map :math:`T_r(x) = W_r x` (Sec. 9.4); ``W``: ``[n_relations, d, d]``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Sec. 9.4.

    Example:
        >>> linear_map([[[0.0, 1.0], [1.0, 0.0]]])(0, jnp.array([1.0, 2.0])).tolist()
        [2.0, 1.0]
    """
    W = check_float_array(W, "W", ndim=3)
    if W.shape[1] != W.shape[2]:
        raise ValueError(f"W must hold square [d, d] matrices, got shape {W.shape}")
    return Linear(W)


def rotation_map(theta: ArrayLike) -> Rotation:
    """RotatE map: rotate ``(x[2i], x[2i+1])`` by ``theta[r, i]``; ``theta``: ``[R, d // 2]``.

    References:
        Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in Complex
            Space", 2019.

    Example:
        >>> y = rotation_map([[jnp.pi / 2]])(0, jnp.array([1.0, 0.0]))
        >>> [round(float(v), 6) + 0.0 for v in y]
        [0.0, 1.0]
    """
    return Rotation(check_float_array(theta, "theta", ndim=2))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class BilinearEnergy:
    """Bilinear compatibility as an energy (Sec. 9.4): :math:`-s_r(u, v) = -h_u^\\top W_r h_v`.

    Not a distance, so it is used as an energy term directly, not inside Eq. (8)'s metric.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (8), Sec. 9.4 (bilinear compatibility).
    """

    matrices: jax.Array

    def energy(self, r: ArrayLike, hu: ArrayLike, hv: ArrayLike) -> jax.Array:
        return -jnp.einsum(
            "...i,...ij,...j->...", jnp.asarray(hu), self.matrices[r], jnp.asarray(hv)
        )


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

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (8).

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
    graph: Any,  # a grounding.TypedGraph (a higher floor: not importable here)
    embeddings: ArrayLike,
    relation_map: RelationMap,
    xi: ArrayLike = 1.0,
    metric: str | Metric = "euclidean",
) -> jax.Array:
    """Eq. (8) for every edge of a :class:`~grounding.TypedGraph`: ``[n_edges]``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (8).
    """
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

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (9).
    """
    psi = as_float_array(psi, "psi", min_ndim=2)
    eta_assigned = as_float_array(eta_assigned, "eta_assigned", min_ndim=2)
    if psi.shape[-2:] != eta_assigned.shape[-2:]:
        raise ValueError(f"psi {psi.shape} and eta_assigned {eta_assigned.shape} do not match")
    return jnp.sum(get_metric(metric)(psi, eta_assigned), axis=-1)  # Eq. (9)
