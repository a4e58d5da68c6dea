r"""Stage 3 of the solver: the :class:`~grounding.GroundingResult` of each question from the
program's outputs, with the best supporting walks of the reported candidates and their
posterior weights (Prop. 2; host-side NumPy, after the compiled program).

A walk :math:`\gamma` of the candidate's family has energy :math:`e_\gamma` (node costs of the
mentions plus step costs, Eq. (10)) and weight :math:`\nu^*(\gamma) = e^{-e_\gamma/\tau} /
\sum_{\gamma'} e^{-e_{\gamma'}/\tau}` under the uniform path prior (which cancels); at
``tau = 0`` the limit, uniform over the walks of minimum energy (Eq. (11)).
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from grounding.evidence import EvidenceState
from grounding.paths.kbest import Walks, count_optimal_walks, kbest_walks
from grounding.problem import GroundingProblem, Realization
from grounding.programs import run_program
from grounding.result import GroundingResult, SupportingPaths
from grounding.solver.config import GroundingConfig
from grounding.solver.prepare import Prepared, bucket
from grounding.solver.program import chain_costs

__all__ = ["finish", "supporting_paths"]


def _weights(score: np.ndarray, log_mass: float) -> np.ndarray:
    r""":math:`\nu^*` weights ``exp(score - log Z)`` of found walks, with ``log Z`` the
    program's log mass, never below the log-sum of these walks' own weights (which it bounds
    exactly): at a ``tau`` far below the costs (``c / tau`` past the float's precision) the
    host's and the program's roundings of ``-c / tau`` differ, and a weight above 1 would
    follow."""
    s = np.asarray(score, float)
    live = s[np.isfinite(s)]
    if live.size:
        top = live.max()
        log_mass = max(log_mass, top + float(np.log(np.sum(np.exp(live - top)))))
    return np.exp(s - log_mass)


def _chain_walks(i, out, head, tail, N, E, k, tau):
    """Best walks of claim chain ``i``: ``(walks, energies, weights)``, from its node costs
    ``[T + 1, N]`` and step costs ``[T, E]`` in ``out["chain_costs"][i]``."""
    node, step = (np.asarray(a, float) for a in out["chain_costs"][i])
    scale = 1.0 if tau == 0 else tau
    with np.errstate(invalid="ignore"):
        hop, start, nodes = -step / scale, -node[0] / scale, -node[1:] / scale
    walks = kbest_walks(head, tail, hop, start, k, node_score=nodes)
    energy = np.asarray(
        [
            node[0, head[w[0]]] + sum(step[t, e] + node[t + 1, tail[e]] for t, e in enumerate(w))
            for w in walks.edges
        ],
        float,
    )  # Eq. (10) along the walk
    if tau == 0:
        best, m = count_optimal_walks(head, tail, hop, start, node_score=nodes)
        return walks, energy, np.where(walks.score == best, 1.0 / max(m, 1), 0.0)
    return walks, energy, _weights(walks.score, float(out["log_mass"][i]))


def _answer_walks(i, x, problem, anchors, out, head, tail, n_nodes, E, k, tau):
    """Best walks from any anchor to answer node ``x`` (the empty walk when ``x`` is an anchor
    and ``min_hops == 0``)."""
    cost = np.asarray(out["edge_cost"][:E], float)
    scale = 1.0 if tau == 0 else tau
    K = problem.max_hops if problem.max_hops is not None else max(n_nodes - 1, 1)
    start = np.full(n_nodes, -np.inf)
    start[anchors] = 0.0
    hop = np.broadcast_to(-cost / scale, (K, E))
    walks = kbest_walks(head, tail, hop, start, k, target=x)
    empty = problem.min_hops == 0 and x in set(anchors.tolist())
    if empty:  # the empty walk: energy 0, score 0
        order = np.argsort(-np.concatenate([[0.0], walks.score]), kind="stable")[:k]
        edges = [np.zeros(0, np.int64), *walks.edges]
        walks = Walks([edges[j] for j in order], np.concatenate([[0.0], walks.score])[order])
    energy = np.asarray([cost[w].sum() for w in walks.edges], float)
    if tau == 0:
        best, m = count_optimal_walks(head, tail, hop, start, target=x)
        if empty:  # the empty walk (score 0) beats or ties every walk (costs >= 0)
            best, m = (0.0, m + 1) if best == 0.0 else (0.0, 1)
        return walks, energy, np.where(walks.score == best, 1.0 / max(m, 1), 0.0)
    return walks, energy, _weights(walks.score, float(out["log_mass"][i]))


def supporting_paths(
    problem: GroundingProblem,
    state: EvidenceState,
    out: dict,
    k: int,
    tau: float,
    which: np.ndarray | None = None,
) -> tuple[SupportingPaths, tuple]:
    """:class:`~grounding.SupportingPaths` and the triples by name of the candidates ``which``
    (indices; ``None``: every candidate); the others' slots are empty. Each reported
    candidate costs one k-best sweep of the graph, so the cost follows ``len(which)``."""
    g = state.graph
    head, tail = np.asarray(g.head, np.int64), np.asarray(g.tail, np.int64)
    E, C = g.n_edges, problem.n_candidates
    rel = np.asarray(g.relation, np.int64)

    def name(e: int) -> tuple[str, str, str]:  # only the reported edges are named
        return (g.entities[head[e]], g.relations[rel[e]], g.entities[tail[e]])

    found = {}
    anchors = np.asarray([g.entity_index(a) for a in problem.anchors], np.int64)
    for i in range(C) if which is None else which.tolist():
        if not np.isfinite(out["raw_energy"][i]):
            continue
        if problem.kind == "chain":
            w, e, p = _chain_walks(i, out, head, tail, g.n_nodes, E, k, tau)
        else:
            x = g.entity_index(problem.candidates[i])
            w, e, p = _answer_walks(i, x, problem, anchors, out, head, tail, g.n_nodes, E, k, tau)
        found[i] = (w.edges, e, p)
    L = max([len(w) for edges, _, _ in found.values() for w in edges] + [1])
    edges = np.full((C, k, L), -1, np.int64)
    nodes = np.full((C, k, L + 1), -1, np.int64)
    length = np.full((C, k), -1, np.int64)
    energy = np.full((C, k), np.inf)
    weight = np.zeros((C, k))
    triples: list[tuple] = [()] * C
    for i, (walks, e, p) in found.items():
        for j, w in enumerate(walks):
            edges[i, j, : len(w)] = w
            path_nodes = (
                [head[w[0]], *tail[w]] if len(w) else [g.entity_index(problem.candidates[i])]
            )
            nodes[i, j, : len(path_nodes)] = path_nodes
            length[i, j] = len(w)
        energy[i, : len(e)], weight[i, : len(p)] = e, p
        triples[i] = tuple(tuple(name(x) for x in w) for w in walks)
    return SupportingPaths(edges, nodes, length, energy, weight), tuple(triples)


def _reported(out: dict, C: int, path_candidates: int | None) -> np.ndarray:
    """The candidates whose walks the report holds: those with a walk (finite raw energy),
    highest posterior first (ties: lower index first), at most ``path_candidates``."""
    has_walk = np.flatnonzero(np.isfinite(out["raw_energy"][:C]))
    order = has_walk[np.argsort(-out["log_posterior"][has_walk], kind="stable")]
    return order if path_candidates is None else order[:path_candidates]


def _chain_costs_program(metric: str, n_nodes: int):
    """:func:`~grounding.solver.program.chain_costs` (Eqs. (9)-(10)) of a batch of chains of
    one hop count, as a function of arrays (compiled per padded shape in the bounded cache of
    :mod:`grounding.programs`)."""

    def program(mentions, claimed, cost, relation, mismatch, realization):
        return chain_costs(
            mentions, claimed, cost, {"relation": relation}, {"mismatch_cost": mismatch},
            realization, metric, n_nodes,
        )  # fmt: skip

    return program


def _report_chain_costs(which, problem, state, q, out, realization, statics) -> dict:
    """``{i: (node [T + 1, N], step [T, E])}``: the Eqs. (9)-(10) costs of the reported
    claim chains, recomputed for them alone (the core never holds every chain's costs).

    One compiled call per hop count, on bucketed shapes so that questions share the compiled
    code: the reported chains of one hop count batched and their number padded to a power of
    two (repeating the first), the edges padded to a power of two (relation ``-1``, cost
    ``+inf``), the nodes to the program's padded count; every cost is elementwise in its
    edge or node, so the padding changes no real entry, and it is sliced off."""
    g = state.graph
    E, N = g.n_edges, g.n_nodes
    e_pad = bucket(E)
    edge_cost = np.asarray(out["edge_cost"])
    cost = np.full(e_pad, np.inf, edge_cost.dtype)
    cost[:E] = edge_cost[:E]
    relation = np.full(e_pad, -1, np.int32)
    relation[:E] = np.asarray(g.relation, np.int32)
    by_hops: dict[int, list[int]] = {}
    for i in which.tolist():
        by_hops.setdefault(problem.candidates[i].n_hops, []).append(i)
    costs = {}
    for t, members in sorted(by_hops.items()):
        idx = members + [members[0]] * (bucket(len(members), floor=1) - len(members))
        node, step = jax.device_get(
            run_program(
                ("chain costs", statics.metric, statics.n_nodes),
                functools.partial(_chain_costs_program, statics.metric, statics.n_nodes),
                q["mentions"][idx, : t + 1],
                q["claimed"][idx, :t],
                cost,
                relation,
                q["mismatch_cost"],
                realization,
            )
        )
        for j, i in enumerate(members):
            costs[i] = (node[j, :, :N], step[j, :, :E])
    return costs


def finish(
    out: dict,
    problem: GroundingProblem,
    prepared: Prepared,
    realization: Realization | None,
    config: GroundingConfig,
) -> GroundingResult:
    """The result of one question from the program's outputs (NumPy, on the host), with the
    path report the config asks for."""
    state, q, statics = prepared.state, prepared.q, prepared.statics
    C = problem.n_candidates
    if not np.any(out["log_posterior"][:C] > -np.inf):
        raise ValueError(
            "ground: Z_R(lambda) = 0: no candidate has positive prior mass and finite energy "
            "(a finite kappa keeps unsupported candidates)"
        )
    paths, triples = None, ()
    # the program's rule: a tau below the temperature floor is Eq. (11), as tau = 0
    n_paths, tau = config.n_paths, 0.0 if config.tropical else float(np.asarray(config.tau))
    if n_paths:
        which = _reported(out, C, config.path_candidates)
        if problem.kind == "chain":
            out["chain_costs"] = _report_chain_costs(
                which, problem, state, q, out, realization, statics
            )
        paths, triples = supporting_paths(problem, state, out, n_paths, tau, which)
    return traced_result(out, problem, paths, triples)


def traced_result(
    out: dict,
    problem: GroundingProblem,
    paths: SupportingPaths | None = None,
    triples: tuple = (),
) -> GroundingResult:
    """The result of one question from the program's outputs as they are (cut to the
    problem's candidates), with a path report when given: what :func:`finish` returns, and
    alone the result of a question whose settings are traced (``jax.grad``, ``jit``: no
    host-side checks and no path report)."""
    C = problem.n_candidates
    hard = out.get("hard")
    return GroundingResult(
        log_prior=out["log_prior"][:C],
        raw_energy=out["raw_energy"][:C],
        status=out["status"][:C],
        energy=out["energy"][:C],
        log_posterior=out["log_posterior"][:C],
        hard_log_posterior=None if hard is None else hard[:C],
        hard_abstained=out.get("hard_abstained"),
        best=out["best"],
        action=out["action"],
        certificate=out["certificate"],
        paths=paths,
        question=problem.question,
        names=problem.names,
        kind=problem.kind,
        triples=triples,
        answers=problem.answers,
    )
