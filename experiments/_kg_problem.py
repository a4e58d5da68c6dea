r"""Grounding problems built from a real split knowledge graph (shared by ``kg_incomplete``).

The split *is* incomplete evidence: :math:`R` = the training graph, :math:`G^*` = train +
valid + test, and each held-out triple :math:`(h, r, t)` is a query whose true answer is
true but unobserved. For a query, the declared modeling choices are:

- **Candidates** :math:`\Gamma(q)`: the true tail plus the ``K`` wrong tails (not in
  :math:`G^*` for ``(h, r)``) ranked highest by the prior, each the one-hop trajectory
  :math:`h \xrightarrow{r} x`; shuffled, so ties cannot favor the true answer. Queries with
  fewer than ``K`` wrong tails (possible on Nations' 14 entities) are left out and counted.
- **Prior** :math:`p_\theta(\cdot\mid q)`: a *stand-in* for an LLM, not an LLM: a deliberately
  weak 8-dimensional TransE trained briefly on :math:`R`,
  :math:`p_\theta(x) \propto e^{-E_{\text{weak}}(h, r, x)}` renormalized on :math:`\Gamma(q)`.
- **Energy** :math:`E_R(x) = E_{\text{claim}}(x) + \min(S_R(x), \kappa)`:
  :math:`E_{\text{claim}}` is the claim's typed residual, Eq. (8), under relation maps
  *learned from R* (the main model); :math:`S_R(x)` is the best-path support energy, Eq. (11),
  from :math:`h` to :math:`x` over walks of at most ``hops`` observed edges, each edge costing its
  own learned typed residual (+ :math:`\xi(-\log w_e)`): :func:`grounding.ground_batch` with
  :math:`x` an answer candidate anchored at :math:`h` and the learned realization; missing
  support costs the finite slack :math:`\kappa` (Eq. (19)). Every term is :math:`\ge 0`.
- **Posterior**: :meth:`Problem.log_posterior` is :func:`grounding.ground_batch` on the
  problems (answers anchored at :math:`h`, :math:`E_{\text{claim}}` as their claim energies):
  the experiments' posteriors, energies and fits of :math:`\lambda, \kappa` all go through the
  solver, jitted once per problem set with :math:`\lambda, \kappa` traced.
- **Hard rules** (path-complete, Prop. 4): ``exact`` keeps :math:`x` iff :math:`(h, r, x)
  \in R` (never, for a held-out query); ``adjacent`` iff some observed edge
  :math:`h \to x` exists (any relation); ``reach2`` iff :math:`x` is within two observed hops.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from grounding import (
    EvidenceState,
    GroundingProblem,
    Realization,
    TypedGraph,
    ground_batch,
    log_normalize,
)
from grounding.datasets import KGSplits, load_kg
from grounding.learn import KGEModel, TrainConfig, train
from grounding.learn.kge import DEFAULTS
from grounding.semiring import energy_field

STAND_IN_DIM = 8


@dataclasses.dataclass(frozen=True)
class Problem:
    """``Q`` queries, ``C`` candidates each (all arrays ``[Q, C]`` unless noted)."""

    queries: np.ndarray  # [Q, 3]
    cand: np.ndarray  # entity ids
    correct: np.ndarray  # [Q] index of the true answer among the candidates
    log_prior: np.ndarray
    claim: np.ndarray  # E_claim >= 0
    support: np.ndarray  # S_R >= 0, +inf when unreachable within `hops`
    adjacent: np.ndarray  # bool: an observed edge h -> x
    reach2: np.ndarray  # bool: x within two observed hops of h
    degree: np.ndarray  # [Q] out-degree of h in R (a coverage proxy known from R alone)
    skipped: int  # queries of the split left out: fewer than k wrong tails exist
    problems: tuple[GroundingProblem, ...]  # one per query, what the solver grounds
    evidence: EvidenceState  # R
    realization: Realization  # the main model's

    def grounded(self, lam, kappa, evidence: EvidenceState | None = None) -> tuple:
        """``([Q, C] log-posterior, [Q, C] energy)`` from :func:`grounding.ground_batch` at
        ``lam``, ``kappa`` (traceable) on ``evidence`` (default: ``R``)."""
        if evidence is not None:  # another graph: one host-side call
            return _stacked(self, lam, kappa, evidence)
        return self._jitted(lam, kappa)

    def log_posterior(self, lam, kappa) -> jax.Array:
        """Eq. (7) with the slack-extended energy of Eq. (19), by the solver."""
        return self.grounded(lam, kappa)[0]

    def energy(self, kappa) -> jax.Array:
        r""":math:`E_{\text{claim}} + \min(S_R, \kappa)` (Eq. (19)), by the solver."""
        return self.grounded(0.0, kappa)[1]

    @functools.cached_property
    def _jitted(self):
        return jax.jit(lambda lam, kappa: _stacked(self, lam, kappa, self.evidence))


def _stacked(p: Problem, lam, kappa, evidence: EvidenceState) -> tuple:
    results = ground_batch(
        p.problems, evidence, realization=p.realization, lam=lam, kappa=kappa, n_paths=0
    )
    return tuple(jnp.stack([getattr(r, k) for r in results]) for k in ("log_posterior", "energy"))


@functools.cache
def models(name: str, full: bool) -> tuple[KGEModel, KGEModel]:
    """(main model whose relation maps define the energies, weak stand-in prior model),
    trained once per process on the training split of the shipped dataset ``name``."""
    kg = load_kg(name)
    base = DEFAULTS["transe"]
    main_cfg = base if full else dataclasses.replace(base, epochs=40)
    main = train(kg, "transe", main_cfg, progress=True).model
    weak_cfg = TrainConfig(dim=STAND_IN_DIM, epochs=5, lr=1e-2, eval_every=5, seed=7)
    weak = train(kg, "transe", weak_cfg, progress=True).model
    return main, weak


def realization(model: KGEModel) -> Realization:
    """The learned realization: entity embeddings, relation maps and metric of ``model``."""
    return Realization(model.entity, model.relation_map, model.metric_name)


def grounding_problems(
    names: Sequence[str], heads: np.ndarray, cand: np.ndarray, log_prior: np.ndarray,
    claim: np.ndarray, hops: int,
) -> tuple[GroundingProblem, ...]:  # fmt: skip
    """One problem per query: the candidates ``cand[q]`` as answers anchored at ``heads[q]``
    (walks of ``1..hops`` edges), their prior and claim energies."""
    return tuple(
        GroundingProblem(
            "",
            tuple(names[x] for x in row),
            lp,
            anchors=(names[h],),
            max_hops=hops,
            claim_energy=ce,
        )  # fmt: skip
        for h, row, lp, ce in zip(heads, cand, log_prior, claim)
    )


def support_energy(
    graph: TypedGraph, model: KGEModel, heads: np.ndarray, cand: np.ndarray, hops: int
) -> np.ndarray:
    """``[Q, C]`` best-path support energies (Eq. (11), walks of ``1..hops`` edges) from
    ``heads[q]`` to each ``cand[q, c]`` in the evidence ``graph`` (its reliabilities enter the
    edge costs, Eq. (8)), by :func:`grounding.ground_batch` (only raw energies are read)."""
    flat = np.full(cand.shape, -np.log(cand.shape[1]))
    problems = grounding_problems(graph.entities, heads, cand, flat, np.zeros(cand.shape), hops)
    results = ground_batch(
        problems, EvidenceState(graph), realization=realization(model), lam=0.0, kappa=1.0,
        n_paths=0,
    )  # fmt: skip
    return np.stack([np.asarray(r.raw_energy, np.float64) for r in results])


def walk_hops(graph: TypedGraph, heads: np.ndarray, hops: int) -> np.ndarray:
    """``[Q, n]`` fewest edges on a walk of ``1..hops`` edges from ``heads[q]`` (``+inf``: none):
    Eq. (11) with unit edge costs, by the path engine."""
    src, inv = np.unique(heads, return_inverse=True)
    ones = np.ones(graph.n_edges)
    field = energy_field(
        graph.head, graph.tail, ones, src, n_nodes=graph.n_nodes, max_hops=hops, tau=0.0
    )
    return np.asarray(field, np.float64)[inv]


def build(
    kg: KGSplits,
    split: str,
    main: KGEModel,
    weak: KGEModel,
    n_queries: int | None,
    k: int,
    hops: int = 2,
    seed: int = 0,
) -> Problem:
    rng = np.random.default_rng(seed)
    n = kg.n_entities
    known = np.zeros((n, kg.n_relations, n), bool)
    G = kg.all_triples()
    known[G[:, 0], G[:, 1], G[:, 2]] = True
    q = kg.split(split)
    eligible = n - known[q[:, 0], q[:, 1]].sum(axis=1) >= k  # at least k wrong tails exist
    skipped = int(np.sum(~eligible))
    q = q[eligible]
    if n_queries is not None and n_queries < len(q):
        q = q[np.sort(rng.choice(len(q), n_queries, replace=False))]
    h, r, t = q.T
    weak_e = np.asarray(weak.candidate_energies("tail", jnp.asarray(h), jnp.asarray(r)), np.float64)
    masked = np.where(known[h, r], np.inf, weak_e)  # wrong tails only (filtered by G*)
    wrong = np.argsort(masked, axis=1, kind="stable")[:, :k]
    cand = np.concatenate([t[:, None], wrong], axis=1)
    perm = np.argsort(rng.random(cand.shape), axis=1)
    cand = np.take_along_axis(cand, perm, axis=1)
    correct = np.argmax(perm == 0, axis=1)
    rows = np.arange(len(q))[:, None]
    log_prior = np.asarray(log_normalize(-weak_e[rows, cand]), np.float64)  # Eq. (1)
    main_e = np.asarray(main.candidate_energies("tail", jnp.asarray(h), jnp.asarray(r)), np.float64)
    R = kg.graph("train")
    reach = walk_hops(R, h, 2)[rows, cand]
    claim = main_e[rows, cand]
    return Problem(
        queries=q,
        cand=cand,
        correct=correct,
        log_prior=log_prior,
        claim=claim,
        support=support_energy(R, main, h, cand, hops),
        adjacent=reach <= 1,
        reach2=reach <= 2,
        degree=np.bincount(kg.train[:, 0], minlength=n)[h].astype(np.float64),
        skipped=skipped,
        problems=grounding_problems(R.entities, h, cand, log_prior, claim, hops),
        evidence=EvidenceState(R),
        realization=realization(main),
    )
