r"""The KG-embedding model: an entity map :math:`\eta` (``[n, d]``) with relation maps
:math:`T_r` of one family, the relation maps of :mod:`grounding.geometry`:

- ``"transe"``: translation :math:`T_r x = x + t_r` (Bordes et al., 2013), entities kept on
  the unit sphere;
- ``"rotate"``: rotation of coordinate pairs, i.e. complex multiplication by
  :math:`e^{i\theta_r}` (Sun et al., 2019), with RotatE's distance (sum of complex moduli);
- ``"linear"``: :math:`T_r x = W_r x`.

The energy of a triple is its typed residual, Eq. (8) with :math:`w_e = 1`:
:math:`E(u, r, v) = d_{\mathcal M}(T_r \eta_u, \eta_v)`. A chain of relations is answered by
composing their maps (:meth:`KGEModel.compose`) and scoring every entity against the result
(:meth:`KGEModel.answer_scores`). Training: :mod:`grounding.learn.kge`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import check_int
from grounding.geometry import Linear, RelationMap, Rotation, Translation, get_metric

__all__ = ["KGEModel", "init_model"]

KINDS = ("transe", "rotate", "linear")
_MAP_CLASS = {"transe": Translation, "rotate": Rotation, "linear": Linear}


# ----------------------------------------------------------------------------- the model
@partial(
    jax.tree_util.register_dataclass, data_fields=["entity", "relation"], meta_fields=["kind", "p"]
)
@dataclasses.dataclass(frozen=True)
class KGEModel:
    """Entity embeddings ``entity [n, d]`` and relation parameters of one map family (a pytree).

    ``relation``: ``[R, d]`` translations (transe), ``[R, d // 2]`` angles (rotate) or
    ``[R, d, d]`` matrices (linear). ``p``: the norm of :math:`d_{\\mathcal M}` (1 or 2;
    ignored by rotate, which uses the sum of complex moduli).

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (8), Sec. 9.4.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013 (transe).
        - Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in
          Complex Space", 2019 (rotate).
    """

    kind: str
    entity: jax.Array
    relation: jax.Array
    p: int = 2

    @property
    def relation_map(self) -> RelationMap:
        """The learned maps :math:`T_r` as a :mod:`grounding.geometry` map (usable wherever the
        core takes relation maps: Eq. (8) residuals, Eq. (24), grounding realizations)."""
        return _MAP_CLASS[self.kind](self.relation)

    def geometry_map(self) -> RelationMap:
        """Same as :attr:`relation_map` (kept for compatibility: there is one map family)."""
        return self.relation_map

    @property
    def metric_name(self) -> str:
        """:math:`d_{\\mathcal M}` by name, for :func:`grounding.geometry.get_metric`."""
        if self.kind == "rotate":
            return "complex_l1"
        return "manhattan" if self.p == 1 else "euclidean"

    def metric(self, x: jax.Array, y: jax.Array) -> jax.Array:
        """:math:`d_{\\mathcal M}` over the last axis (a metric in every case): the ``p``-norm,
        or for rotate the sum over complex coordinates of :math:`|z|`."""
        return get_metric(self.metric_name)(x, y)

    def energy(self, triples: jax.Array) -> jax.Array:
        """Eq. (8) with :math:`w = 1`: ``[..., 3]`` id triples -> ``[...]`` energies."""
        h, r, t = triples[..., 0], triples[..., 1], triples[..., 2]
        return self.metric(self.relation_map.apply(r, self.entity[h]), self.entity[t])

    def compose(self, x: jax.Array, rows: Sequence[int]) -> jax.Array:
        """:math:`T_{r_T} \\circ \\dots \\circ T_{r_1}\\,x` for the relation rows ``rows``
        (``r_1`` first); a row ``R + r`` (``R`` relations) is the inverse map
        :math:`T_r^{-1}` (minus the translation, minus the angle). Translations and rotations
        only (a linear map has no inverse here: ``ValueError``)."""
        if self.kind == "linear":
            raise ValueError("compose: linear maps are not composed (no inverse map)")
        n = self.relation.shape[0]
        rows = [check_int(r, "row", 0) for r in rows]
        if any(r >= 2 * n for r in rows):
            raise ValueError(f"compose: relation rows must lie in [0, {2 * n}), got {rows}")
        for r in rows:  # T_{r^-1} = T_r^{-1}: the negated translation or angles
            params = self.relation[r] if r < n else -self.relation[r - n]
            x = _MAP_CLASS[self.kind](params[None]).apply(0, x)
        return x

    def answer_scores(self, x: jax.Array) -> np.ndarray:
        """``[n]`` float64 scores :math:`-d_{\\mathcal M}(x, \\eta(e))` of every entity as
        the answer to a composed query ``x`` (:meth:`compose`)."""
        return -np.asarray(self.metric(x[None, :], self.entity), np.float64)

    def candidate_energies(self, side: str, anchor: jax.Array, r: jax.Array) -> jax.Array:
        """``[B, n]`` energies of every entity as the tail (``side="tail"``, anchor = head)
        or as the head (``side="head"``, anchor = tail) of relation ``r``."""
        return _candidates(self, side, anchor, r)


@partial(jax.jit, static_argnums=1)
def _candidates(model: KGEModel, side: str, anchor, r):
    E = model.entity
    if side == "tail":  # d(T_r eta_h, eta_e) for every e
        x = model.relation_map.apply(r, E[anchor])
        return model.metric(x[:, None, :], E[None, :, :])
    TE = model.relation_map.apply(r[:, None], jnp.broadcast_to(E, (r.shape[0], *E.shape)))
    return model.metric(TE, E[anchor][:, None, :])  # d(T_r eta_e, eta_t) for every e


def init_model(
    kind: str, n_entities: int, n_relations: int, dim: int, seed: int = 0, p: int = 2
) -> KGEModel:
    """Random initial model: Xavier-uniform entities (unit-normalized for transe), translations
    likewise, angles uniform in :math:`[-\\pi, \\pi)`, linear maps :math:`I + ` small noise."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "rotate" and dim % 2:
        raise ValueError(f"rotate needs an even dim, got {dim}")
    for name, v in (("n_entities", n_entities), ("n_relations", n_relations), ("dim", dim)):
        check_int(v, name)
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p!r}")
    k_e, k_r = jax.random.split(jax.random.PRNGKey(seed))
    bound = float(np.sqrt(6.0 / (n_entities + dim)))
    entity = jax.random.uniform(k_e, (n_entities, dim), minval=-bound, maxval=bound)
    if kind == "transe":
        entity = _unit_rows(entity)
        relation = jax.random.uniform(k_r, (n_relations, dim), minval=-bound, maxval=bound)
    elif kind == "rotate":
        relation = jax.random.uniform(k_r, (n_relations, dim // 2), minval=-np.pi, maxval=np.pi)
    else:
        noise = 0.01 * jax.random.normal(k_r, (n_relations, dim, dim))
        relation = jnp.eye(dim) + noise
    return KGEModel(kind, entity, relation, p)


def _unit_rows(x: jax.Array) -> jax.Array:
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
