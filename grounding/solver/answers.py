r"""Every node as a candidate answer, for many anchor sets at once: the energies and the
posterior that :func:`~grounding.solver.ground` gives an answer-family problem whose candidates
are all the graph's nodes (``min_hops = 0``: an anchor supports itself), computed from one
energy field of the path engine over the distinct anchors of the batch instead of one
``ground`` per anchor set.

With :math:`F_a(v)` the field of anchor ``a`` over walks of ``1..max_hops`` edges (edge costs
of Eq. (10) from the config's ``alpha``, ``xi`` and ``hop_cost``, :math:`-\log w_e` for the
reliabilities) and :math:`A` a query's anchor set:

- best walk (``tau`` below the temperature floor, Eq. (11)): :math:`E_A(v) = \min_{a\in A}
  F_a(v)`, and ``0`` at the anchors (the empty walk);
- entropic (Eq. (13), the uniform prior over the family :math:`W_A` of walks of
  ``0..max_hops`` edges from any anchor):

  .. math::
      E_A(v) = -\tau\Big(\log\big[\textstyle\sum_{a\in A} e^{-F_a(v)/\tau}
          + \mathbf 1\{v\in A\}\big] - \log|W_A|\Big), \qquad
      |W_A| = |A| + \textstyle\sum_{a\in A} N_a,

  :math:`N_a` the number of walks of ``1..max_hops`` edges from ``a`` (the field of zero
  costs at ``tau = 1`` is :math:`-\log` of their count per end node);

``+inf`` where no walk reaches ``v``. The posterior is Eq. (7) on the slack-extended energy
:math:`\min(E_A(v), \kappa)` of Eq. (19). Repeated anchors within a set count once, as in
:func:`~grounding.solver.ground`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from grounding import _numerics
from grounding._checks import check_int, is_concrete
from grounding._shapes import bucket
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.graph._memo import GraphMemo
from grounding.posterior import gibbs_log_posterior
from grounding.problem import edge_costs_from_arrays
from grounding.semiring import energy_field
from grounding.semiring.layout import ELL_MIN_EDGES
from grounding.solver.config import GroundingConfig, make_config

__all__ = ["answer_energies", "answer_log_posteriors"]

_INDEX = GraphMemo()  # the path engine's layout of the last few large graphs


def answer_energies(
    evidence: EvidenceState | TypedGraph,
    anchors: Sequence[Sequence[int] | np.ndarray],
    config: GroundingConfig,
    *,
    max_hops: int | None,
) -> np.ndarray:
    r"""``[Q, N]`` raw path energies :math:`E_A(v)` of every node ``v`` (before the slack) for
    each of the ``Q`` anchor sets (node indices, each non-empty) over walks of
    ``0..max_hops`` edges (module docstring).

    Args:
        evidence: the graph (or an evidence state's graph).
        anchors: per query, its anchor node indices.
        config: the settings (``tau`` picks Eq. (11) or (13); ``alpha``, ``xi``,
            ``hop_cost`` the edge costs); concrete values only.
        max_hops: the longest walk (``None``: any length, the best walk only).

    Raises:
        ValueError: an empty anchor set, an index outside the graph, ``max_hops`` below 1,
            or an entropic ``tau`` with ``max_hops=None``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (10), (11), (13).
    """
    graph = evidence.graph if isinstance(evidence, EvidenceState) else evidence
    config = _concrete(config)
    if max_hops is not None:
        check_int(max_hops, "max_hops")
    tropical = config.tropical
    if not tropical and max_hops is None:
        raise ValueError("tau > 0 aggregates walks and needs a finite max_hops")
    sets = [  # in order, once each (as ground takes a problem's anchors)
        np.fromiter(dict.fromkeys(np.asarray(a, np.int64).reshape(-1).tolist()), np.int64)
        for a in anchors
    ]
    if not sets or any(len(a) == 0 for a in sets):
        raise ValueError("answer_energies: every query needs at least one anchor")
    src, inv = np.unique(np.concatenate(sets), return_inverse=True)
    if src[0] < 0 or src[-1] >= graph.n_nodes:
        raise ValueError(f"anchor indices must lie in [0, {graph.n_nodes})")
    rows = np.split(inv, np.cumsum([len(a) for a in sets])[:-1])
    cost = edge_costs_from_arrays(
        graph.head, graph.relation, graph.tail, graph.reliability, None,
        float(config.alpha), float(config.xi), float(config.hop_cost),
    )  # fmt: skip  # Eq. (10), no realization
    tau = float(config.tau)
    field = _fields(graph, src, cost, 0.0 if tropical else tau, max_hops)  # [U, N]
    if not tropical:
        log_mass = jnp.where(jnp.isfinite(field), -field / tau, -jnp.inf)
        count = _fields(graph, src, jnp.zeros_like(cost), 1.0, max_hops)  # -log #walks
        log_n = _numerics.logsumexp(jnp.where(jnp.isfinite(count), -count, -jnp.inf))
    by_size: dict[int, list[int]] = {}
    for j, r in enumerate(rows):
        by_size.setdefault(len(r), []).append(j)
    out = np.empty((len(sets), graph.n_nodes), field.dtype)
    for size, members in by_size.items():
        ix = np.stack([rows[j] for j in members])  # [Q_size, size] rows of the field
        is_anchor = np.zeros((len(members), graph.n_nodes), bool)
        is_anchor[np.arange(len(members))[:, None], src[ix]] = True
        if tropical:  # Eq. (11): the best walk from any anchor; 0 hops at an anchor
            e = jnp.where(is_anchor, 0.0, field[ix].min(axis=1))
        else:  # Eq. (13), the family W_A: log-sum-exp over anchors, the empty walk added
            lm = _numerics.logaddexp(
                _numerics.logsumexp(log_mass[ix], axis=1), jnp.where(is_anchor, 0.0, -jnp.inf)
            )
            log_w = _numerics.logaddexp(_numerics.logsumexp(log_n[ix], axis=1), np.log(size))
            e = jnp.where(lm > -jnp.inf, -tau * (lm - log_w[:, None]), jnp.inf)
        out[members] = np.asarray(e)
    return out


def answer_log_posteriors(
    log_prior: np.ndarray,
    evidence: EvidenceState | TypedGraph,
    anchors: Sequence[Sequence[int] | np.ndarray],
    config: GroundingConfig,
    *,
    max_hops: int | None,
) -> np.ndarray:
    r"""``[Q, N]`` log posteriors of Eq. (7) over every node, one row per anchor set, with the
    prior ``log_prior`` (``[Q, N]``, normalized rows):

    .. math::
        \log p_\lambda(v\mid q) = \log p_\theta(v\mid q) - \lambda \min\big(E_A(v),
            \kappa\big) - \log Z_\lambda

    (Eqs. (7), (19)), :math:`E_A` from :func:`answer_energies`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (7), (19).
    """
    config = _concrete(config)
    energy = answer_energies(evidence, anchors, config, max_hops=max_hops)
    energy = np.minimum(energy, float(config.kappa))  # Eq. (19)
    return np.asarray(gibbs_log_posterior(log_prior, energy, float(config.lam)))  # Eq. (7)


def _concrete(config: GroundingConfig) -> GroundingConfig:
    config = make_config(config, {}, "answer_energies")
    if not is_concrete(config.lam, config.kappa, config.tau, config.alpha, config.xi,
                       config.hop_cost):  # fmt: skip
        raise TypeError("answer_energies computes on the host: the settings must be concrete")
    return config


def _fields(
    graph: TypedGraph, sources: np.ndarray, cost: jnp.ndarray, tau: float, max_hops: int | None
) -> jnp.ndarray:
    """``[S, N]`` energy fields (Eq. (13); Eq. (11) at ``tau = 0``) over walks of
    ``1..max_hops`` edges from ``sources`` (padded to a power of two: one compiled program
    per size class), on the graph's prebuilt EdgeIndex from ``ELL_MIN_EDGES`` edges."""
    n_src = len(sources)
    padded = np.pad(sources, (0, bucket(n_src, floor=1) - n_src), mode="edge")
    kw = dict(max_hops=max_hops, tau=tau)
    if graph.n_edges >= ELL_MIN_EDGES:
        index = _INDEX.find(graph)
        if index is None:
            index = _INDEX.keep(graph, None, graph.edge_index())
        return index.energy_field(cost, padded, **kw)[:n_src]
    return energy_field(graph.head, graph.tail, cost, padded, n_nodes=graph.n_nodes, **kw)[:n_src]
