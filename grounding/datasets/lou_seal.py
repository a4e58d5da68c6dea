r"""The Lou Seal running example (Sec. 5.4, Thm. 1, Fig. 2 of the paper) as a shipped dataset.

Question (Complex WebQuestions, Talmor & Berant 2018): *"Lou Seal is the mascot for the team
that last won the World Series when?"*  The supported route is

    LOU SEAL -mascot_of-> SAN FRANCISCO GIANTS -most_recent_world_series_win-> 2014 WORLD SERIES.

:func:`lou_seal` returns the latent graph :math:`W_1` (``data/lou_seal.tsv``, real facts only).
:func:`lou_seal_example` builds the whole two-world construction of Thm. 1 on it: the observed
evidence state :math:`R = W_1` minus the championship edge, the alternative world
:math:`W_2 = R + (\text{giants}, \text{most\_recent\_world\_series\_win}, 2012)`, an entity
embedding realisation with TransE relation maps, five candidate trajectories written as claim
chains, a declared *stand-in* for the LLM prior, and their energies against :math:`R`
(Eqs. (8)-(11) through :func:`grounding.paths.chain_energy`, statuses of Sec. 3.3, slack (19)).

Modelling choices (documented, not derived from the paper):

- **Embeddings.** :math:`\eta` and the translations :math:`t_r` minimise
  :math:`\sum_{(u,r,v)\in W_1}\|\eta_u + t_r - \eta_v\|^2 + \mu\|\eta - \eta^0\|^2` (linear least
  squares, numpy) with a seeded Gaussian anchor :math:`\eta^0` (seed 0, ``d = 8``,
  ``mu = 0.1``). The ridge term keeps entities apart where TransE would collapse them (two
  teams in one league force equal team vectors). The realisation is fitted on the latent graph,
  as a pretrained KG embedding of the full knowledge base would be; the grounding operators
  only ever see the observed edges.
- **Mentions.** :math:`\psi_t(\rho)` is the embedding of the entity the trajectory names
  (perfect entity linking). A drifted or reversed chain is penalised because its mentions do
  not align with the observed walk (entity cost, Eq. (9)).
- **Statuses.** ``mascot_of`` and ``most_recent_world_series_win`` are declared functional
  (one object per subject), and ``mascot_of`` antisymmetric (the reversal of an observed mascot
  edge is explicit counter-evidence). A chain is contradicted if any hop has counter-support,
  supported if its chain energy is at most ``eps_s``, else unsupported; its energy is
  :func:`grounding.status_energy` (slack ``kappa`` for unsupported, ``2 kappa`` for
  contradicted).
"""

from __future__ import annotations

import dataclasses
from importlib import resources

import jax
import jax.numpy as jnp
import numpy as np

from grounding.datasets.tsv import load_triples
from grounding.decision import classify_status, status_energy
from grounding.evidence import EvidenceState, Triple, TypedGraph
from grounding.geometry import Translation
from grounding.learn.fit import fit_translation_embeddings
from grounding.paths import chain_energy
from grounding.worlds import HidingObservation, two_world_witness

__all__ = [
    "lou_seal",
    "lou_seal_example",
    "lou_seal_evidence",
    "fit_translation_embeddings",
    "ClaimChain",
    "Grounded",
    "LouSealExample",
    "CANDIDATES",
    "STAND_IN_PRIOR",
    "FUNCTIONAL",
    "ANTISYMMETRIC",
]

GIANTS = "san_francisco_giants"
MASCOT = "mascot_of"
LAST_WIN = "most_recent_world_series_win"

#: Relations declared functional (a different observed object is counter-support, Sec. 3.3).
FUNCTIONAL = frozenset({MASCOT, LAST_WIN})
#: Relations declared antisymmetric (the reversed triple of an observed edge is counter-support).
ANTISYMMETRIC = frozenset({MASCOT})


def lou_seal() -> TypedGraph:
    """The latent Lou Seal graph :math:`W_1` (19 real triples, see ``data/lou_seal.tsv``)."""
    return load_triples(resources.files("grounding.datasets") / "data" / "lou_seal.tsv")


# ----------------------------------------------------------------------------- candidates
@dataclasses.dataclass(frozen=True)
class ClaimChain:
    """A candidate trajectory written as a claim chain ``z_0 -r_1-> z_1 ... -r_T-> z_T``."""

    name: str
    entities: tuple[str, ...]
    relations: tuple[str, ...]
    description: str

    def __post_init__(self) -> None:
        if len(self.entities) != len(self.relations) + 1 or not self.relations:
            raise ValueError("a claim chain needs T >= 1 relations and T + 1 entities")

    @property
    def hops(self) -> list[Triple]:
        return [(self.entities[i], r, self.entities[i + 1]) for i, r in enumerate(self.relations)]

    @property
    def answer(self) -> str:
        return self.entities[-1]


CANDIDATES: tuple[ClaimChain, ...] = (
    ClaimChain(
        "correct_2014",
        ("lou_seal", GIANTS, "2014_world_series"),
        (MASCOT, LAST_WIN),
        "the supported two-hop route (true in W1)",
    ),
    ClaimChain(
        "stale_2012",
        ("lou_seal", GIANTS, "2012_world_series"),
        (MASCOT, LAST_WIN),
        "right team, an earlier title (true in W2)",
    ),
    ClaimChain(
        "wrong_team_drift",
        ("lou_seal", "st_louis_cardinals", "2011_world_series"),
        (MASCOT, LAST_WIN),
        "drifts to another mascot's team",
    ),
    ClaimChain(
        "relation_reversal",
        (GIANTS, "lou_seal", "2014_world_series"),
        (MASCOT, LAST_WIN),
        "reverses mascot_of (the team is the mascot of Lou Seal)",
    ),
    ClaimChain(
        "unsupported_generic",
        ("lou_seal", "san_francisco", "2010_world_series"),
        ("located_in", LAST_WIN),
        "invents a city-level bridge and a generic answer",
    ),
)

#: Declared stand-in for the LLM prior :math:`p_\theta(\rho\mid q)` over :data:`CANDIDATES`.
#: Hand-set numbers, NOT the output of any language model: it favours the generic answer, as
#: the paper's discussion of Eq. (20) supposes ("the model prior strongly favors a generic but
#: unsupported answer").
STAND_IN_PRIOR: dict[str, float] = {
    "correct_2014": 0.25,
    "stale_2012": 0.20,
    "wrong_team_drift": 0.12,
    "relation_reversal": 0.08,
    "unsupported_generic": 0.35,
}


def lou_seal_evidence(graph: TypedGraph, coverage: float = 1.0) -> EvidenceState:
    """Evidence state over ``graph`` with the declared :data:`FUNCTIONAL` relations and the
    reversals of observed :data:`ANTISYMMETRIC` edges as explicit counter-evidence."""
    negative = frozenset((t, r, h) for h, r, t in graph.triples() if r in ANTISYMMETRIC)
    return EvidenceState(
        graph=graph,
        negative=negative,
        functional=FUNCTIONAL & frozenset(graph.relations),
        coverage=coverage,
        provenance={"dataset": "lou_seal", "source": "Complex WebQuestions (Talmor & Berant 2018)"},
    )


@dataclasses.dataclass(frozen=True)
class Grounded:
    """Energies of the candidates against one evidence state."""

    raw_energy: jax.Array  # chain energy, Eq. (11) (+inf: no typed walk)
    status: jax.Array  # EvidenceStatus codes, Sec. 3.3
    energy: jax.Array  # status/slack energy, Eq. (19) + Axiom 4


@dataclasses.dataclass(frozen=True)
class LouSealExample:
    r"""Everything needed to reproduce the running example and Fig. 2.

    Attributes:
        world_1: latent world :math:`W_1` (the full graph; the claim is true).
        world_2: latent world :math:`W_2 = R + (\text{giants}, r, \text{alternative\_tail})`.
        observed: the observed graph :math:`G_R = O_q(W_1) = O_q(W_2)`.
        evidence: :math:`R` as an :class:`~grounding.EvidenceState` (see :func:`lou_seal_evidence`).
        observation: the observation map :math:`O_q` (hides
            ``(giants, most_recent_world_series_win, ·)``).
        claim: the hidden answer-bearing triple.
        alternative_tail: where :math:`W_2` puts the championship instead.
        embeddings: ``[n_entities, 8]`` entity map :math:`\eta` (same vocabulary for all graphs).
        relation_map: :class:`~grounding.Translation` maps :math:`T_r`.
        candidates: the claim chains :math:`\Gamma(q)`.
        log_prior: log of :data:`STAND_IN_PRIOR` in candidate order.
        prior_note: what the prior is (a stand-in).
        kappa, eps_s, alpha, xi: slack, support tolerance, residual and reliability scales.
        grounded_R: energies against :math:`R`.
    """

    world_1: TypedGraph
    world_2: TypedGraph
    observed: TypedGraph
    evidence: EvidenceState
    observation: HidingObservation
    claim: Triple
    alternative_tail: str
    embeddings: jax.Array
    relation_map: Translation
    candidates: tuple[ClaimChain, ...]
    log_prior: jax.Array
    prior_note: str
    kappa: float
    eps_s: float
    alpha: float
    xi: float
    grounded_R: Grounded

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.candidates]

    @property
    def correct_index(self) -> int:
        return self.names.index("correct_2014")

    def ground(self, state: EvidenceState) -> Grounded:
        """Energies of every candidate against an evidence state over the same vocabulary."""
        return _ground(
            state,
            self.candidates,
            self.embeddings,
            self.relation_map,
            self.kappa,
            self.eps_s,
            self.alpha,
            self.xi,
        )

    def observe(self, world: TypedGraph) -> EvidenceState:
        """:math:`O_q(W)` as a full evidence state (declared statuses included)."""
        return lou_seal_evidence(self.observation(world).graph)

    def hard_rule(self, state: EvidenceState, claim: Triple) -> int:
        r"""The hard rule of Thm. 1 for the chain ending in ``claim``: retain (1) iff the chain is
        in the feasible set :math:`F_R = \{E^{\min}_R \le \epsilon_s\}` (Eq. (5))."""
        i = next(k for k, c in enumerate(self.candidates) if c.hops[-1] == tuple(claim))
        return int(bool(self.ground(state).raw_energy[i] <= self.eps_s))


_COMPILED: dict = {}


def _grounding_fn(
    graph: TypedGraph,
    chains: tuple[ClaimChain, ...],
    kappa: float,
    eps_s: float,
    alpha: float,
    xi: float,
):
    """One jitted program per (graph, chains, parameters): every chain energy, status and slack
    energy at once. Cached on the graph's content, so equal observed graphs (e.g.
    :math:`O_q(W_1)` and :math:`O_q(W_2)`) share one compilation."""
    key = (
        graph.entities,
        graph.relations,
        tuple(graph.triples()),
        tuple(np.asarray(graph.reliability).tolist()),
        chains,
        kappa,
        eps_s,
        alpha,
        xi,
    )
    fn = _COMPILED.get(key)
    if fn is not None:
        return fn
    schema = tuple(all(r in graph.relations for r in c.relations) for c in chains)

    def ground(embeddings, relation_map, counter, reliability):
        # The reliabilities enter as an argument (a tracer), not a closed-over constant: the
        # core's eager value checks call bool() on constants, which fails inside jit.
        g = dataclasses.replace(graph, reliability=reliability)
        raw = []
        for c, ok in zip(chains, schema, strict=True):
            if not ok:  # out of schema: no typed walk can express the claim
                raw.append(jnp.asarray(jnp.inf, embeddings.dtype))
                continue
            psi = embeddings[jnp.asarray([g.entity_index(e) for e in c.entities])]
            rels = [g.relation_index(r) for r in c.relations]
            raw.append(chain_energy(g, embeddings, relation_map, psi, rels, alpha=alpha, xi=xi))
        raw_e = jnp.stack(raw)  # Eq. (11) per chain
        status = classify_status(raw_e, counter, jnp.asarray(schema), eps_s)  # Sec. 3.3
        return raw_e, status, status_energy(raw_e, status, kappa)  # Eq. (19) + Axiom 4

    fn = _COMPILED[key] = jax.jit(ground)
    return fn


def _ground(
    state: EvidenceState, chains, embeddings, relation_map, kappa, eps_s, alpha, xi
) -> Grounded:
    counter = jnp.asarray([any(state.counter_support(h) for h in c.hops) for c in chains])
    fn = _grounding_fn(state.graph, tuple(chains), kappa, eps_s, alpha, xi)
    return Grounded(*fn(jnp.asarray(embeddings), relation_map, counter, state.graph.reliability))


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
    """
    w1 = lou_seal()
    claim = (GIANTS, LAST_WIN, "2014_world_series")
    keep = ~w1.edge_mask([claim])
    observed = w1.subgraph(keep)
    _, w2, observe = two_world_witness(observed, claim, alternative_tail)
    eta, t = fit_translation_embeddings(w1, dim=dim, mu=mu, seed=seed)
    embeddings = jnp.asarray(eta)
    relation_map = Translation(jnp.asarray(t))
    names = [c.name for c in CANDIDATES]
    log_prior = jnp.log(jnp.asarray([STAND_IN_PRIOR[n] for n in names]))
    evidence = lou_seal_evidence(observed)
    grounded = _ground(evidence, CANDIDATES, embeddings, relation_map, kappa, eps_s, alpha, xi)
    return LouSealExample(
        world_1=w1,
        world_2=w2,
        observed=observed,
        evidence=evidence,
        observation=observe,
        claim=claim,
        alternative_tail=alternative_tail,
        embeddings=embeddings,
        relation_map=relation_map,
        candidates=CANDIDATES,
        log_prior=log_prior,
        prior_note="hand-set stand-in for an LLM prior p_theta(rho|q); not produced by a model",
        kappa=kappa,
        eps_s=eps_s,
        alpha=alpha,
        xi=xi,
        grounded_R=grounded,
    )
