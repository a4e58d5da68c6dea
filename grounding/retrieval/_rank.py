r"""Exact cosine top-k among candidate nodes, fast: a matrix product screens, a fixed-order sum
decides.

The scores that rank are ``einsum`` dot products, each summed in one fixed order, so a node's
score does not depend on which other nodes are scored with it or where it sits (identical
rows tie exactly, and ties break by node index). Computing them for every candidate is slow
(a gather and a non-BLAS sum per query), so a BLAS product over all nodes — one ``[Q, N]``
product for a batch of queries — screens first. Its entries differ from the fixed-order ones
by at most :math:`2\gamma_d \|q\|\,\|e\|` (the standard bound on a floating-point dot product
of length :math:`d`, :math:`\gamma_d = d u / (1 - d u)`, whichever order either sum takes), so
every node that can reach the top ``k`` in the fixed-order scores has a screening score
within twice that of the ``k``-th largest screening score. Only those are rescored. The result
is exactly the top ``k`` of the fixed-order scores, for one query or a batch alike.
"""

from __future__ import annotations

import numpy as np

__all__ = ["screen", "top_k", "top_k_exact"]


def top_k(scores: np.ndarray, k: int, among: np.ndarray | None = None):
    """Indices and scores of the ``k`` best entries (ties: lower index first).

    Example:
        >>> idx, s = top_k(np.array([0.1, 0.9, 0.9, 0.5]), 2)
        >>> idx.tolist(), s.tolist()
        ([1, 2], [0.9, 0.9])
    """
    cand = np.arange(len(scores)) if among is None else among
    s = scores if among is None else scores[among]
    k = min(k, len(cand))
    if k < len(cand):  # keep every entry tied with the k-th best, then break ties by index
        part = np.flatnonzero(-s <= np.partition(-s, k - 1)[k - 1])
    else:
        part = np.arange(len(cand))
    order = part[np.lexsort((cand[part], -s[part]))][:k]
    return cand[order], s[order]


def screen(embeddings: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """``[Q, N]`` screening scores of every node (one BLAS product)."""
    return np.asarray(qv, embeddings.dtype) @ embeddings.T


def top_k_exact(
    embeddings: np.ndarray,
    row_norm_max: float,
    q: np.ndarray,
    approx: np.ndarray,
    cand: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best candidates by fixed-order score (ties: lower index first) and their
    scores, from the screening scores ``approx`` (``[N]``, :func:`screen`) of query ``q``.

    Args:
        embeddings: ``[N, d]`` node embeddings.
        row_norm_max: the largest row norm of ``embeddings``.
        q: ``[d]`` the query vector.
        approx: ``[N]`` its screening scores.
        cand: sorted candidate node indices.
        k: how many.
    """
    if k < len(cand):
        d = embeddings.shape[1]
        u = float(np.finfo(embeddings.dtype).eps) / 2
        gamma = d * u / (1 - d * u)
        slack = 4 * gamma * float(np.linalg.norm(q)) * row_norm_max * (1 + 1e-3)
        s = approx[cand]
        kth = np.partition(s, len(s) - k)[len(s) - k]
        cand = cand[s >= kth - slack]  # every node that can reach the exact top k
    exact = np.einsum("nd,d->n", embeddings[cand], np.asarray(q, embeddings.dtype))
    idx, scores = top_k(exact, k)
    return cand[idx], scores
