r"""Path-Constrained Retrieval, hard and soft (*Path-Constrained Retrieval*, the PCR paper).

- :class:`PCR` (Sec. 3.2 of the PCR paper): candidates :math:`C(A)` = nodes reachable from the
  anchors ``A`` (within ``max_hops``), ranked by cosine similarity inside :math:`C(A)`:
  :math:`R_{PCR} = \operatorname{top\text{-}k}_{v\in C(A)} \cos(\phi(q), \phi(v))`. This is
  *hard grounding* (Eq. (6)) of a semantic prior over nodes.
- :class:`SoftPCR`: the Gibbs posterior (Eq. (7)) of the same prior under the slack-extended
  graph energy (Eq. (19)), computed by :func:`grounding.ground` with every node as a candidate
  answer grounded by walks from the anchors.

Reachability and hop distances come from the path engine (:meth:`grounding.TypedGraph.reachable`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

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
    dots,
    top_k,
)
from grounding.solver import ground

__all__ = ["PCR", "SoftPCR"]

_BLOCK = 256  # block length of the exact top-k pre-selection on long score rows


class PCR(AnchoredRetriever):
    """Path-Constrained Retrieval: cosine top-k among the nodes reachable from the anchors.

    Args:
        index: the graph's :class:`~grounding.retrieval.TextIndex`.
        max_hops: depth limit ``d_max`` (``None``: unlimited, the paper's default).
        fallback: policy for missing/unknown anchors (see
            :class:`~grounding.retrieval.base.AnchoredRetriever`). An anchor is always reachable
            from itself, so the candidate set is never empty otherwise.

    Scores are cosine similarities. With several anchors (topic entities) the candidate set is
    the union of their reachable sets. PCR paper, Sec. 3.2; hard grounding, Eq. (6).
    """

    name = "pcr"

    def __init__(
        self, index: TextIndex, max_hops: int | None = None, fallback: Fallback = "global"
    ):
        super().__init__(index, max_hops, fallback)

    def candidates(self, anchors: int | Sequence[int] | np.ndarray) -> np.ndarray:
        """:math:`C(A)`: sorted indices reachable from any anchor within ``max_hops``."""
        return self.graph.reachable(anchors, self.max_hops)

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = check_k(k)
        anchors, why = self.resolve(query)
        if not len(anchors):
            return self.fallen(query, k, why)
        qv = self.index.embed_queries([query.text])
        [(idx, s)] = self._rank(qv, self.candidates(anchors), k)
        return self._result(query, idx, s, anchors)

    def _rank(self, qv: np.ndarray, cand: np.ndarray, k: int) -> list[tuple]:
        """Top-k node indices and cosines within ``cand`` for each query vector ``[G, dim]``.

        A small candidate set is gathered (``emb[cand] @ q``); a large one is scored against
        all nodes (no gather; the rest masked), and long rows are pre-selected by block
        maxima: only blocks whose maximum reaches the k-th largest block maximum can hold a
        top-k entry (any entry elsewhere has k strictly larger ones), so this stays exact.
        Scores come from :func:`~grounding.retrieval.base.dots` (a fixed summation order on
        graphs up to 4096 nodes).
        """
        emb, n = self.index.embeddings, self.graph.n_nodes
        if 2 * len(cand) < n:
            sims = dots(emb[cand], qv)  # [G, |C|]
            return [(cand[i], s) for i, s in (top_k(row, k) for row in sims)]
        nb = n // _BLOCK
        if nb < 4 * k:  # short rows: plain selection within cand (never a masked node)
            among = cand if len(cand) < n else None
            return [top_k(row, k, among=among) for row in dots(emb, qv)]
        sims = dots(emb, qv)  # [G, N]
        if len(cand) < n:
            sims[:, np.setdiff1d(np.arange(n), cand, assume_unique=True)] = -np.inf
        bmax = sims[:, : nb * _BLOCK].reshape(len(sims), nb, _BLOCK).max(axis=2)
        tail = np.arange(nb * _BLOCK, n)
        out = []
        for row, bm in zip(sims, bmax):
            keep = np.flatnonzero(bm >= np.partition(bm, nb - k)[nb - k])
            cols = (keep[:, None] * _BLOCK + np.arange(_BLOCK)).ravel()
            out.append(top_k(row, k, among=np.concatenate([cols, tail])))
        return out

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """Batched PCR: one query-embedding call and one similarity product per group of
        queries that share a candidate set (all single anchors in one strongly connected
        component share it when ``max_hops`` is None). Same answers as :meth:`retrieve`."""
        k = check_k(k)
        out: list[Retrieval | None] = [None] * len(queries)
        groups: dict[object, tuple[np.ndarray, list[tuple[int, np.ndarray]]]] = {}
        for i, q in enumerate(queries):
            anchors, why = self.resolve(q)
            if not len(anchors):
                out[i] = self.fallen(q, k, why)
                continue
            cand = self.candidates(anchors)
            shared = self.max_hops is None and len(anchors) == 1  # memoised arrays are shared
            groups.setdefault(id(cand) if shared else ("q", i), (cand, []))[1].append((i, anchors))
        todo = [i for _, members in groups.values() for i, _ in members]
        if todo:
            qv = dict(zip(todo, self.index.embed_queries([queries[i].text for i in todo])))
        for cand, members in groups.values():
            ranked = self._rank(np.stack([qv[i] for i, _ in members]), cand, k)
            for (i, anchors), (idx, s) in zip(members, ranked):
                out[i] = self._result(queries[i], idx, s, anchors)
        return out  # type: ignore[return-value]


class SoftPCR(AnchoredRetriever):
    r"""Soft Path-Constrained Retrieval: rank by the Gibbs posterior over nodes.

    Every node :math:`v` is a candidate answer with the semantic prior
    :math:`p_\theta(v\mid q)\propto\exp(\cos(\phi(q),\phi(v))/T)` (Eq. (1), a stand-in prior),
    grounded by :func:`grounding.ground` against the graph from the query's anchors:

    .. math::
        \log p_\lambda(v\mid q) = \log p_\theta(v\mid q) - \lambda \min\big(E(v),\ \kappa\big)
            - \log Z_\lambda

    (Eqs. (7), (19)), :math:`E(v)` the best walk of ``0..max_hops`` edges from an anchor at
    ``hop_cost`` per edge, i.e. :math:`c\,d(A, v)` with the hop distance :math:`d` (``tau = 0``;
    ``+inf`` when unreachable, so those nodes pay the slack :math:`\kappa`), or the entropic
    path energy of Eq. (13) under the uniform prior over those walks (``tau > 0``, which
    rewards many alternative paths). With the PCR paper's constants ``c = 0.1``,
    :math:`\kappa = 1` the energy *is* the PCR paper's graph-distance penalty. With ``c = 0``
    it is the truncated :math:`E_M` of Prop. 6 (``0`` on :math:`C(A)`, :math:`\kappa`
    outside), and as :math:`\lambda\kappa\to\infty` the posterior tends to the prior
    conditioned on :math:`C(A)`, i.e. to hard PCR (tested); at finite slack every node keeps
    positive mass (Prop. 3). Scores are log posterior masses.

    Args:
        index: the graph's :class:`~grounding.retrieval.TextIndex`.
        lam: grounding strength :math:`\lambda \ge 0`.
        prior_temperature: :math:`T > 0` of the semantic prior (``temperature``: its old name,
            deprecated).
        hop_cost: :math:`c \ge 0` per hop (``0``: the truncated energy of Prop. 6).
        slack: :math:`\kappa > 0`, the finite energy of a node without support.
        max_hops: depth limit (``None``: unlimited; must be set when ``tau > 0``).
        tau: path-aggregation temperature of Eq. (13) (``0``: the best walk).
        fallback: policy for missing/unknown anchors (``"global"``: rank by the prior).
    """

    name = "soft_pcr"

    def __init__(
        self,
        index: TextIndex,
        lam: float = 10.0,
        prior_temperature: float = 0.05,
        hop_cost: float = 0.1,
        slack: float = 1.0,
        max_hops: int | None = None,
        tau: float = 0.0,
        fallback: Fallback = "global",
        *,
        temperature: float | None = None,
    ):
        super().__init__(index, max_hops, fallback)
        if temperature is not None:
            warnings.warn(
                "SoftPCR(temperature=) is deprecated and will be removed in the next release; "
                "use prior_temperature= (tau is the path temperature)",
                DeprecationWarning,
                stacklevel=2,
            )
            prior_temperature = temperature
        dtype = jnp.result_type(float)  # the precision the posterior is computed in
        for name, v, ok in (
            ("lam", lam, lambda x: x >= 0),
            ("prior_temperature", prior_temperature, lambda x: x > 0),
            ("hop_cost", hop_cost, lambda x: x >= 0),
            ("slack", slack, lambda x: 0 < x < np.inf),
            ("tau", tau, lambda x: x >= 0),
        ):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"SoftPCR: {name} must be a number, got {type(v).__name__}")
            if not (np.isfinite(v) and ok(v)):
                raise ValueError(f"SoftPCR: invalid {name}={v!r}")
            with np.errstate(over="ignore"):
                representable = np.isfinite(np.asarray(v, dtype))
            if not representable:
                raise ValueError(f"SoftPCR: {name}={v!r} overflows {np.dtype(dtype).name}")
        if tau > 0 and max_hops is None:
            raise ValueError("SoftPCR: tau > 0 aggregates walks and needs a finite max_hops")
        self.lam, self.prior_temperature = float(lam), float(prior_temperature)
        self.hop_cost, self.slack, self.tau = float(hop_cost), float(slack), float(tau)
        self.evidence = EvidenceState(self.graph, provenance={"retriever": self.name})

    @property
    def temperature(self) -> float:
        """Deprecated name of :attr:`prior_temperature`."""
        return self.prior_temperature

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
        return ground(
            problem, self.evidence, lam=self.lam, kappa=self.slack, tau=self.tau,
            hop_cost=self.hop_cost, n_paths=0,
        )  # fmt: skip

    def _log_prior(self, query: Query) -> np.ndarray:
        # float64: a float32 sum over many nodes misses normalisation by ~1e-4 (17k nodes)
        logits = np.asarray(self.index.cosine(query), np.float64) / self.prior_temperature
        return logits - logsumexp(logits)  # Eq. (1): semantic stand-in prior

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
