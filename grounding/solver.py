r""":func:`ground`: a :class:`~grounding.GroundingProblem` and an evidence state in, a
:class:`~grounding.GroundingResult` out (the problem -> solver -> output split of OTT-JAX).

For each candidate :math:`\rho`:

1. raw energy :math:`E^{\mathrm{path}}_R(\rho)`: a claim chain over every ``T``-hop walk
   (:func:`grounding.chain_energy_from_costs`), an answer over every walk of
   ``min_hops..max_hops`` edges from the anchors (:func:`grounding.semiring.recursion.run`),
   with edge costs :func:`grounding.edge_cost` — Eq. (11) at ``tau = 0``, Eq. (13) with the
   uniform prior over the walk family otherwise;
2. status (Sec. 3.3, :func:`grounding.classify_status`) and the slack, contradiction-dominant
   energy (Eq. (19), Axiom 4, :func:`grounding.status_energy`), plus any claim energy;
3. the soft posterior (Eq. (7), :func:`grounding.gibbs_log_posterior`) and, given ``eps``,
   the hard posterior (Eq. (6), :func:`grounding.hard_log_posterior`) on the total energy
   without slack (contradicted: ``+inf``) or its abstention;
4. the action (Axiom 8, Eq. (22), :func:`grounding.decide_action`) and the Thm. 3
   certificate; then, on the host, the best supporting walks with their :math:`\nu^*`
   weights (Prop. 2, :func:`grounding.paths.kbest_walks`) of the few best candidates.

Steps 1-4 are one jitted program (``vmap``-ed over questions by :func:`ground_batch`),
compiled once per configuration and shape bucket (candidates, edges and the nodes of small
evidence graphs padded to powers of two); the compiled programs sit in a bounded LRU cache.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._numerics import logaddexp, logsumexp
from grounding.decision import classify_status, decide_action, status_energy
from grounding.evidence import EvidenceState
from grounding.geometry import get_metric
from grounding.inputs import (
    bucket,
    check_n_paths,
    check_path_candidates,
    options,
    pad_edges,
    prepare,
    with_defaults,
)
from grounding.paths.chains import chain_energy_and_log_mass
from grounding.paths.costs import step_costs
from grounding.posterior import gibbs_log_posterior, hard_log_posterior
from grounding.problem import (
    GroundingProblem,
    Realisation,
    edge_costs_from_arrays,
)
from grounding.report import supporting_paths
from grounding.result import Certificate, GroundingResult
from grounding.semiring.layout import as_graph
from grounding.semiring.recursion import run

__all__ = ["ground", "ground_batch"]


# ----------------------------------------------------------------------------- the core
def _mention_costs(mentions, realisation, metric, n_nodes):
    """``[..., N]`` Eq. (9) node costs of mention ids (``-1``: any node, cost 0); without a
    realisation a mention costs 0 at its entity and ``+inf`` elsewhere."""
    wild = (mentions < 0)[..., None]
    if realisation is None:
        d = jnp.where(mentions[..., None] == jnp.arange(n_nodes), 0.0, jnp.inf)
    else:
        emb = realisation.embeddings
        d = get_metric(metric)(emb[mentions][..., None, :], emb)  # Eq. (9)
        pad = [(0, 0)] * (d.ndim - 1) + [(0, n_nodes - emb.shape[0])]
        d = jnp.pad(d, pad, constant_values=jnp.inf)  # padding nodes (see ``prepare``)
    return jnp.where(wild, 0.0, d)


#: Candidates per chunk of the claim-chain energies: about this many ``[T, E]`` step costs and
#: ``[T + 1, N]`` node costs are live at once (``2^22`` floats: 32 MiB in float64), so memory
#: stays bounded however many chains a question has.
CHAIN_CHUNK_ELEMENTS = 1 << 22


def _chain_costs(mentions, claimed, cost, ev, q, realisation, metric, n_nodes):
    """Node costs ``[..., T + 1, N]`` (Eq. (9)) and step costs ``[..., T, E]`` (Eq. (10)) of
    claim chains given by their mention and claimed-relation ids ``[..., T + 1]``, ``[..., T]``."""
    node = _mention_costs(mentions, realisation, metric, n_nodes)  # Eq. (9)
    lead = claimed.shape[:-1]
    step = jax.vmap(step_costs, (None, None, 0, None))(
        cost, ev["relation"], claimed.reshape(-1, claimed.shape[-1]), q["mismatch"]
    )  # Eq. (10) per hop
    return node, step.reshape(*lead, *step.shape[1:])


def _chain_energies(layout, cost, ev, q, structure, tropical, realisation, metric, n_nodes):
    """Raw energies and log masses ``[C]`` of claim chains, grouped by their hop count; each
    group in chunks of candidates (``jax.lax.map``) so that only a chunk's costs are live."""
    C = q["log_prior"].shape[0]
    raw, log_mass = jnp.full(C, jnp.inf), jnp.full(C, -jnp.inf)

    def one(rows):
        node, step = _chain_costs(*rows, cost, ev, q, realisation, metric, n_nodes)
        return chain_energy_and_log_mass(
            layout, node, step, q["tau"], tropical, ev["edge_mask"]
        )  # Eq. (11) / (13)

    for t, idx in structure[1]:
        idx = np.asarray(idx)
        rows = (q["mentions"][idx, : t + 1], q["claimed"][idx, :t])
        chunk = max(1, CHAIN_CHUNK_ELEMENTS // (t * cost.shape[0] + (t + 1) * n_nodes))
        if chunk >= len(idx):
            e, lm = jax.vmap(one)(rows)
        else:
            e, lm = jax.lax.map(one, rows, batch_size=chunk)
        raw, log_mass = raw.at[idx].set(e), log_mass.at[idx].set(lm)
    return raw, log_mass


def _answer_energies(layout, cost, ev, q, structure, tropical, n_nodes):
    _, max_hops, min_hops = structure
    anchors, tau = q["anchors"], q["tau"]
    is_anchor = jnp.zeros(n_nodes, bool).at[anchors].set(True)
    if tropical:  # Eq. (11): min over anchors and walks
        e = run(layout, cost, None, anchors, tau, max_hops, True, False).min(axis=0)
        e = jnp.where(is_anchor & (min_hops == 0), 0.0, e)  # the empty walk
        return e[q["answers"]], -e[q["answers"]]  # log mass of the best walk (unused at tau 0)
    # Eq. (13) with the uniform prior over the family: walks from any anchor of min..max hops
    field = run(layout, cost, None, anchors, tau, max_hops, False, False)
    lm = logsumexp(jnp.where(jnp.isfinite(field), -field / tau, -jnp.inf), axis=0)
    zero = jnp.where(ev["edge_mask"], 0.0, jnp.inf)
    count = run(layout, zero, None, anchors, 1.0, max_hops, False, False)  # -log #walks
    log_w = logsumexp(jnp.where(jnp.isfinite(count), -count, -jnp.inf), axis=None)
    if min_hops == 0:
        lm = logaddexp(lm, jnp.where(is_anchor, 0.0, -jnp.inf))
        log_w = logaddexp(log_w, jnp.log(anchors.shape[0]))
    finite = lm > -jnp.inf
    e = jnp.where(finite, -tau * (lm - jnp.where(jnp.isfinite(log_w), log_w, 0.0)), jnp.inf)
    return e[q["answers"]], lm[q["answers"]]


def _core(ev, q, realisation, *, statics):
    structure, flags, metric, n_nodes, layout_given = statics
    tropical, has_eps, has_theta, has_omega = flags
    layout = ev["layout"] if layout_given else as_graph(ev["head"], ev["tail"], n_nodes)
    cost = edge_costs_from_arrays(
        ev["head"], ev["relation"], ev["tail"], ev["reliability"], realisation,
        q["alpha"], q["xi"], q["hop_cost"],
    )  # fmt: skip
    cost = jnp.where(ev["edge_mask"], cost, jnp.inf)  # padded edges do not exist
    out = {"edge_cost": cost}
    if structure[0] == "chain":
        raw, log_mass = _chain_energies(
            layout, cost, ev, q, structure, tropical, realisation, metric, n_nodes
        )
        e_max = q["kappa"] + q["kc"]  # the largest energy any evidence state can assign
    else:
        raw, log_mass = _answer_energies(layout, cost, ev, q, structure, tropical, n_nodes)
        e_max = q["kappa"]
    raw = jnp.where(q["schema"], raw, jnp.inf)
    status = classify_status(raw, q["counter"], q["schema"], q["eps_s"])  # Sec. 3.3
    slack = status_energy(raw, status, q["kappa"], q["kc"])  # Eq. (19) + Axiom 4
    energy = slack + q["claim"]
    log_post = gibbs_log_posterior(q["log_prior"], energy, q["lam"])  # Eq. (7)
    support = q["log_prior"] > -jnp.inf
    valid = jnp.all(jnp.isfinite(energy) | ~support)  # Thm. 3 needs finite energies
    osc = jnp.max(jnp.where(support, slack, -jnp.inf)) - jnp.min(jnp.where(support, slack, jnp.inf))
    omega = q["omega"] if has_omega else osc + e_max  # default: every evidence state
    omega = jnp.where(valid, omega, jnp.inf)
    out.update(
        raw_energy=raw,
        log_mass=log_mass,
        status=status,
        energy=energy,
        log_posterior=log_post,
        best=jnp.argmax(log_post),
        action=decide_action(log_post, status, q["margin"], q["theta"] if has_theta else None),
        certificate=Certificate.build(q["lam"], omega, log_post, valid),
    )
    if has_eps:
        # F_R (Eq. (5)) thresholds the total energy without slack: the path energy, +inf when
        # contradicted (Axiom 4 with absence at +inf) or out of schema, plus any claim energy
        hard_energy = status_energy(raw, status, jnp.inf, q["kc"]) + q["claim"]
        hard = hard_log_posterior(q["log_prior"], hard_energy, q["eps"])  # Eq. (6)
        # all -inf: Eq. (6) undefined (p_theta(F_R) = 0), the hard rule abstains
        out.update(hard=hard, hard_abstained=~jnp.any(hard > -jnp.inf))
    return out


@functools.lru_cache(maxsize=64)
def _compiled(statics, batched_evidence: bool | None):
    """One jitted program per configuration (bounded: least recently used ones are dropped,
    with their executables). ``batched_evidence``: ``None`` unbatched, else ``vmap`` over
    questions with the evidence batched (``True``) or shared (``False``)."""
    core = functools.partial(_core, statics=statics)
    if batched_evidence is not None:
        core = jax.vmap(core, in_axes=(0 if batched_evidence else None, 0, None))
    return jax.jit(core)


# ----------------------------------------------------------------------------- public API
def _reported(out: dict, C: int, path_candidates: int | None) -> np.ndarray:
    """The candidates whose walks the report holds: those with a walk (finite raw energy),
    highest posterior first (ties: lower index first), at most ``path_candidates``."""
    has_walk = np.flatnonzero(np.isfinite(out["raw_energy"][:C]))
    order = has_walk[np.argsort(-out["log_posterior"][has_walk], kind="stable")]
    return order if path_candidates is None else order[:path_candidates]


def _report_chain_costs(which, problem, state, q, out, realisation, metric) -> dict:
    """``{i: (node [T + 1, N], step [T, E])}``: the Eqs. (9)-(10) costs of the reported
    claim chains, recomputed for them alone (the core never holds every chain's costs)."""
    g = state.graph
    ev = dict(relation=np.asarray(g.relation, np.int32))
    cost = out["edge_cost"][: g.n_edges]
    costs = {}
    for i in which.tolist():
        t = problem.candidates[i].n_hops
        node, step = _chain_costs(
            q["mentions"][i, : t + 1], q["claimed"][i, :t][None], cost, ev, q, realisation,
            metric, g.n_nodes,
        )  # fmt: skip
        costs[i] = (np.asarray(node), np.asarray(step[0]))
    return costs


def _finish(out, problem, prepared, realisation, report, tau: float) -> GroundingResult:
    """The result of one question from the core's outputs (on the host), with the path
    report of ``report = (n_paths, path_candidates)``."""
    state, q, statics = prepared
    C = problem.n_candidates
    out = jax.tree_util.tree_map(np.asarray, out)
    if not np.any(out["log_posterior"][:C] > -np.inf):
        raise ValueError(
            "ground: Z_R(lambda) = 0: no candidate has positive prior mass and finite energy "
            "(a finite kappa keeps unsupported candidates)"
        )
    paths, triples = None, ()
    n_paths, path_candidates = report
    if n_paths:
        which = _reported(out, C, path_candidates)
        if problem.kind == "chain":
            out["chain_costs"] = _report_chain_costs(
                which, problem, state, q, out, realisation, statics[2]
            )
        paths, triples = supporting_paths(problem, state, out, n_paths, tau, which)
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
    )


def ground(
    problem: GroundingProblem,
    evidence: EvidenceState,
    *,
    lam: ArrayLike,
    kappa: ArrayLike,
    tau: ArrayLike = 0.0,
    eps: ArrayLike | None = None,
    realisation: Realisation | None = None,
    alpha: ArrayLike = 1.0,
    xi: ArrayLike = 1.0,
    hop_cost: ArrayLike = 0.0,
    mismatch_cost: ArrayLike = jnp.inf,
    eps_s: ArrayLike | None = None,
    contradiction_penalty: ArrayLike | None = None,
    min_reliability: float = 0.0,
    margin_threshold: ArrayLike = 0.0,
    theta: ArrayLike | None = None,
    omega: ArrayLike | None = None,
    n_paths: int = 3,
    path_candidates: int | None = 16,
) -> GroundingResult:
    r"""Ground one question's candidates in an evidence state (see the module docstring).

    Args:
        problem: the question, candidates and log-prior.
        evidence: an :class:`~grounding.EvidenceState` (any retriever's ``.evidence``) or a
            bare :class:`~grounding.TypedGraph`. Its graph must name every entity of the
            problem; a graph without edges is valid (every candidate is then unsupported).
        lam: grounding strength :math:`\lambda \ge 0` (a scalar).
        kappa: slack :math:`\kappa_R > 0`, the finite energy of missing support (Eq. (19));
            ``inf``: no slack (then a candidate without a walk gets no mass).
        tau: path temperature :math:`\tau \ge 0` (``0``: best walk, Eq. (11)).
        eps: tolerance of the hard feasible set :math:`F_R = \{E \le \epsilon\}` (Eqs.
            (5)-(6)) on the total energy without slack: the raw path energy, ``+inf`` for a
            contradicted (Axiom 4) or out-of-schema candidate, plus any claim energy (see
            ``docs/theory.md``); ``None``: no hard posterior.
        realisation: :class:`~grounding.Realisation` (``None``: evidence-only).
        alpha, xi, hop_cost: the edge-cost coefficients of :func:`grounding.edge_cost`.
        mismatch_cost: cost of aligning a claimed relation with an edge of another type
            (``inf``: typed claims must match).
        eps_s: support tolerance of the statuses (``E_raw <= eps_s`` is supported; default
            ``kappa``: support at least as good as the slack).
        contradiction_penalty: :math:`\kappa_c` of Axiom 4 (default ``kappa``).
        min_reliability: reliability an observed edge needs to count as counter-support
            (in ``[0, 1]``).
        margin_threshold, theta: the decision rule's margin and selective threshold (Axiom 8,
            Eq. (22)); ``theta`` is a posterior mass, in ``[0, 1]``.
        omega: the oscillation at which the certificate's TV bounds are evaluated; default:
            the worst case over *every* evidence state with these candidates, prior and
            slack: :math:`\mathrm{osc}_S(E_R) + E_{\max}` with :math:`E_{\max} = \kappa +
            \kappa_c` (chains) or :math:`\kappa` (answers), valid because every energy lies
            in :math:`[0, E_{\max}]`.
        n_paths: best supporting walks to report per candidate (``0``: none).
        path_candidates: how many candidates get walks in the report: those of highest
            posterior that have a walk (ties: lower index first); ``None``: every candidate.
            The report's cost follows this number, not the number of candidates (each
            reported candidate costs one k-best sweep of the graph); the other candidates'
            slots are empty (``paths.length == -1``, no triples).

    Returns:
        :class:`~grounding.GroundingResult`.

    Raises:
        ValueError: an entity of the problem missing from the evidence graph, an empty
            evidence graph, a negative or non-scalar ``lam``/``kappa``/``tau``, ``theta`` or
            ``min_reliability`` outside ``[0, 1]``, a problem and realisation of different
            vocabularies, or :math:`Z_R(\lambda) = 0`.

    Example:
        >>> import jax.numpy as jnp
        >>> from grounding import ClaimChain, EvidenceStatus, GroundingProblem, TypedGraph
        >>> g = TypedGraph.from_triples([("lou_seal", "mascot_of", "giants")], [0.9],
        ...                             entities=["lou_seal", "giants", "cardinals"])
        >>> p = GroundingProblem("whose mascot is Lou Seal?",
        ...     [ClaimChain(("lou_seal", t), ("mascot_of",)) for t in ("giants", "cardinals")],
        ...     jnp.log(jnp.array([0.4, 0.6])))
        >>> r = ground(p, g, lam=4.0, kappa=1.0)
        >>> r.answer, [s.name for s in map(EvidenceStatus, r.status)]
        ('lou_seal->giants', ['SUPPORTED', 'UNSUPPORTED'])
    """
    opts, flags = options(
        lam, kappa, tau, eps, alpha, xi, hop_cost, mismatch_cost, eps_s,
        contradiction_penalty, margin_threshold, theta, omega,
    )  # fmt: skip
    report = (check_n_paths(n_paths), check_path_candidates(path_candidates))
    state, q, ev, statics = prepare(problem, evidence, realisation, opts, flags, min_reliability)
    out = _compiled(statics, None)(ev, q, realisation)
    out["log_prior"] = q["log_prior"]
    return _finish(out, problem, (state, q, statics), realisation, report, float(opts["tau"]))


def ground_batch(
    problems: Sequence[GroundingProblem],
    evidence: EvidenceState | Sequence[EvidenceState],
    *,
    realisation: Realisation | None = None,
    min_reliability: float = 0.0,
    n_paths: int = 3,
    path_candidates: int | None = 16,
    **params,
) -> list[GroundingResult]:
    """:func:`ground` for many questions: one ``vmap``-ed program per group of questions with
    the same configuration (candidate kind and structure, shapes after padding), the evidence
    shared (one state for all) or per question (a sequence; one graph vocabulary per group).

    ``params`` are :func:`ground`'s keyword arguments (``lam``, ``kappa``, ...), scalars
    shared by every question. Results equal :func:`ground` question by question.
    """
    problems = list(problems)
    if not problems:
        raise ValueError("ground_batch: no problems")
    shared = not isinstance(evidence, Sequence)
    states = [evidence] * len(problems) if shared else list(evidence)
    if len(states) != len(problems):
        raise ValueError(f"{len(problems)} problems but {len(states)} evidence states")
    opts, flags = options(**with_defaults(params, _ground_defaults()))
    report = (check_n_paths(n_paths), check_path_candidates(path_candidates))
    c_pad = bucket(max(p.n_candidates for p in problems))
    prepared = [
        prepare(p, s, realisation, opts, flags, min_reliability, c_pad)
        for p, s in zip(problems, states)
    ]
    groups: dict = {}
    for i, (_, q, ev, statics) in enumerate(prepared):
        shapes = tuple((k, np.shape(v)) for k, v in sorted(q.items()))
        # small graphs of one group are stacked with their edges padded to the group's largest
        e_shape = np.shape(ev["head"]) if statics[-1] else None
        groups.setdefault((statics, shapes, e_shape), []).append(i)
    results: list[GroundingResult | None] = [None] * len(problems)
    for (statics, _, _), members in groups.items():
        if not shared and statics[-1]:  # large graphs each have their own ELL layout: no stack
            for i in members:
                state, q, ev, _ = prepared[i]
                out = dict(_compiled(statics, None)(ev, q, realisation), log_prior=q["log_prior"])
                results[i] = _finish(
                    out, problems[i], (state, q, statics), realisation, report, float(opts["tau"])
                )
            continue
        # the batch is padded to a power of two (repeating its last question) so that groups of
        # similar size share one compiled program; the padding's outputs are dropped
        padded = members + [members[-1]] * (bucket(len(members), floor=1) - len(members))
        qs = jax.tree_util.tree_map(lambda *x: np.stack(x), *[prepared[i][1] for i in padded])
        if shared:
            ev = prepared[members[0]][2]
        else:
            e_max = max(len(prepared[i][2]["head"]) for i in members)
            evs = [pad_edges(prepared[i][2], e_max) for i in padded]
            ev = jax.tree_util.tree_map(lambda *x: np.stack(x), *evs)
        out = _compiled(statics, not shared)(ev, qs, realisation)
        out = jax.tree_util.tree_map(np.asarray, out)  # unstack on the host: no compile per shape
        for j, i in enumerate(members):
            one = jax.device_put(jax.tree_util.tree_map(lambda x, j=j: x[j], out))
            state, q, _, _ = prepared[i]
            one["log_prior"] = q["log_prior"]
            results[i] = _finish(
                one, problems[i], (state, q, statics), realisation, report, float(opts["tau"])
            )
    return results  # type: ignore[return-value]


def _ground_defaults() -> dict:
    """:func:`ground`'s keyword defaults for the scalars ``ground_batch`` passes through."""
    own = {"realisation", "min_reliability", "n_paths", "path_candidates"}
    return {
        k: p.default
        for k, p in inspect.signature(ground).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not p.empty and k not in own
    }
