r"""The paper's running example, ready to ground: Lou Seal (Sec. 5.4, Thm. 1, Fig. 2).

:func:`lou_seal_example` builds the two-world construction of Thm. 1 on the shipped Lou Seal
data (:mod:`grounding.datasets.lou_seal`): the observed evidence state :math:`R = W_1` minus
the championship edge, the alternative world
:math:`W_2 = R + (\text{giants}, \text{most\_recent\_world\_series\_win}, 2012)`, a TransE
realization, the five candidate claim chains with a declared *stand-in* prior as a
:class:`~grounding.GroundingProblem`, and their grounding against :math:`R` by
:func:`grounding.ground` (Eqs. (8)-(11), statuses of Sec. 3.3, slack (19), Axiom 4).

Modeling choices (documented, not derived from the paper):

- **Embeddings.** :math:`\eta` and the translations :math:`t_r` minimize
  :math:`\sum_{(u,r,v)\in W_1}\|\eta_u + t_r - \eta_v\|^2 + \mu\|\eta - \eta^0\|^2` (linear least
  squares, :func:`grounding.learn.fit_translation_embeddings`) with a seeded Gaussian anchor
  :math:`\eta^0` (seed 0, ``d = 8``, ``mu = 0.1``). The ridge term keeps entities apart where
  TransE would collapse them (two teams in one league force equal team vectors). The
  realization is fitted on the latent graph, as a pretrained KG embedding of the full
  knowledge base would be; the grounding operators only ever see the observed edges.
- **Mentions.** :math:`\psi_t(\rho)` is the embedding of the entity the trajectory names
  (perfect entity linking). A drifted or reversed chain is penalized because its mentions do
  not align with the observed walk (entity cost, Eq. (9)).
- **Statuses.** A chain is contradicted if any hop has counter-support, supported if its
  chain energy is at most ``eps_s``, else unsupported; its energy is
  :func:`grounding.status_energy` (slack ``kappa`` for unsupported, ``2 kappa`` for
  contradicted).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from grounding.datasets.lou_seal import (
    CLAIMS,
    GIANTS,
    LAST_WIN,
    QUESTION,
    STAND_IN_PRIOR,
    lou_seal,
    lou_seal_evidence,
)
from grounding.evidence import EvidenceState
from grounding.geometry import Translation
from grounding.graph import Triple, TypedGraph
from grounding.learn.least_squares import fit_translation_embeddings
from grounding.problem import ClaimChain, GroundingProblem, Realization
from grounding.result import GroundingResult
from grounding.solver import ground
from grounding.worlds import HidingObservation, two_world_witness

__all__ = ["CANDIDATES", "LouSealExample", "lou_seal_example"]


#: The candidate trajectories of :data:`grounding.datasets.lou_seal.CLAIMS` as claim chains.
CANDIDATES: tuple[ClaimChain, ...] = tuple(
    ClaimChain(entities, relations, name, description)
    for name, entities, relations, description in CLAIMS
)


@dataclasses.dataclass(frozen=True)
class LouSealExample:
    r"""Everything needed to reproduce the running example and Fig. 2.

    Attributes:
        world_1: latent world :math:`W_1` (the full graph; the claim is true).
        world_2: latent world :math:`W_2 = R + (\text{giants}, r, \text{alternative\_tail})`.
        observed: the observed graph :math:`G_R = O_q(W_1) = O_q(W_2)`.
        evidence: :math:`R` as an :class:`~grounding.EvidenceState` (see
            :func:`~grounding.datasets.lou_seal_evidence`).
        observation: the observation map :math:`O_q` (hides
            ``(giants, most_recent_world_series_win, ·)``).
        claim: the hidden answer-bearing triple.
        alternative_tail: where :math:`W_2` puts the championship instead.
        problem: the question, :data:`CANDIDATES` and the stand-in log prior.
        realization: the TransE realization (``embeddings``, ``relation_map``).
        prior_note: what the prior is (a stand-in).
        kappa, eps_s, alpha, xi: slack, support tolerance, residual and reliability scales.
        grounded_R: the grounding against :math:`R` at ``lam = 1``.
    """

    world_1: TypedGraph
    world_2: TypedGraph
    observed: TypedGraph
    evidence: EvidenceState
    observation: HidingObservation
    claim: Triple
    alternative_tail: str
    problem: GroundingProblem
    realization: Realization
    prior_note: str
    kappa: float
    eps_s: float
    alpha: float
    xi: float
    grounded_R: GroundingResult

    @property
    def candidates(self) -> tuple[ClaimChain, ...]:
        return self.problem.candidates  # type: ignore[return-value]

    @property
    def log_prior(self) -> jax.Array:
        return self.problem.log_prior

    @property
    def embeddings(self) -> jax.Array:
        return self.realization.embeddings

    @property
    def relation_map(self) -> Translation:
        return self.realization.relation_map  # type: ignore[return-value]

    @property
    def names(self) -> list[str]:
        return list(self.problem.names)

    @property
    def correct_index(self) -> int:
        return self.names.index("correct_2014")

    def ground(self, state: EvidenceState, lam: float = 1.0, **kw: Any) -> GroundingResult:
        """:func:`grounding.ground` of the candidates against an evidence state over the same
        vocabulary, with the example's slack, tolerances and realization (``kw`` overrides)."""
        params = dict(
            lam=lam, kappa=self.kappa, eps_s=self.eps_s, alpha=self.alpha, xi=self.xi,
            realization=self.realization,
        )  # fmt: skip
        return ground(self.problem, state, **{**params, **kw})

    def observe(self, world: TypedGraph) -> EvidenceState:
        """:math:`O_q(W)` as a full evidence state (declared statuses included)."""
        return lou_seal_evidence(self.observation(world).graph)

    def hard_rule(self, state: EvidenceState, claim: Triple) -> int:
        r"""The hard rule of Thm. 1 for the chain ending in ``claim``: retain (1) iff the chain is
        in the feasible set :math:`F_R = \{E^{\min}_R \le \epsilon_s\}` (Eq. (5))."""
        i = next(k for k, c in enumerate(self.candidates) if c.hops[-1] == tuple(claim))
        return int(bool(self.ground(state, n_paths=0).raw_energy[i] <= self.eps_s))


def lou_seal_example(
    alternative_tail: str = "2012_world_series",
    *,
    dim: int = 8,
    mu: float = 0.1,
    seed: int = 0,
    kappa: float = 1.0,
    eps_s: float = 0.5,
    alpha: float = 1.0,
    xi: float = 1.0,
) -> LouSealExample:
    """Build the Lou Seal two-world example (Thm. 1, Fig. 2). Deterministic.

    Example:
        >>> ex = lou_seal_example()
        >>> ex.observed.has_triple(ex.claim), ex.world_1.has_triple(ex.claim)
        (False, True)
        >>> ex.grounded_R.decision.name, ex.grounded_R.names[int(ex.grounded_R.best)]
        ('RETRIEVE', 'unsupported_generic')
    """
    w1 = lou_seal()
    claim = (GIANTS, LAST_WIN, "2014_world_series")
    observed = w1.subgraph(~w1.edge_mask([claim]))
    _, w2, observe = two_world_witness(observed, claim, alternative_tail)
    eta, t = fit_translation_embeddings(w1, dim=dim, mu=mu, seed=seed)
    realization = Realization(jnp.asarray(eta), Translation(jnp.asarray(t)))
    log_prior = jnp.log(jnp.asarray([STAND_IN_PRIOR[c.name] for c in CANDIDATES]))
    problem = GroundingProblem(QUESTION, CANDIDATES, log_prior)
    evidence = lou_seal_evidence(observed)
    grounded = ground(
        problem, evidence, lam=1.0, kappa=kappa, eps_s=eps_s, alpha=alpha, xi=xi,
        realization=realization,
    )  # fmt: skip
    return LouSealExample(
        world_1=w1,
        world_2=w2,
        observed=observed,
        evidence=evidence,
        observation=observe,
        claim=claim,
        alternative_tail=alternative_tail,
        problem=problem,
        realization=realization,
        prior_note="hand-set stand-in for an LLM prior p_theta(rho|q); not produced by a model",
        kappa=kappa,
        eps_s=eps_s,
        alpha=alpha,
        xi=xi,
        grounded_R=grounded,
    )
