r"""Exact cosine top-k among candidate nodes, fast: a matrix product screens, a fixed-order sum
decides.

The scores that rank are ``einsum`` dot products, each summed in one fixed order, so a node's
score does not depend on which other nodes are scored with it or where it sits (identical
rows tie exactly, and ties break by node index). Computing them for every candidate is slow
(a gather and a non-BLAS sum per query), so a BLAS product over all nodes — one ``[Q, N]``
product for a batch of queries — screens first, and only the few candidates that can reach the
top ``k`` are rescored in the fixed order.

Why that is exact (:func:`top_k_exact`). Write :math:`a_v` for node ``v``'s screening score,
:math:`e_v` for its fixed-order score and :math:`t_v` for the exact real dot product of the
same float vectors. Any floating-point sum of the :math:`d` products, in whatever order and
with or without fused multiply-adds, satisfies
:math:`|{\rm fl}(q\cdot x) - q\cdot x| \le \gamma_d \sum_i |q_i x_i| + d\eta
\le \gamma_d \|q\|\,\|x\| + d\eta` (Cauchy–Schwarz; :math:`\gamma_d = du / (1 - du)`, :math:`u`
the unit roundoff, :math:`\eta` the smallest subnormal, for gradual underflow). So
:math:`|a_v - e_v| \le \delta = 2(\gamma_d \|q\| R + d\eta)`, :math:`R` the largest row norm.
Let :math:`L` be a value that at least ``k`` candidates reach in screening (:math:`a \ge L`).
Those ``k`` have :math:`e \ge L - \delta`, so the ``k``-th largest fixed-order score is at
least :math:`L - \delta`, and every candidate in the answer (or tied with its ``k``-th entry)
has :math:`e_v \ge L - \delta`, hence :math:`a_v \ge L - 2\delta`. Rescoring every candidate
with :math:`a_v \ge L - 2\delta` therefore finds exactly the top ``k`` of the fixed-order
scores, ties included. :math:`L` is the ``k``-th largest of the block maxima of the screening
row (blocks of :data:`_BLOCK` entries, any partition of the row will do; the ``k`` best blocks
hold ``k`` distinct candidates scoring at least it), which costs one pass over the row instead
of a selection; usually it is the ``k``-th largest score itself. The cut :math:`L - 2\delta` is computed in float64 and
moved one float64 step down (its subtraction rounds by at most half a step), scores are
compared with it in float64 (exactly, for float32 or float64 scores), and :math:`\delta` is
widened by 0.1 % for the rounding of the norms and of :math:`\gamma_d`.
"""

from __future__ import annotations

import numpy as np

from grounding._numerics import top_k  # noqa: F401  (the retrievers' one top-k)

__all__ = ["row_norm_max", "screen", "top_k", "top_k_exact"]

_BLOCK = 256  # screening entries per block maximum
_NORM_ROWS = 1 << 15  # rows per chunk of the float64 row norms (bounds the copy)


def screen(embeddings: np.ndarray, qv: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``[Q, N]`` screening scores of every node (one BLAS product), written into ``out``
    (``[Q, N]``, C-contiguous, the embeddings' dtype) when given."""
    return np.matmul(np.asarray(qv, embeddings.dtype), embeddings.T, out=out)


def row_norm_max(embeddings: np.ndarray) -> float:
    """The largest row norm of ``embeddings``, summed in float64 (in chunks of rows: no copy
    of the whole matrix); float32 products are exact there."""
    best = 0.0
    for s in range(0, len(embeddings), _NORM_ROWS):
        x = np.asarray(embeddings[s : s + _NORM_ROWS], np.float64)
        best = max(best, float(np.einsum("nd,nd->n", x, x).max(initial=0.0)))
    return float(np.sqrt(best))


def _cut_margin(embeddings: np.ndarray, norm_max: float, qv: np.ndarray) -> np.ndarray:
    """``[Q]`` the margin :math:`2\\delta` of the module docstring per query (``inf`` when
    :math:`du \\ge 1/2`: then every candidate is rescored)."""
    d = embeddings.shape[1]
    info = np.finfo(embeddings.dtype)
    u = float(info.eps) / 2
    if d * u >= 0.5:
        return np.full(len(qv), np.inf)
    gamma = d * u / (1 - d * u)
    q = np.asarray(qv, np.float64)
    q_norm = np.sqrt(np.einsum("gd,gd->g", q, q))
    return 4 * (gamma * q_norm * norm_max + d * float(info.smallest_subnormal)) * (1 + 1e-3)


def _within(rows: np.ndarray, k: int, margin: np.ndarray) -> list[np.ndarray]:
    """Per row of ``rows`` (``[G, L]`` screening scores, ``L > k``, at most half of each row
    masked to ``-inf``): the sorted positions scoring at least ``L_row - margin_row``, with
    ``L_row`` the ``k``-th largest block maximum.

    That maximum is finite: with blocks of ``b >= 2`` there are ``nb = L // b >= 4k`` full
    blocks (``b = min(256, L // 4k)``), and the at most ``L / 2`` masked entries fill at most
    ``L / 2b < (nb + 1) / 2`` of them, so at least ``2k`` blocks hold a finite score; with
    ``b = 1`` the row has more than ``k`` finite entries."""
    g, n = rows.shape
    b = max(1, min(_BLOCK, n // (4 * k)))
    nb = n // b
    # block j: the positions j, j + nb, j + 2 nb, ... (its maximum: an elementwise maximum of
    # b contiguous stretches, a faster pass over the row than maxima of contiguous blocks)
    stripes = rows[:, : nb * b].reshape(g, b, nb)
    tail = rows[:, nb * b :]  # shorter than a block: one more block when not empty
    bm = stripes.max(axis=1) if b > 1 else rows[:, :nb]
    if tail.shape[1]:
        bm = np.concatenate([bm, tail.max(axis=1, keepdims=True)], axis=1)
    m = bm.shape[1]
    kth = np.partition(bm, m - k, axis=1)[:, m - k].astype(np.float64)
    cut = np.nextafter(kth - margin, -np.inf)  # float64, rounded down; compared in float64
    r, blk = np.nonzero(bm >= cut[:, None])  # the blocks that can hold an answer
    full = blk < nb
    rf, bf = r[full], blk[full]
    hit = stripes[rf, :, bf] >= cut[rf][:, None]  # [P, b]
    keys = [(rf[:, None] * n + bf[:, None] + np.arange(b) * nb)[hit]]
    if tail.shape[1]:
        rt = r[~full]
        hit = tail[rt] >= cut[rt][:, None]
        keys.append((rt[:, None] * n + nb * b + np.arange(tail.shape[1]))[hit])
    key = np.sort(np.concatenate(keys))  # by row, then position
    bounds = np.searchsorted(key, np.arange(g + 1) * n)
    return [key[bounds[i] : bounds[i + 1]] - i * n for i in range(g)]


def _rescore(embeddings: np.ndarray, q: np.ndarray, nodes: np.ndarray, k: int) -> tuple:
    """The ``k`` best of ``nodes`` (sorted) by fixed-order score, ties by lower index."""
    exact = np.einsum("nd,d->n", embeddings[nodes], q)
    order = np.argsort(-exact, kind="stable")[:k]  # stable: ties keep the lower node first
    return nodes[order], exact[order]


def top_k_exact(
    embeddings: np.ndarray,
    norm_max: float,
    qv: np.ndarray,
    cand: np.ndarray,
    k: int,
    approx: np.ndarray | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each query, the ``k`` best candidates by fixed-order score (ties: lower index
    first) and their scores, screened by ``approx`` (:func:`screen`) or, when not given, by a
    product over the candidates alone (fewer than half the nodes) or over all nodes.

    Args:
        embeddings: ``[N, d]`` node embeddings.
        norm_max: the largest row norm of ``embeddings`` (:func:`row_norm_max`).
        qv: ``[G, d]`` the query vectors.
        cand: sorted distinct candidate node indices, shared by the ``G`` queries.
        k: how many (``>= 1``).
        approx: ``[G, N]`` screening scores of every node for ``qv``; overwritten (scratch).
    """
    n = embeddings.shape[0]
    qv = np.asarray(qv, embeddings.dtype)
    if k >= len(cand):  # every candidate is kept: rescore them all (no screening)
        return [_rescore(embeddings, q, cand, k) for q in qv]
    margin = _cut_margin(embeddings, norm_max, qv)
    if not np.all(np.isfinite(margin)):  # no bound on the screen's error: rescore them all
        return [_rescore(embeddings, q, cand, k) for q in qv]
    wide = 2 * len(cand) >= n
    if approx is None and wide:
        approx = screen(embeddings, qv)
    if approx is None:  # few candidates: screen them alone
        picks, owner = _within(screen(embeddings[cand], qv), k, margin), cand
    elif wide:  # few non-candidates: mask them in place (no [G, |C|] copy)
        if len(cand) < n:
            outside = np.ones(n, bool)
            outside[cand] = False
            approx[:, np.flatnonzero(outside)] = -np.inf
        picks, owner = _within(approx, k, margin), None
    else:
        picks, owner = _within(np.take(approx, cand, axis=1), k, margin), cand
    return [
        _rescore(embeddings, q, pos if owner is None else owner[pos], k)
        for q, pos in zip(qv, picks)
    ]
