r"""Latent worlds, observation maps and random evidence processes (Secs. 3.2, 6.1, 8.1).

A latent world :math:`G^*` is a :class:`~grounding.TypedGraph` used only to state epistemic
properties; the grounding operators never see it. An observation map :math:`O_q` turns a
world into an evidence state :math:`R` (Eq. (4)). Theorem 1's construction builds two worlds
with the same observation that disagree on a claim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from grounding.evidence import EvidenceState
from grounding.graph import Triple, TypedGraph

__all__ = [
    "HidingObservation",
    "truth",
    "two_world_witness",
    "hard_rule_requirements",
    "independent_edge_retention",
    "entity_dropout",
    "relation_dropout",
    "coverage_monte_carlo",
]

ObservationMap = Callable[[TypedGraph], EvidenceState]


@dataclasses.dataclass(frozen=True)
class HidingObservation:
    r"""Deterministic observation map :math:`O_q` that hides every ``(head, relation, ·)`` edge
    listed in ``hidden`` (e.g. retrieval that omits the answer-bearing edge), Eq. (4).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (4), Thm. 1.
    """

    hidden: frozenset[tuple[str, str]]
    coverage: float = 1.0

    def __call__(self, world: TypedGraph) -> EvidenceState:
        keep = np.array([(h, r) not in self.hidden for h, r, _ in world.triples()], dtype=bool)
        return EvidenceState(graph=world.subgraph(keep), coverage=self.coverage)


def truth(world: TypedGraph, claim: Triple) -> bool:
    r"""The external truth predicate :math:`\mathbb T(W, \rho)` for a triple claim.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 1 (the external truth predicate).
    """
    return world.has_triple(claim)


def two_world_witness(
    observed: TypedGraph, claim: Triple, alternative_tail: str
) -> tuple[TypedGraph, TypedGraph, HidingObservation]:
    r"""Thm. 1's construction for any evidence graph :math:`R` and unobserved claim ``(h, r, t)``.

    :math:`W_1 = R + (h, r, t)` (the claim is true), :math:`W_2 = R + (h, r, t')` with
    :math:`t' \ne t` (it is false: the object is elsewhere), and :math:`O_q` hides
    ``(h, r, ·)``; then :math:`O_q(W_1) = O_q(W_2) = R` whenever :math:`R` itself has no
    ``(h, r, ·)`` edge.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Thm. 1.
    """
    h, r, t = claim
    if alternative_tail == t:
        raise ValueError("alternative_tail must differ from the claimed tail")
    if any(a == h and b == r for a, b, _ in observed.triples()):
        raise ValueError(f"observed already has a ({h}, {r}, ·) edge: the claim is not unobserved")
    w1 = observed.add_triples([claim])
    w2 = observed.add_triples([(h, r, alternative_tail)])
    return w1, w2, HidingObservation(frozenset({(h, r)}))


def hard_rule_requirements(
    rule: Callable[[EvidenceState, Triple], int],
    worlds: Sequence[TypedGraph],
    observe: ObservationMap,
    claim: Triple,
) -> tuple[bool, bool]:
    r"""Check Thm. 1's two requirements for a hard rule :math:`h(q, R, \rho) \in \{0, 1\}` over worlds.

    Returns ``(keeps_true_unobserved, rejects_false_unsupported)``: whether the rule retains
    the claim in every world where it is true but unobserved, and rejects it in every world
    where it is false (and hence unsupported). Thm. 1: not both, when two worlds share an
    observation and disagree on the truth.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Thm. 1.
    """
    keeps, rejects = True, True
    for w in worlds:
        r = observe(w)
        observed = r.graph.has_triple(claim)
        decision = rule(r, claim)
        if truth(w, claim) and not observed and decision != 1:
            keeps = False
        if not truth(w, claim) and not observed and decision != 0:
            rejects = False
    return keeps, rejects


# ----------------------------------------------------------------------------- Sec. 8.1 processes
# A process maps (world, rng) to a boolean keep-mask over the world's edges (NumPy, cheap to
# sample many times); ``world.subgraph(mask)`` is the observed snapshot.
def independent_edge_retention(
    world: TypedGraph, probs: np.ndarray | float, rng: np.random.Generator
) -> np.ndarray:
    """Each edge retrieved independently with its probability (the baseline of Prop. 4).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 4.
    """
    p = np.broadcast_to(np.asarray(probs, dtype=float), (world.n_edges,))
    return rng.random(world.n_edges) < p


def entity_dropout(world: TypedGraph, p_miss: float, rng: np.random.Generator) -> np.ndarray:
    """Correlated failure: each entity is missed with probability ``p_miss`` and every edge
    touching a missed entity disappears with it (a lost seed removes its neighbourhood)."""
    missed = rng.random(world.n_nodes) < p_miss
    h, t = np.asarray(world.head), np.asarray(world.tail)
    return ~(missed[h] | missed[t])


def relation_dropout(
    world: TypedGraph, p_miss: Sequence[float] | np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Missing-not-at-random failure: a whole relation type is missed with its own probability."""
    p = np.asarray(p_miss, dtype=float)
    if p.shape != (len(world.relations),):
        raise ValueError(f"p_miss must have one entry per relation ({len(world.relations)})")
    missed = rng.random(len(world.relations)) < p
    return ~missed[np.asarray(world.relation)]


def coverage_monte_carlo(
    world: TypedGraph,
    paths: Sequence[Sequence[Triple]],
    process: Callable[[TypedGraph, np.random.Generator], np.ndarray],
    n_samples: int,
    seed: int,
    retained: Callable[[TypedGraph], bool] | None = None,
) -> tuple[float, float]:
    r"""Monte-Carlo estimate of Eq. (15), :math:`\mathrm{Cov}(q) = \Pr_R[\exists\gamma\in\mathcal P^\dagger: \gamma\subseteq R]`.

    Optionally also estimates :math:`\Pr_R[\rho^\dagger \in F_R]` for a hard rule ``retained``
    evaluated on each sampled snapshot (Prop. 4 says it is at most the coverage).

    Args:
        world: the latent world :math:`G^*`.
        paths: the sufficient support paths :math:`\mathcal P^\dagger(q)`, as triples of ``world``.
        process: the evidence process, returning a keep-mask over ``world``'s edges.
        n_samples: Monte-Carlo sample size.
        seed: NumPy seed.
        retained: optional hard rule on the observed snapshot.

    Returns:
        ``(coverage, retention)``; ``retention`` is 0.0 when no rule is given.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (15), Prop. 4.
    """
    if n_samples < 1:
        raise ValueError("n_samples must be >= 1")
    rng = np.random.default_rng(seed)
    triples = world.triples()
    # each path is a list of edge-index groups, one per triple (parallel copies form a group)
    groups = []
    for p in paths:
        g = [np.flatnonzero([x == tuple(t) for x in triples]) for t in p]
        if any(len(ix) == 0 for ix in g):
            raise ValueError(f"path {p} has triples that are not in the world")
        groups.append(g)
    cov = ret = 0
    for _ in range(n_samples):
        keep = np.asarray(process(world, rng), dtype=bool)
        cov += any(all(keep[ix].any() for ix in g) for g in groups)
        if retained is not None:
            ret += bool(retained(world.subgraph(keep)))
    return cov / n_samples, ret / n_samples
