r"""The reciprocal-relations model (Lacroix, Usunier & Obozinski, ICML 2018): every relation
:math:`r` has a second embedding :math:`r^{-1}` (rows ``R..2R-1``), and a head query
:math:`(?, r, t)` is answered as the tail query :math:`(t, r^{-1}, ?)`. Trained by
:func:`grounding.learn.train_one_vs_all`.

Scores (higher is better; the energy of Eq. (8) is their negative):

- ``"transe"``: :math:`s = -\lVert e_h + w_r - e_t\rVert_2`;
- ``"complex"``: :math:`s = \mathrm{Re}\langle e_h \circ w_r, \bar e_t\rangle`, entities and
  relations in :math:`\mathbb{C}^{d/2}` stored as ``[real | imaginary]`` halves (Trouillon et
  al., ICML 2016): a bilinear compatibility used as an energy, Eq. (8)'s bilinear reading.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp

from grounding.geometry import RelationMap, Translation

__all__ = [
    "ReciprocalModel",
]

RECIPROCAL_KINDS = ("transe", "complex")


@partial(jax.tree_util.register_dataclass, data_fields=["entity", "relation"], meta_fields=["kind"])
@dataclasses.dataclass(frozen=True)
class ReciprocalModel:
    """Entities ``[n, d]`` and relations ``[2R, d]`` (rows ``R..2R-1``: the reciprocals).

    References:
        - Lacroix, Usunier & Obozinski, "Canonical Tensor Decomposition for Knowledge Base
          Completion", 2018.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013 (transe).
        - Trouillon, Welbl, Riedel, Gaussier & Bouchard, "Complex Embeddings for Simple Link
          Prediction", 2016 (complex).
    """

    kind: str
    entity: jax.Array
    relation: jax.Array

    @property
    def n_relations(self) -> int:
        return self.relation.shape[0] // 2

    @property
    def relation_map(self) -> RelationMap:
        """TransE's learned translations :math:`T_r x = x + w_r` (forward relations)."""
        if self.kind != "transe":
            raise ValueError(f"{self.kind} is a bilinear energy, not a relation map")
        return Translation(self.relation[: self.n_relations])

    @property
    def inverse_map(self) -> RelationMap:
        """TransE's learned reciprocal translations :math:`T_{r^{-1}}` (rows ``R..2R-1``)."""
        if self.kind != "transe":
            raise ValueError(f"{self.kind} is a bilinear energy, not a relation map")
        return Translation(self.relation[self.n_relations :])

    def scores(self, anchor: jax.Array, rows: jax.Array, candidates: jax.Array | None = None):
        """``[B, C]`` scores of candidate tails (default: every entity) for the queries
        ``(anchor, rows, ?)`` (``rows``: relation rows, reciprocals included)."""
        E = self.entity if candidates is None else self.entity[candidates]
        return _scores(self.kind, self.entity[anchor], self.relation[rows], E)

    def energy(self, triples: jax.Array) -> jax.Array:
        """``[..., 3]`` id triples -> ``[...]`` energies :math:`-s(h, r, t)` (forward relation)."""
        h, r, t = triples[..., 0], triples[..., 1], triples[..., 2]
        x, w, y = self.entity[h], self.relation[r], self.entity[t]
        if self.kind == "complex":
            return -_complex_dot(x * 1.0, w, y)
        return jnp.linalg.norm(x + w - y, axis=-1)

    def candidate_energies(self, side: str, anchor: jax.Array, r: jax.Array) -> jax.Array:
        """``[B, n]`` energies of every entity as the tail (anchor = head) or as the head
        (anchor = tail, answered by the reciprocal relation)."""
        rows = r if side == "tail" else r + self.n_relations
        return -self.scores(jnp.asarray(anchor), jnp.asarray(rows))


def _complex_dot(x, w, y):
    """:math:`\\mathrm{Re}\\langle x \\circ w, \\bar y\\rangle` over the last axis (halves)."""
    k = x.shape[-1] // 2
    xr, xi, wr, wi, yr, yi = x[..., :k], x[..., k:], w[..., :k], w[..., k:], y[..., :k], y[..., k:]
    return jnp.sum((xr * wr - xi * wi) * yr + (xr * wi + xi * wr) * yi, axis=-1)


@partial(jax.jit, static_argnums=0)
def _scores(kind: str, x, w, E):
    if kind == "complex":
        k = x.shape[-1] // 2
        xr, xi, wr, wi = x[:, :k], x[:, k:], w[:, :k], w[:, k:]
        q = jnp.concatenate([xr * wr - xi * wi, xr * wi + xi * wr], axis=-1)
        return q @ E.T
    q = x + w  # -||q - e||_2 by the Gram identity, clamped (float rounding) before the root
    sq = jnp.sum(q * q, -1)[:, None] + jnp.sum(E * E, -1)[None, :] - 2.0 * (q @ E.T)
    return -jnp.sqrt(jnp.maximum(sq, 1e-12))
