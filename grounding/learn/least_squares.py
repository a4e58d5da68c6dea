r"""Closed-form realizations: a ridge-anchored TransE fit by linear least squares.

Used where a small, exactly reproducible realization is wanted (the Lou Seal running example);
:mod:`grounding.learn.kge` trains the gradient-based models.
"""

from __future__ import annotations

import numpy as np

from grounding.graph import TypedGraph

__all__ = ["fit_translation_embeddings"]


def fit_translation_embeddings(
    graph: TypedGraph, dim: int = 8, mu: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Ridge-anchored TransE realization by linear least squares (numpy, deterministic).

    Minimizes :math:`\sum_e w_e^{0}\|\eta_{h_e} + t_{r_e} - \eta_{t_e}\|^2 + \mu\|\eta - \eta^0\|^2`
    (unit weights) with :math:`\eta^0 \sim N(0, I)` drawn from ``seed``; the problem separates
    over the ``dim`` coordinates, which share one design matrix.

    Returns:
        ``(eta, t)``: ``[n_nodes, dim]`` entity embeddings and ``[n_relations, dim]`` translations.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (24) (with translation maps).
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013.

    Example:
        >>> g = TypedGraph.from_triples([("a", "r", "b")])
        >>> eta, t = fit_translation_embeddings(g, dim=2)
        >>> eta.shape, t.shape, bool(np.allclose(eta[0] + t[0], eta[1], atol=0.2))
        ((2, 2), (1, 2), True)
    """
    if dim < 1 or mu <= 0:
        raise ValueError("need dim >= 1 and mu > 0")
    n, k, m = graph.n_nodes, len(graph.relations), graph.n_edges
    rng = np.random.default_rng(seed)
    anchor = rng.normal(size=(n, dim))
    h, r, t = (np.asarray(a) for a in (graph.head, graph.relation, graph.tail))
    design = np.zeros((m + n, n + k))
    rows = np.arange(m)
    np.add.at(design, (rows, h), 1.0)
    np.add.at(design, (rows, n + r), 1.0)
    np.add.at(design, (rows, t), -1.0)
    design[m:, :n] = np.sqrt(mu) * np.eye(n)
    target = np.zeros((m + n, dim))
    target[m:] = np.sqrt(mu) * anchor
    sol = np.linalg.lstsq(design, target, rcond=None)[0]
    return sol[:n], sol[n:]
