r"""Path-Constrained Retrieval, hard and soft (*Path-Constrained Retrieval*, the PCR paper).

- :class:`PCR` (Sec. 3.2 of the PCR paper): candidates :math:`C(A)` = nodes reachable from the
  anchors ``A`` (within ``max_hops``), ranked by cosine similarity inside :math:`C(A)`:
  :math:`R_{PCR} = \operatorname{top\text{-}k}_{v\in C(A)} \cos(\phi(q), \phi(v))`. This is
  *hard grounding* (Eq. (6)) of a semantic prior over nodes; ``search="ann"`` takes the top-k
  by approximate search (:class:`~grounding.retrieval.ann.ANNIndex`) within :math:`C(A)`.
- :class:`SoftPCR`: the Gibbs posterior (Eq. (7)) of the same prior under the slack-extended
  graph energy (Eq. (19)), computed by :func:`grounding.ground` with every node as a candidate
  answer grounded by walks from the anchors; :meth:`SoftPCR.retrieve_batch` computes the same
  for a batch of queries from one energy field of the path engine over all their anchors.

Reachability and hop distances come from the path engine (:class:`grounding.TypedGraph`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

import jax.numpy as jnp
import numpy as np
from scipy.special import log_softmax

from grounding import _numerics
from grounding._shapes import bucket
from grounding.evidence import EvidenceState
from grounding.posterior import gibbs_log_posterior
from grounding.problem import GroundingProblem, edge_costs_from_arrays
from grounding.result import GroundingResult
from grounding.retrieval._batch import retrieve_bounded
from grounding.retrieval._rank import row_norm_max, screen, top_k_exact
from grounding.retrieval.ann import ANNIndex
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
from grounding.semiring import EdgeIndex, energy_field
from grounding.semiring.layout import ELL_MIN_EDGES
from grounding.solver import GroundingConfig, ground

__all__ = ["PCR", "SoftPCR"]

_SOFT_BATCH = 256  # queries per path-engine call of SoftPCR.retrieve_batch (bounds [Q, N])
_SCREEN_ROWS = 256  # queries per screening product of PCR (bounds its [Q, N] buffer)


class PCR(AnchoredRetriever):
    """Path-Constrained Retrieval: cosine top-k among the nodes reachable from the anchors.

    Args:
        index: the graph's :class:`~grounding.retrieval.TextIndex`.
        max_hops: depth limit ``d_max`` (``None``: unlimited, the paper's default).
        fallback: policy for missing/unknown anchors (see
            :class:`~grounding.retrieval.base.AnchoredRetriever`). An anchor is always reachable
            from itself, so the candidate set is never empty otherwise.
        search: ``"exact"`` (default), ``"ann"`` (an :class:`~grounding.retrieval.ann.ANNIndex`
            with its defaults, built here; the ``ann`` extra) or a prebuilt ``ANNIndex`` over
            ``index.embeddings``. It replaces only the full pass over all nodes (candidate sets
            of at least half the graph; filtered to :math:`C(A)`, its nodes rescored exactly);
            smaller sets, and queries it finds fewer than ``k`` candidates for, stay exact.

    Scores are cosine similarities. With several anchors (topic entities) the candidate set is
    the union of their reachable sets. PCR paper, Sec. 3.2; hard grounding, Eq. (6). Exact
    search keeps its screening matrix between calls (up to 256 rows of ``N`` scores: 1 KiB per
    node in float32).

    References:
        - Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
          Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 3.2.
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (6).
    """

    name = "pcr"

    def __init__(
        self,
        index: TextIndex,
        max_hops: int | None = None,
        fallback: Fallback = "global",
        *,
        search: Literal["exact", "ann"] | ANNIndex = "exact",
    ):
        super().__init__(index, max_hops, fallback)
        if isinstance(search, ANNIndex):
            n, dim = index.embeddings.shape
            if (search.n_nodes, search.dim) != (n, dim):
                raise ValueError(
                    f"PCR: the ANNIndex covers [{search.n_nodes}, {search.dim}] vectors, the "
                    f"index has [{n}, {dim}]"
                )
            self.ann: ANNIndex | None = search
        elif isinstance(search, str) and search in ("exact", "ann"):
            self.ann = ANNIndex(index.embeddings) if search == "ann" else None
        else:
            raise ValueError(f"PCR: search must be 'exact', 'ann' or an ANNIndex, got {search!r}")

    def candidates(self, anchors: int | Sequence[int] | np.ndarray) -> np.ndarray:
        """:math:`C(A)`: sorted indices reachable from any anchor within ``max_hops``."""
        return self.graph.reachable(anchors, self.max_hops)

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = check_k(k)
        anchors, why = self.resolve(query)
        if not len(anchors):
            return self.fallen(query, k, why)
        [(idx, s)] = self._rank(self.index.embed_queries([query.text]), self.candidates(anchors), k)
        return self._result(query, idx, s, anchors, max_hops=self.max_hops)

    def _rank(self, qv: np.ndarray, cand: np.ndarray, k: int, approx=None, ann=True) -> list:
        """Top-k node indices and cosines within ``cand`` for each query vector ``[G, dim]``:
        exactly the top ``k`` of fixed-order dot products (ties: lower index first), screened
        by one matrix product: ``approx`` (``[G, N]``, overwritten) when given, else over the
        candidates alone when they are fewer than half the nodes, else over all nodes,
        :data:`_SCREEN_ROWS` queries at a time, into one buffer kept between calls (a fresh
        matrix per call pays its page faults again); see :mod:`grounding.retrieval._rank`.
        With an approximate index, a large candidate set is searched there instead (its nodes
        rescored in the fixed order; the exact path for the rows it leaves short)."""
        emb, n = self.index.embeddings, self.graph.n_nodes
        if ann and self.ann is not None and 2 * len(cand) >= n:
            return self._rank_ann(qv, cand, k)
        if approx is not None or 2 * len(cand) < n or k >= len(cand):
            return top_k_exact(emb, self._row_norm_max, qv, cand, k, approx)
        buf = self.__dict__.pop("_screen_buffer", None)  # taken: no other call writes it
        out = []
        for s in range(0, len(qv), _SCREEN_ROWS):
            rows = qv[s : s + _SCREEN_ROWS]
            if buf is None or len(buf) < len(rows):
                buf = np.empty((len(rows), n), emb.dtype)
            approx = screen(emb, rows, out=buf[: len(rows)])  # overwritten below
            out += top_k_exact(emb, self._row_norm_max, rows, cand, k, approx)
        self._screen_buffer = buf
        return out

    def _rank_ann(self, qv: np.ndarray, cand: np.ndarray, k: int) -> list[tuple]:
        emb, n = self.index.embeddings, self.graph.n_nodes
        found = [idx for idx, _ in self.ann.search(qv, k, None if len(cand) == n else cand)]
        out = []
        for idx, q in zip(found, qv):  # rescored as the exact path scores them
            top, s = top_k(dots(emb[idx], q), k)
            out.append((idx[top], s))
        short = [i for i, idx in enumerate(found) if len(idx) < min(k, len(cand))]
        for i, exact in zip(short, self._rank(qv[short], cand, k, ann=False) if short else ()):
            out[i] = exact
        return out

    @functools.cached_property
    def _row_norm_max(self) -> float:
        return row_norm_max(self.index.embeddings)

    def __getstate__(self) -> dict:
        """Pickles and copies leave out the screening buffer (scratch; a copy sharing it would
        write into it from another call)."""
        state = dict(self.__dict__)
        state.pop("_screen_buffer", None)
        return state

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """Batched PCR, same answers as :meth:`retrieve`. With ``max_hops``: candidates and
        evidence (precomputed) by one breadth-first search per chunk of queries; without: one
        similarity product per group sharing a candidate set (anchors of one component)."""
        k, queries = check_k(k), check_queries(queries)
        if self.max_hops is not None:
            return retrieve_bounded(self, queries, k)
        out, todo = self.anchored(queries, k)
        groups: dict[object, tuple[np.ndarray, list[tuple[int, np.ndarray]]]] = {}
        for i, anchors in todo:
            cand = self.candidates(anchors)  # one anchor: a memoized array, shared
            key = id(cand) if len(anchors) == 1 else ("q", i)
            groups.setdefault(key, (cand, []))[1].append((i, anchors))
        order = [i for _, members in groups.values() for i, _ in members]
        if order:
            qv = dict(zip(order, self.index.embed_queries([queries[i].text for i in order])))
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
        prior_temperature: :math:`T > 0` of the semantic prior.
        hop_cost: :math:`c \ge 0` per hop (``0``: the truncated energy of Prop. 6).
        slack: :math:`\kappa > 0`, the finite energy of a node without support.
        max_hops: depth limit (``None``: unlimited; must be set when ``tau > 0``).
        tau: path-aggregation temperature of Eq. (13) (``0``: the best walk).
        fallback: policy for missing/unknown anchors (``"global"``: rank by the prior).

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
        lam: float = 10.0,
        prior_temperature: float = 0.05,
        hop_cost: float = 0.1,
        slack: float = 1.0,
        max_hops: int | None = None,
        tau: float = 0.0,
        fallback: Fallback = "global",
    ):
        super().__init__(index, max_hops, fallback)
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
        if self.max_hops == 0:
            raise ValueError("SoftPCR: max_hops must be >= 1 or None (walks of 1..max_hops edges)")
        if tau > 0 and max_hops is None:
            raise ValueError("SoftPCR: tau > 0 aggregates walks and needs a finite max_hops")
        self.lam, self.prior_temperature = float(lam), float(prior_temperature)
        self.hop_cost, self.slack, self.tau = float(hop_cost), float(slack), float(tau)
        self.evidence = EvidenceState(self.graph, provenance={"retriever": self.name})
        #: the grounding settings, in the solver's terms (the slack is its kappa)
        self.config = GroundingConfig(
            lam=self.lam, kappa=self.slack, tau=self.tau, hop_cost=self.hop_cost, n_paths=0
        )

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
        for :meth:`retrieve` (anchors ``A``, ``min_hops = 0``, per-edge cost
        :math:`c(e) = c - \log w(e)` of Eq. (10) with the graph's reliabilities ``w``):

        .. math::
            \log p_\lambda(v\mid q) = \log p_\theta(v\mid q)
                - \lambda \min\big(E_A(v), \kappa\big) - \log Z_\lambda

        (Eqs. (1), (19), (7)), with :math:`E_A` from :meth:`batch_energy`."""
        energy = np.minimum(self.batch_energy(anchors), self.slack)  # Eq. (19)
        return np.asarray(gibbs_log_posterior(self._log_priors(queries), energy, self.lam))

    def batch_energy(self, anchors: Sequence[Sequence[int] | np.ndarray]) -> np.ndarray:
        r"""``[Q, N]`` raw path energies :math:`E_A(v)` (before the slack) of Q anchor sets,
        from one energy field over their distinct anchors (:meth:`_fields`). With
        :math:`F_a(v)` the field of anchor ``a`` over walks of ``1..max_hops`` edges:

        - ``tau = 0`` (Eq. (11)): :math:`E_A(v) = \min_{a\in A} F_a(v)`, and ``0`` at the
          anchors (the empty walk);
        - ``tau > 0`` (Eq. (13) under the uniform prior over the family :math:`W_A` of walks
          of ``0..max_hops`` edges from any anchor):

          .. math::
              E_A(v) = -\tau\Big(\log\big[\textstyle\sum_{a\in A} e^{-F_a(v)/\tau}
                  + \mathbf 1\{v\in A\}\big] - \log|W_A|\Big), \qquad
              |W_A| = |A| + \textstyle\sum_{a\in A} N_a,

          :math:`N_a` the number of walks of ``1..max_hops`` edges from ``a`` (the field of
          zero costs at ``tau = 1`` is :math:`-\log` of their count per end node);
          ``+inf`` where no walk reaches ``v``.

        Repeated anchors within a set count once, as in :func:`grounding.ground`.
        """
        sets = [  # in order, once each (as grounding.ground takes a problem's anchors)
            np.fromiter(dict.fromkeys(np.asarray(a, np.int64).reshape(-1).tolist()), np.int64)
            for a in anchors
        ]
        if not sets or any(len(a) == 0 for a in sets):
            raise ValueError("SoftPCR.batch_energy: every query needs at least one anchor")
        src, inv = np.unique(np.concatenate(sets), return_inverse=True)
        if src[0] < 0 or src[-1] >= self.graph.n_nodes:
            raise ValueError(f"anchor indices must lie in [0, {self.graph.n_nodes})")
        rows = np.split(inv, np.cumsum([len(a) for a in sets])[:-1])
        cost = self._edge_cost()
        field = self._fields(src, cost, self.tau)  # [U, N]
        if self.tau > 0:
            log_mass = jnp.where(jnp.isfinite(field), -field / self.tau, -jnp.inf)
            count = self._fields(src, jnp.zeros_like(cost), 1.0)  # -log #walks per end node
            log_n = _numerics.logsumexp(jnp.where(jnp.isfinite(count), -count, -jnp.inf))
        by_size: dict[int, list[int]] = {}
        for j, r in enumerate(rows):
            by_size.setdefault(len(r), []).append(j)
        out = np.empty((len(sets), self.graph.n_nodes), field.dtype)
        for size, members in by_size.items():
            ix = np.stack([rows[j] for j in members])  # [Q_size, size] rows of the field
            is_anchor = np.zeros((len(members), self.graph.n_nodes), bool)
            is_anchor[np.arange(len(members))[:, None], src[ix]] = True
            if self.tau == 0:  # Eq. (11): the best walk from any anchor; 0 hops at an anchor
                e = jnp.where(is_anchor, 0.0, field[ix].min(axis=1))
            else:  # Eq. (13), the family W_A: log-sum-exp over anchors, the empty walk added
                lm = _numerics.logaddexp(
                    _numerics.logsumexp(log_mass[ix], axis=1), jnp.where(is_anchor, 0.0, -jnp.inf)
                )
                log_w = _numerics.logaddexp(_numerics.logsumexp(log_n[ix], axis=1), np.log(size))
                e = jnp.where(lm > -jnp.inf, -self.tau * (lm - log_w[:, None]), jnp.inf)
            out[members] = np.asarray(e)
        return out

    def _edge_cost(self) -> jnp.ndarray:
        """``[E]`` edge costs of Eq. (10) as :func:`grounding.ground` builds them
        (``alpha = xi = 1``, no realization): ``hop_cost - log(reliability)``."""
        g = self.graph
        return edge_costs_from_arrays(
            g.head, g.relation, g.tail, g.reliability, None, 1.0, 1.0, self.hop_cost
        )

    def _fields(self, sources: np.ndarray, cost: jnp.ndarray, tau: float) -> jnp.ndarray:
        """``[S, N]`` energy fields (Eq. (13); Eq. (11) at ``tau = 0``) over walks of
        ``1..max_hops`` edges from ``sources`` (padded to a power of two: one compiled program
        per size class), on the graph's prebuilt EdgeIndex from ``ELL_MIN_EDGES`` edges."""
        g, n_src = self.graph, len(sources)
        padded = np.pad(sources, (0, bucket(n_src, floor=1) - n_src), mode="edge")
        kw = dict(max_hops=self.max_hops, tau=tau)
        if g.n_edges >= ELL_MIN_EDGES:
            return self._edge_index.energy_field(cost, padded, **kw)[:n_src]
        return energy_field(g.head, g.tail, cost, padded, n_nodes=g.n_nodes, **kw)[:n_src]

    @functools.cached_property
    def _edge_index(self) -> EdgeIndex:
        """The graph's path-engine layout, built on the first large-graph batch."""
        return self.graph.edge_index()
