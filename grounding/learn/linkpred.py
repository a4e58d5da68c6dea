r"""Filtered link-prediction ranking with realistic ties (the protocol of Bordes et al. 2013).

For a query triple :math:`(h, r, t)` the *tail* rank scores every entity :math:`e` as a
candidate tail by an energy :math:`E(h, r, e)` (lower is better), removes every other known
true tail :math:`\{e \ne t : (h, r, e) \in G^*\}` (the *filtered* setting), and ranks
:math:`t` among the rest; the *head* rank is the same with the head replaced. Ties are ranked
*realistically*: the mean of the optimistic rank :math:`1 + \#\{e : E_e < E_t\}` and the
pessimistic rank :math:`1 + \#\{e \ne t : E_e \le E_t\}`, the expected rank under random
tie-breaking (Berrendorf et al., 2020). A constant scorer thus gets rank :math:`(n' + 1)/2`,
not 1. MRR and Hits@k are averaged over both directions.

Model-agnostic: a scorer is any function ``(side, anchor, relation) -> [B, n]`` energies,
``side`` being ``"tail"`` (anchor = head) or ``"head"`` (anchor = tail).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

__all__ = ["Ranks", "filtered_ranks", "rank_metrics", "mrr_interval"]

Scorer = Callable[[str, np.ndarray, np.ndarray], np.ndarray]


@dataclasses.dataclass(frozen=True)
class Ranks:
    """Optimistic, pessimistic and realistic ranks ``[m]`` of one direction (float)."""

    optimistic: np.ndarray
    pessimistic: np.ndarray

    @property
    def realistic(self) -> np.ndarray:
        return 0.5 * (self.optimistic + self.pessimistic)


class _Filter:
    """CSR index ``key -> known answers`` for the filter of filtered ranking."""

    def __init__(self, key: np.ndarray, answer: np.ndarray, n_keys: int):
        order = np.argsort(key, kind="stable")
        self.answer = answer[order]
        self.indptr = np.searchsorted(key[order], np.arange(n_keys + 1))

    def pairs(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(row, answer)`` for every known answer of every query row."""
        start = self.indptr[keys]
        count = self.indptr[keys + 1] - start
        rows = np.repeat(np.arange(len(keys)), count)
        offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        return rows, self.answer[np.repeat(start, count) + offset]


def _check_triples(x: np.ndarray, name: str, n_entities: int, n_relations: int) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != 3 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} must be an integer [m, 3] array, got {x.dtype} {x.shape}")
    if x.size and (x.min() < 0 or x[:, [0, 2]].max() >= n_entities or x[:, 1].max() >= n_relations):
        raise ValueError(f"{name} holds ids outside [0, {n_entities}) / [0, {n_relations})")
    return x.astype(np.int64)


def filtered_ranks(
    scorer: Scorer,
    queries: np.ndarray,
    known: np.ndarray,
    n_entities: int,
    n_relations: int,
    batch_size: int = 256,
) -> dict[str, Ranks]:
    """Filtered ranks of every query in both directions.

    Args:
        scorer: ``(side, anchor [B], relation [B]) -> [B, n_entities]`` energies (lower =
            more plausible); must be finite.
        queries: ``[m, 3]`` id triples to rank.
        known: ``[M, 3]`` every triple known true (train + valid + test): the filter. The
            queries themselves need not be in it.
        n_entities, n_relations: vocabulary sizes.
        batch_size: queries per scorer call.

    Returns:
        ``{"tail": Ranks, "head": Ranks}``.

    References:
        Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
            Multi-relational Data", 2013 (filtered protocol).

    Example:
        >>> ties = lambda side, a, r: np.zeros((len(a), 4))  # every candidate tied
        >>> float(filtered_ranks(ties, np.array([[0, 0, 1]]), np.empty((0, 3), int), 4, 1)["tail"].realistic[0])
        2.5
    """
    queries = _check_triples(queries, "queries", n_entities, n_relations)
    known = _check_triples(known, "known", n_entities, n_relations)
    if len(queries) == 0:
        raise ValueError("queries is empty: nothing to rank")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    h, r, t = known.T
    filters = {
        "tail": _Filter(h * n_relations + r, t, n_entities * n_relations),
        "head": _Filter(t * n_relations + r, h, n_entities * n_relations),
    }
    out = {}
    for side, anchor_col, target_col in (("tail", 0, 2), ("head", 2, 0)):
        opt, pess = [], []
        for lo in range(0, len(queries), batch_size):
            q = queries[lo : lo + batch_size]
            anchor, rel, target = q[:, anchor_col], q[:, 1], q[:, target_col]
            e = np.array(scorer(side, anchor, rel), dtype=np.float64)
            if e.shape != (len(q), n_entities):
                raise ValueError(
                    f"scorer returned shape {e.shape}, expected {(len(q), n_entities)}"
                )
            if not np.all(np.isfinite(e)):
                raise ValueError(f"scorer returned non-finite energies for {side} queries")
            rows = np.arange(len(q))
            e_true = e[rows, target]
            fr, fc = filters[side].pairs(anchor * n_relations + rel)
            e[fr, fc] = np.inf  # filtered: other known answers do not compete
            e[rows, target] = np.inf  # the target itself is not its own competitor
            opt.append(1.0 + np.sum(e < e_true[:, None], axis=1))
            pess.append(1.0 + np.sum(e <= e_true[:, None], axis=1))
        out[side] = Ranks(np.concatenate(opt), np.concatenate(pess))
    return out


def rank_metrics(ranks: dict[str, Ranks], ks: tuple[int, ...] = (1, 3, 10)) -> dict[str, float]:
    """MRR, Hits@k and mean rank of the realistic ranks, pooled over both directions.

    References:
        Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
            Multi-relational Data", 2013 (filtered protocol).
    """
    rank = np.concatenate([ranks[s].realistic for s in ("tail", "head")])
    if rank.size == 0:
        raise ValueError("no ranks to summarize (empty query set)")
    metrics = {"mrr": float(np.mean(1.0 / rank)), "mean_rank": float(np.mean(rank))}
    metrics.update({f"hits{k}": float(np.mean(rank <= k)) for k in ks})
    return metrics


def mrr_interval(
    ranks: dict[str, Ranks], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the MRR of :func:`rank_metrics`, resampling the test
    triples (each with its tail and head query, so the two directions stay paired). It covers
    the choice of test triples only, not training randomness.

    Raises:
        ValueError: the two directions rank different numbers of triples, or none.
    """
    tail, head = (1.0 / np.asarray(ranks[s].realistic, np.float64) for s in ("tail", "head"))
    if tail.shape != head.shape or tail.size == 0:
        raise ValueError(
            f"an MRR interval needs the tail and head rank of every triple, got {tail.size} "
            f"tail and {head.size} head ranks"
        )
    per_triple = (tail + head) / 2
    rng = np.random.default_rng(seed)
    means = np.array([per_triple[rng.integers(0, per_triple.size, per_triple.size)].mean()
                      for _ in range(n_boot)])  # fmt: skip
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
