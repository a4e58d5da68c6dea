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
from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from grounding.geometry import RelationMap, Translation

__all__ = ["ReciprocalModel", "complex_product"]

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

    def compose(self, x: jax.Array, rows: Sequence[int]) -> jax.Array:
        """The query :math:`x \\circ w_{r_1} \\circ \\dots \\circ w_{r_T}` (complex: the
        products of :func:`complex_product`) or :math:`x + w_{r_1} + \\dots + w_{r_T}`
        (transe) for the relation rows ``rows`` (``r_1`` first; a row ``R + r`` is the learned
        reciprocal of relation ``r``)."""
        n = self.relation.shape[0]
        for r in rows:
            if not 0 <= r < n:
                raise ValueError(f"compose: relation rows must lie in [0, {n}), got {r!r}")
            w = self.relation[r]
            x = complex_product(x, w) if self.kind == "complex" else x + w
        return x

    def answer_scores(self, x: jax.Array) -> np.ndarray:
        """``[n]`` float64 scores of every entity as the answer to a composed query ``x``
        (:meth:`compose`): :math:`\\mathrm{Re}\\langle x, \\bar e\\rangle` (complex) or
        :math:`-\\lVert x - e\\rVert_2` (transe)."""
        if self.kind == "complex":
            return np.asarray(self.entity @ x, np.float64)
        return -np.asarray(jnp.linalg.norm(self.entity - x, axis=-1), np.float64)

    def candidate_energies(self, side: str, anchor: jax.Array, r: jax.Array) -> jax.Array:
        """``[B, n]`` energies of every entity as the tail (anchor = head) or as the head
        (anchor = tail, answered by the reciprocal relation)."""
        rows = r if side == "tail" else r + self.n_relations
        return -self.scores(jnp.asarray(anchor), jnp.asarray(rows))


def complex_product(x: jax.Array, w: jax.Array) -> jax.Array:
    """The complex product :math:`x \\circ w` over the last axis, both stored as ``[real |
    imaginary]`` halves (ComplEx's layout): the one complex product of the package.

    Example:
        >>> complex_product(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])).tolist()  # (1+2i)(3+4i)
        [-5.0, 10.0]
    """
    k = x.shape[-1] // 2
    xr, xi, wr, wi = x[..., :k], x[..., k:], w[..., :k], w[..., k:]
    return jnp.concatenate([xr * wr - xi * wi, xr * wi + xi * wr], axis=-1)


def _complex_dot(x, w, y):
    """:math:`\\mathrm{Re}\\langle x \\circ w, \\bar y\\rangle` over the last axis (halves)."""
    k = x.shape[-1] // 2
    q = complex_product(x, w)
    return jnp.sum(q[..., :k] * y[..., :k] + q[..., k:] * y[..., k:], axis=-1)


@partial(jax.jit, static_argnums=0)
def _scores(kind: str, x, w, E):
    if kind == "complex":
        return complex_product(x, w) @ E.T
    q = x + w  # -||q - e||_2 by the Gram identity, clamped (float rounding) before the root
    sq = jnp.sum(q * q, -1)[:, None] + jnp.sum(E * E, -1)[None, :] - 2.0 * (q @ E.T)
    return -jnp.sqrt(jnp.maximum(sq, 1e-12))
