r"""Stage 2 of the solver: the compiled program, one jitted function of the prepared arrays per
:class:`~grounding.solver.prepare.Statics`.

For each candidate :math:`\rho`: the raw energy :math:`E^{\mathrm{path}}_R(\rho)` (Eq. (11)
at ``tau = 0``, Eq. (13) otherwise), the status (Sec. 3.3) and the slack,
contradiction-dominant energy (Eq. (19), Axiom 4), the soft posterior (Eq. (7)), the hard
posterior on the total energy without slack (Eqs. (5)-(6)), the action (Axiom 8, Eq. (22))
and the Thm. 3 certificate.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from grounding._numerics import (
    logaddexp,
    logsumexp,
    neg_scaled,
    scaled_energy,
    temperature_floor,
)
from grounding.decision import Action, classify_status, decide_action, status_energy
from grounding.geometry import Metric, get_metric
from grounding.paths.chains import chain_energy_and_log_mass, chain_log_mass
from grounding.paths.costs import step_costs
from grounding.posterior import gibbs_log_posterior, hard_log_posterior
from grounding.problem import Realization, edge_costs_from_arrays
from grounding.programs import run_program
from grounding.result import Certificate
from grounding.semiring.layout import as_graph
from grounding.semiring.recursion import exact_hops, run
from grounding.solver.config import checked_settings
from grounding.solver.prepare import ChainGroups, Statics

__all__ = ["compiled", "chain_costs", "CHAIN_CHUNK_ELEMENTS"]


def _mention_costs(mentions, realization, metric, n_nodes):
    """``[..., N]`` Eq. (9) node costs of mention ids (``-1``: any node, cost 0); without a
    realization a mention costs 0 at its entity and ``+inf`` elsewhere."""
    wild = (mentions < 0)[..., None]
    if realization is None:
        d = jnp.where(mentions[..., None] == jnp.arange(n_nodes), 0.0, jnp.inf)
    else:
        emb = realization.embeddings
        d = get_metric(metric)(emb[mentions][..., None, :], emb)  # Eq. (9)
        pad = [(0, 0)] * (d.ndim - 1) + [(0, n_nodes - emb.shape[0])]
        d = jnp.pad(d, pad, constant_values=jnp.inf)  # padding nodes (see ``prepare``)
    return jnp.where(wild, 0.0, d)


#: Candidates per chunk of the claim-chain energies: about this many ``[T, E]`` step costs and
#: ``[T + 1, N]`` node costs are live at once (``2^22`` floats: 32 MiB in float64), so memory
#: stays bounded however many chains a question has.
CHAIN_CHUNK_ELEMENTS = 1 << 22


def chain_costs(
    mentions: jax.Array,
    claimed: jax.Array,
    cost: jax.Array,
    ev: Mapping[str, ArrayLike],
    q: Mapping[str, ArrayLike],
    realization: Realization | None,
    metric: str | Metric,
    n_nodes: int,
):
    """Node costs ``[..., T + 1, N]`` (Eq. (9)) and step costs ``[..., T, E]`` (Eq. (10)) of
    claim chains given by their mention and claimed-relation ids ``[..., T + 1]``, ``[..., T]``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eqs. (9)-(10).
    """
    node = _mention_costs(mentions, realization, metric, n_nodes)  # Eq. (9)
    lead = claimed.shape[:-1]
    step = jax.vmap(step_costs, (None, None, 0, None))(
        cost, ev["relation"], claimed.reshape(-1, claimed.shape[-1]), q["mismatch_cost"]
    )  # Eq. (10) per hop
    return node, step.reshape(*lead, *step.shape[1:])


def _chain_energies(layout, cost, ev, q, structure, tropical, realization, metric, n_nodes):
    """Raw energies and log masses ``[C]`` of claim chains, grouped by their hop count; each
    group in chunks of candidates (``jax.lax.map``) so that only a chunk's costs are live.

    Which candidate sits in which slot is an input (``q["alone{T}"]``, ``q["shared{T}"]``, see
    :class:`~grounding.solver.prepare.ChainGroups`), so the program depends on the slot counts
    only. An empty slot holds the index ``C``: it reads a clamped row (any valid chain) and
    its result is dropped by the out-of-range scatter (``mode="drop"``), never written over a
    candidate; candidates in no slot (padding) keep ``+inf`` / ``-inf``."""
    C = q["log_prior"].shape[0]
    raw, log_mass = jnp.full(C, jnp.inf), jnp.full(C, -jnp.inf)

    def one(rows):
        node, step = chain_costs(*rows, cost, ev, q, realization, metric, n_nodes)
        return chain_energy_and_log_mass(
            layout, node, step, q["tau"], tropical, ev["edge_mask"]
        )  # Eq. (11) / (13)

    for t, m in structure.groups:
        idx = q[f"alone{t}"]
        src = jnp.minimum(idx, C - 1)  # empty slots read a valid row; their output is dropped
        rows = (q["mentions"][src, : t + 1], q["claimed"][src, :t])
        chunk = max(1, CHAIN_CHUNK_ELEMENTS // (t * cost.shape[0] + (t + 1) * n_nodes))
        if chunk >= m:
            e, lm = jax.vmap(one)(rows)
        else:
            e, lm = jax.lax.map(one, rows, batch_size=chunk)
        raw = raw.at[idx].set(e, mode="drop")
        log_mass = log_mass.at[idx].set(lm, mode="drop")
    for t, _, _ in structure.shared:
        idx = q[f"shared{t}"]  # [K, M]: one row per shared prefix
        e, lm = jax.vmap(
            lambda row, t=t: _shared_prefix(
                layout, cost, ev, q, t, row, tropical, realization, metric, n_nodes
            )
        )(idx)
        raw = raw.at[idx.reshape(-1)].set(e.reshape(-1), mode="drop")
        log_mass = log_mass.at[idx.reshape(-1)].set(lm.reshape(-1), mode="drop")
    return raw, log_mass


def _shared_prefix(layout, cost, ev, q, t, idx, tropical, realization, metric, n_nodes):
    r"""Raw energies and log masses ``[M]`` of the ``T``-hop chains in the slots ``idx``, which
    share every mention but the last and every claimed relation: the forward messages
    :math:`m_T(v)` of the shared prefix are computed once (the recursion of Eqs. (11)/(13)
    with the last node cost left out), and each chain adds its own last node cost,
    :math:`a_T(v) = m_T(v) - c_T(v)/\tau`: the same arithmetic as grounding each chain alone
    (:func:`grounding.paths.chain_energy_and_log_mass`). Empty slots (index ``C``, and every
    slot of an empty prefix row) read a clamped row; the caller drops their output."""
    C = q["log_prior"].shape[0]
    src = jnp.minimum(idx, C - 1)
    rep = src[0]  # a real chain whenever the row holds a prefix (slot 0 is filled first)
    node, step = chain_costs(
        q["mentions"][rep, : t + 1], q["claimed"][rep, :t], cost, ev, q, realization, metric,
        n_nodes,
    )  # fmt: skip  # Eqs. (9)-(10) of the shared prefix
    last = _mention_costs(q["mentions"][src, t], realization, metric, n_nodes)  # [M, N]
    scale = 1.0 if tropical else q["tau"]
    m = exact_hops(
        layout,
        neg_scaled(node[0], scale)[:, None],
        neg_scaled(step, scale),
        neg_scaled(node[1:].at[-1].set(0.0), scale),  # the last node cost: per chain, below
        tropical,
    )[:, 0]
    a_t = m + neg_scaled(last, scale)  # [M, N]
    log_z = jnp.max(a_t, axis=1) if tropical else logsumexp(a_t, axis=1)
    if tropical:
        return scaled_energy(1.0, -log_z), log_z  # Eq. (11)
    zero_node, zero_step = jnp.zeros_like(node), jnp.where(ev["edge_mask"], 0.0, jnp.inf)
    log_w = chain_log_mass(layout, zero_node, jnp.broadcast_to(zero_step, step.shape), scale, False)
    return scaled_energy(scale, -(log_z - log_w)), log_z  # Eq. (13)


def _answer_energies(layout, cost, ev, q, structure, tropical, n_nodes):
    max_hops, min_hops = structure
    anchors, tau = q["anchors"], q["tau"]
    real = q["anchor_mask"][:, None]  # padding anchors (repeats of the first) count for nothing
    is_anchor = jnp.zeros(n_nodes, bool).at[anchors].set(True)
    if tropical:  # Eq. (11): min over anchors and walks
        e = run(layout, cost, None, anchors, tau, max_hops, True, False).min(axis=0)
        e = jnp.where(is_anchor & (min_hops == 0), 0.0, e)  # the empty walk
        return e[q["answers"]], -e[q["answers"]]  # log mass of the best walk (unused at tau 0)
    # Eq. (13) with the uniform prior over the family: walks from any anchor of min..max hops
    field = run(layout, cost, None, anchors, tau, max_hops, False, False)
    lm = logsumexp(jnp.where(real, neg_scaled(field, tau), -jnp.inf), axis=0)
    zero = jnp.where(ev["edge_mask"], 0.0, jnp.inf)
    count = run(layout, zero, None, anchors, 1.0, max_hops, False, False)  # -log #walks
    log_w = logsumexp(jnp.where(jnp.isfinite(count) & real, -count, -jnp.inf), axis=None)
    if min_hops == 0:
        lm = logaddexp(lm, jnp.where(is_anchor, 0.0, -jnp.inf))
        log_w = logaddexp(log_w, jnp.log(jnp.sum(q["anchor_mask"])))
    log_w = jnp.where(jnp.isfinite(log_w), log_w, 0.0)
    e = scaled_energy(tau, -(lm - log_w))  # +inf where no walk reaches (lm = -inf)
    return e[q["answers"]], lm[q["answers"]]


def _energies(layout, cost, ev, q, structure, tropical, realization, metric, n_nodes):
    """Raw energies and log masses ``[C]`` by Eq. (11) (``tropical``) or Eq. (13)."""
    if isinstance(structure, ChainGroups):
        return _chain_energies(
            layout, cost, ev, q, structure, tropical, realization, metric, n_nodes
        )
    return _answer_energies(layout, cost, ev, q, structure, tropical, n_nodes)


def _by_temperature(layout, cost, ev, q, structure, flags, realization, metric, n_nodes):
    """:func:`_energies` by the path rule ``tau`` selects, and whether it could apply it:
    Eq. (11) below :func:`~grounding._numerics.temperature_floor` (``tau = 0`` and its
    underflow: the limit of Eq. (13) as ``tau -> 0+``), Eq. (13) above. A concrete ``tau``
    chose at build time (``flags``); a traced one chooses here, at run time (``lax.cond``:
    under ``vmap`` both rules run and each row takes its own; the entropic rule reads a safe
    ``tau`` of 1 on the rows below the floor, so no gradient is NaN). Answers over walks of
    any length have Eq. (11) only: a traced ``tau`` above the floor is flagged."""
    tropical, traced = flags[0], flags[4]
    tau = q["tau"]
    floor = temperature_floor(tau.dtype)

    def at(t, rule):
        args = (layout, cost, ev, dict(q, tau=t), structure, rule, realization, metric, n_nodes)
        return tuple(x.astype(cost.dtype) for x in _energies(*args))

    if not traced:
        return (*at(tau, True), True) if tropical else (*at(jnp.maximum(tau, floor), False), True)
    above = tau >= floor
    if not isinstance(structure, ChainGroups) and structure[0] is None:  # max_hops=None
        return (*at(tau, True), ~above)
    safe = jnp.where(above, tau, jnp.ones_like(tau))
    raw, log_mass = jax.lax.cond(above, lambda t: at(t, False), lambda t: at(t, True), safe)
    return raw, log_mass, True


def _core(ev, q, realization, *, statics: Statics):
    structure, flags, metric, n_nodes, has_layout = statics
    has_eps, has_theta, has_omega = flags[1:4]
    q, ok = checked_settings(q)  # traced settings out of range: read as 0, result flagged
    layout = ev["layout"] if has_layout else as_graph(ev["head"], ev["tail"], n_nodes)
    cost = edge_costs_from_arrays(
        ev["head"], ev["relation"], ev["tail"], ev["reliability"], realization,
        q["alpha"], q["xi"], q["hop_cost"],
    )  # fmt: skip
    cost = jnp.where(ev["edge_mask"], cost, jnp.inf)  # padded edges do not exist
    out = {"edge_cost": cost}
    raw, log_mass, tau_ok = _by_temperature(
        layout, cost, ev, q, structure, flags, realization, metric, n_nodes
    )
    ok = ok & tau_ok
    # the largest energy any evidence state can assign
    if isinstance(structure, ChainGroups):
        e_max = q["kappa"] + q["contradiction_penalty"]
    else:
        e_max = q["kappa"]
    # an out-of-graph candidate has no walk: raw +inf, no mass (as an entity without edges)
    raw = jnp.where(q["schema"] & ~q["absent"], raw, jnp.inf)
    log_mass = jnp.where(q["absent"], -jnp.inf, log_mass)
    status = classify_status(raw, q["counter"], q["schema"], q["eps_s"])  # Sec. 3.3
    slack = status_energy(raw, status, q["kappa"], q["contradiction_penalty"])  # Eq. (19) + Axiom 4
    energy = slack + q["claim"]
    log_post = gibbs_log_posterior(q["log_prior"], energy, q["lam"])  # Eq. (7)
    support = q["log_prior"] > -jnp.inf
    # Thm. 3 needs finite energies (and settings in range: a flagged result has none)
    valid = jnp.all(jnp.isfinite(energy) | ~support) & ok
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
        action=jnp.where(
            ok,
            decide_action(
                log_post, status, q["margin_threshold"], q["theta"] if has_theta else None
            ),
            int(Action.ABSTAIN),
        ),
        certificate=Certificate.build(q["lam"], omega, log_post, valid),
    )
    if has_eps:
        # F_R (Eq. (5)) thresholds the total energy without slack: the path energy, +inf when
        # contradicted (Axiom 4 with absence at +inf) or out of schema, plus any claim energy
        hard_energy = status_energy(raw, status, jnp.inf, q["contradiction_penalty"]) + q["claim"]
        hard = hard_log_posterior(q["log_prior"], hard_energy, q["eps"])  # Eq. (6)
        # all -inf: Eq. (6) undefined (p_theta(F_R) = 0), the hard rule abstains
        out.update(hard=hard, hard_abstained=~jnp.any(hard > -jnp.inf))
    return out


def _program(statics: Statics, batched_evidence: bool | None):
    core = functools.partial(_core, statics=statics)
    if batched_evidence is not None:
        core = jax.vmap(core, in_axes=(0 if batched_evidence else None, 0, None))
    return core


def compiled(statics: Statics, batched_evidence: bool | None):
    """The program of a configuration, a function of ``(ev, q, realization)``, compiled per
    input shapes in the bounded cache of :mod:`grounding.programs` (least recently used
    programs are dropped, with their executables). ``batched_evidence``: ``None`` unbatched,
    else ``vmap`` over questions with the evidence batched (``True``) or shared (``False``)."""
    return functools.partial(
        run_program,
        ("solver", statics, batched_evidence),
        functools.partial(_program, statics, batched_evidence),
    )
