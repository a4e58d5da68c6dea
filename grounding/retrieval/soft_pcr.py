r"""Soft Path-Constrained Retrieval: the Gibbs posterior (Eq. (7)) of PCR's semantic prior
over nodes under the slack-extended graph energy (Eq. (19)), computed by the solver:
:func:`grounding.ground` with every node as a candidate answer grounded by walks from the
anchors, and for a batch of queries :func:`grounding.solver.answer_log_posteriors` (the same
posterior from one energy field of the path engine over all their anchors). Its settings are
one :class:`~grounding.GroundingConfig` (``kappa`` is the slack).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import log_softmax

from grounding.evidence import EvidenceState
from grounding.problem import GroundingProblem
from grounding.result import GroundingResult
from grounding.retrieval.base import (
    AnchoredRetriever,
    Fallback,
    Query,
    Retrieval,
    TextIndex,
    check_k,
    check_queries,
    dots,
    top_k,
)
from grounding.solver import GroundingConfig, answer_log_posteriors, ground
from grounding.solver.config import make_config

__all__ = ["SoftPCR"]

_SOFT_BATCH = 256  # queries per path-engine call of SoftPCR.retrieve_batch (bounds [Q, N])

#: SoftPCR's settings unless told otherwise: the PCR paper's constants (a hop costs 0.1, the
#: slack is 1) at grounding strength 10, without the walk report.
DEFAULTS = dict(lam=10.0, kappa=1.0, hop_cost=0.1, n_paths=0)


class SoftPCR(AnchoredRetriever):
    r"""Soft Path-Constrained Retrieval: rank by the Gibbs posterior over nodes.

    Every node :math:`v` is a candidate answer with the semantic prior
    :math:`p_\theta(v\mid q)\propto\exp(\cos(\phi(q),\phi(v))/T)` (Eq. (1), a stand-in prior),
    grounded by the solver against the graph from the query's anchors:

    .. math::
        \log p_\lambda(v\mid q) = \log p_\theta(v\mid q) - \lambda \min\big(E(v),\ \kappa\big)
            - \log Z_\lambda

    (Eqs. (7), (19)), :math:`E(v)` the best walk of ``0..max_hops`` edges from an anchor at
    ``hop_cost`` per edge, i.e. :math:`c\,d(A, v)` with the hop distance :math:`d` (``tau = 0``;
    ``+inf`` when unreachable, so those nodes pay the slack :math:`\kappa`), or the entropic
    path energy of Eq. (13) under the uniform prior over those walks (``tau > 0``, which
    rewards many alternative paths). With the PCR paper's constants ``c = 0.1``,
    :math:`\kappa = 1` (:data:`DEFAULTS`) the energy *is* the PCR paper's graph-distance
    penalty. With ``c = 0`` it is the truncated :math:`E_M` of Prop. 6 (``0`` on :math:`C(A)`,
    :math:`\kappa` outside), and as :math:`\lambda\kappa\to\infty` the posterior tends to the
    prior conditioned on :math:`C(A)`, i.e. to hard PCR (tested); at finite slack every node
    keeps positive mass (Prop. 3). Scores are log posterior masses.

    Args:
        index: the graph's :class:`~grounding.retrieval.TextIndex`.
        config: the grounding settings (:class:`~grounding.GroundingConfig`: ``lam``, the
            slack ``kappa``, ``tau``, ``hop_cost``, ...); ``None``: :data:`DEFAULTS`.
        prior_temperature: :math:`T > 0` of the semantic prior.
        max_hops: depth limit (``None``: unlimited; must be set when ``tau > 0``).
        fallback: policy for missing/unknown anchors (``"global"``: rank by the prior).
        settings: fields of :class:`~grounding.GroundingConfig` as keywords, replacing the
            config's (or the defaults'), e.g. ``SoftPCR(index, lam=3.0, tau=0.5, max_hops=2)``.

    References:
        - Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
          Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 3.2;
          Sec. 4 (the distance penalty).
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eqs. (1), (7), (13), (19); Props. 3 and 6.
    """

    name = "soft_pcr"

    def __init__(
        self,
        index: TextIndex,
        config: GroundingConfig | None = None,
        *,
        prior_temperature: float = 0.05,
        max_hops: int | None = None,
        fallback: Fallback = "global",
        **settings: Any,
    ):
        super().__init__(index, max_hops, fallback)
        t = prior_temperature
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)):
            raise TypeError(f"SoftPCR: prior_temperature must be a number, got {t!r:.100}")
        if not (np.isfinite(t) and t > 0):
            raise ValueError(f"SoftPCR: prior_temperature must be finite and > 0, got {t!r}")
        if self.max_hops == 0:
            raise ValueError("SoftPCR: max_hops must be >= 1 or None (walks of 1..max_hops edges)")
        # checked once, by the config (the keywords replace its fields or the defaults')
        config = make_config(GroundingConfig(**DEFAULTS) if config is None else config,
                             settings, "SoftPCR")  # fmt: skip
        if not config.tropical and max_hops is None:
            raise ValueError("SoftPCR: tau > 0 aggregates walks and needs a finite max_hops")
        self.config, self.prior_temperature = config, float(t)
        self.evidence = EvidenceState(self.graph, provenance={"retriever": self.name})

    def ground(self, query: Query) -> GroundingResult | None:
        """The :class:`~grounding.GroundingResult` of every node for ``query`` (``None`` when
        the query has no known anchor)."""
        anchors, _ = self.resolve(query)
        if not len(anchors):
            return None
        return self._ground(query.text, anchors, self._log_prior(query))

    def _ground(self, text: str, anchors: np.ndarray, log_prior: np.ndarray) -> GroundingResult:
        problem = GroundingProblem(
            text,
            self.graph.entities,
            log_prior,
            anchors=tuple(self.graph.entities[a] for a in anchors),
            max_hops=self.max_hops,
            min_hops=0,  # an anchor supports itself: C(A) contains the anchors
        )
        return ground(problem, self.evidence, self.config)

    def _log_prior(self, query: Query) -> np.ndarray:
        return self._log_priors([query])[0]

    def _log_priors(self, queries: Sequence[Query]) -> np.ndarray:
        """``[Q, N]`` semantic stand-in priors, Eq. (1): a softmax of cosine / ``T`` (one
        query-embedding call and one similarity product for the batch)."""
        qv = self.index.embed_queries([q.text for q in queries])
        # float64: a float32 sum over many nodes misses normalization by ~1e-4 (17k nodes)
        logits = np.asarray(dots(self.index.embeddings, qv), np.float64) / self.prior_temperature
        return log_softmax(logits, axis=1)  # cosines are finite: so is every logit

    def energy(self, anchor: int | Sequence[int]) -> np.ndarray:
        """``[N]`` slack-extended graph energy :math:`\\min(E(v), \\kappa)` (Eq. (19)) from the
        given anchor node index (or indices); it does not depend on the query."""
        anchors = np.asarray(anchor, np.int64).reshape(-1)
        n = self.graph.n_nodes
        return np.asarray(self._ground("", anchors, np.full(n, -np.log(n))).energy)

    def posterior(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
        """``(log_prior, energy, log_posterior, anchor)`` over all nodes for ``query``; without
        a known anchor the energy is 0 and the posterior is the prior."""
        res = self.ground(query)
        if res is None:
            log_prior = self._log_prior(query)
            return log_prior, np.zeros_like(log_prior), log_prior, None
        anchors, _ = self.resolve(query)
        return (
            np.asarray(res.log_prior),
            np.asarray(res.energy),
            np.asarray(res.log_posterior),
            int(anchors[0]),
        )

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = check_k(k)
        anchors, why = self.resolve(query)
        if not len(anchors):
            return self.fallen(query, k, why)
        idx, s = top_k(np.asarray(self.ground(query).log_posterior), k)
        return self._result(query, idx, s, anchors)

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """:meth:`retrieve`'s answers (scores within float rounding) with one path-engine call
        per 256 queries (one ``[S, N]`` field over their distinct anchors) instead of one
        :func:`grounding.ground` per query: :meth:`batch_log_posterior`."""
        k = check_k(k)
        queries = check_queries(queries)
        out, todo = self.anchored(queries, k)
        for start in range(0, len(todo), _SOFT_BATCH):
            chunk = todo[start : start + _SOFT_BATCH]
            rows = self.batch_log_posterior([queries[i] for i, _ in chunk], [a for _, a in chunk])
            for (i, anchors), row in zip(chunk, rows):
                idx, s = top_k(row, k)
                out[i] = self._result(queries[i], idx, s, anchors)
        return out  # type: ignore[return-value]

    def batch_log_posterior(
        self, queries: Sequence[Query], anchors: Sequence[Sequence[int] | np.ndarray]
    ) -> np.ndarray:
        r"""``[Q, N]`` log posteriors of Eq. (7) over all nodes, one row per query with the
        given anchor node indices (each set non-empty): what :func:`grounding.ground` computes
        for :meth:`retrieve`, by :func:`grounding.solver.answer_log_posteriors` on the
        queries' semantic priors."""
        return answer_log_posteriors(
            self._log_priors(queries), self.graph, anchors, self.config, max_hops=self.max_hops
        )
