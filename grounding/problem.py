r"""What :func:`grounding.ground` grounds (candidates, prior) and how evidence becomes costs.

- :class:`ClaimChain`: a candidate trajectory written as a chain of claims
  ``z_0 -r_1-> z_1 ... -r_T-> z_T`` (Def. 1, Sec. 3.1), grounded against every ``T``-hop walk
  of the evidence graph with the monotone assignment (mention ``t`` <-> node ``v_t``).
- An *answer* candidate (a plain entity name): grounded by every walk of
  ``min_hops..max_hops`` edges from any of the question's anchors (topic entities) to it.
- :class:`GroundingProblem`: the question, its candidates :math:`\Gamma(q)` and the model's
  normalized log-prior over them (Eq. (1)), plus optional per-candidate claim energies.
- :class:`Realization`: the geometric realization of Sec. 5.1 (entity map :math:`\eta`,
  relation maps :math:`T_r`, metric :math:`d_{\mathcal M}`), or none: the *evidence-only*
  realization, in which a mention costs 0 at its own entity and ``+inf`` elsewhere (exact
  entity linking) and every retrieved triple is geometrically consistent, so its residual
  (Eq. (8)) is its reliability cost alone.
- :func:`edge_cost`: Eqs. (8)-(10) per edge:
  :math:`c(e) = c_0 + \alpha\,[d_{\mathcal M}(T_r\eta(u), \eta(v)) + \xi(-\log w_e)]`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import cached_property, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import (
    as_float_array,
    check_energy,
    check_int,
    check_log_prob,
    check_nonnegative_scalar,
    is_stand_in,
)
from grounding._names import nfc
from grounding.geometry import Identity, Metric, RelationMap, typed_residual
from grounding.graph import Triple, TypedGraph
from grounding.posterior import log_normalize

__all__ = ["ClaimChain", "GroundingProblem", "Realization", "edge_cost"]


@dataclasses.dataclass(frozen=True, slots=True)  # (no __dict__: a batch builds thousands)
class ClaimChain:
    """A candidate trajectory as a claim chain ``z_0 -r_1-> z_1 ... -r_T-> z_T`` (Def. 1).

    Attributes:
        entities: the ``T + 1`` mentioned entities (``None``: any entity, e.g. an unnamed
            intermediate).
        relations: the ``T`` claimed relation types (``None``: unspecified).
        name: a label for reports (default: the entities joined by ``->``).
        description: free text.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Def. 1.

    Example:
        >>> c = ClaimChain(("lou_seal", "giants", None), ("mascot_of", "won"))
        >>> c.hops, c.answer
        ([('lou_seal', 'mascot_of', 'giants'), ('giants', 'won', None)], None)
    """

    entities: tuple[str | None, ...]
    relations: tuple[str | None, ...]
    name: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        ents, rels = tuple(map(nfc, self.entities)), tuple(map(nfc, self.relations))  # one spelling
        if len(ents) != len(rels) + 1 or not rels:
            raise ValueError(
                f"a claim chain needs T >= 1 relations and T + 1 entities, got {len(rels)} "
                f"relations and {len(ents)} entities"
            )
        for kind, xs in (("entities", ents), ("relations", rels)):
            for x in xs:  # (a loop: chains are built by thousands, all() of a generator is slower)
                if not (x is None or (isinstance(x, str) and x)):
                    raise TypeError(f"{kind} must be non-empty str or None, got {xs!r}")
        object.__setattr__(self, "entities", ents)
        object.__setattr__(self, "relations", rels)
        if not self.name:
            object.__setattr__(self, "name", "->".join([e or "*" for e in ents]))

    @classmethod
    def _trusted(cls, entities: tuple, relations: tuple, name: str) -> ClaimChain:
        """A chain from parts (and its default name) that its caller checked and built."""
        c = object.__new__(cls)
        put_e, put_r, put_n, put_d = _CHAIN_SETTERS  # (the slots' own setters: 2x faster)
        put_e(c, entities), put_r(c, relations), put_n(c, name), put_d(c, "")
        return c

    @property
    def n_hops(self) -> int:
        return len(self.relations)

    @property
    def hops(self) -> list[tuple[str | None, str | None, str | None]]:
        """The claimed triples ``(z_{t-1}, r_t, z_t)``."""
        return [(self.entities[i], r, self.entities[i + 1]) for i, r in enumerate(self.relations)]

    @property
    def answer(self) -> str | None:
        return self.entities[-1]

    def named_hops(self) -> list[Triple]:
        """The hops whose three parts are all given (the ones counter-evidence can refute)."""
        return [h for h in self.hops if None not in h]  # type: ignore[misc]


Candidate = ClaimChain | str
_CHAIN_SETTERS = tuple(vars(ClaimChain)[f].__set__ for f in ClaimChain.__slots__)  # (in order)
#: The end of a "log_prior does not normalize" error: the constructor for raw scores.
_HINT = "GroundingProblem.from_logprobs(question, candidates, scores) normalizes raw scores"


def _key(c: Candidate) -> object:
    """The hypothesis a candidate states: an answer's name, a chain's entities and relations."""
    return (c.entities, c.relations) if isinstance(c, ClaimChain) else c


def _check_distinct_answers(cands: tuple[Candidate, ...]) -> None:
    """Answer candidates are distinct names: a repeated answer would split its prior mass over
    two entries, so a rival with less mass than their sum could win (merge repeats first:
    :meth:`GroundingProblem.merged`). Claim chains are trajectories, scored entry by entry
    (several may share an answer); identical chains are allowed and each keeps its own mass."""
    if isinstance(cands[0], ClaimChain):
        return
    first: dict[object, int] = {}
    for i, c in enumerate(cands):
        j = first.setdefault(c, i)
        if j != i:
            raise ValueError(
                f"answer candidates must be distinct: {c!r} appears at positions {j} and {i}; "
                "pass each answer once with the prior mass of its copies summed "
                "(GroundingProblem.merged log-adds their log-priors)"
            )


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["log_prior", "claim_energy"],
    meta_fields=["question", "candidates", "anchors", "max_hops", "min_hops"],
)
@dataclasses.dataclass(frozen=True)
class GroundingProblem:
    r"""A question, its finite candidate set :math:`\Gamma(q)` and the model's prior (a pytree).

    Attributes:
        question: the question text.
        candidates: all :class:`ClaimChain` s, or all answer entity names (``str``, distinct:
            a repeated answer is an error; :meth:`merged` sums the prior mass of repeats).
        log_prior: ``[C]`` normalized :math:`\log p_\theta(\rho\mid q)` (Eq. (1)); ``-inf``
            allowed (a zero prior cannot be repaired by grounding). Kept where it was given:
            a NumPy array for host data (lists, NumPy arrays), a JAX array for a JAX array.
        anchors: the question's topic entities (answer candidates are grounded from them;
            with claim chains they are declared, not used in the energies). Every anchor must
            be in the evidence graph; a candidate need not be (it is then grounded as out of
            graph: unsupported, see :func:`grounding.ground`).
        max_hops: longest walk from an anchor for answer candidates (``None``: any length,
            only at ``tau = 0``).
        min_hops: shortest walk for answer candidates: ``1`` (a claim relating an anchor to
            the answer needs an edge) or ``0`` (an anchor supports itself by the empty walk).
        claim_energy: optional ``[C]`` energies of the candidates' own claims that the graph
            does not provide, e.g. the typed residual (Eq. (8)) of an asserted triple under
            a learned realization; added to the slack path energy (``>= 0``, finite).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Def. 1, Eq. (1) (candidate set and prior).

    Example:
        >>> import jax.numpy as jnp
        >>> p = GroundingProblem("who?", ("a", "b"), jnp.log(jnp.array([0.5, 0.5])), anchors=("q",),
        ...                      max_hops=2)
        >>> p.names, p.kind
        (('a', 'b'), 'answer')
    """

    question: str
    candidates: tuple[Candidate, ...]
    log_prior: ArrayLike
    anchors: tuple[str, ...] = ()
    max_hops: int | None = None
    min_hops: int = 1
    claim_energy: ArrayLike | None = None

    def __post_init__(self) -> None:
        cands = tuple(map(nfc, self.candidates))  # names in their one spelling (NFC)
        self.__dict__.update(candidates=cands, anchors=tuple(map(nfc, self.anchors)))  # (frozen)
        if not isinstance(self.question, str):
            raise TypeError(f"question must be a str, got {type(self.question).__name__}")
        if not cands:
            raise ValueError("candidates is empty: grounding needs a finite, non-empty Γ(q)")
        chains = [isinstance(c, ClaimChain) for c in cands]
        if any(chains) and not all(chains):
            raise TypeError("candidates must be all ClaimChains or all answer entity names")
        if not all(chains) and not all(isinstance(c, str) and c for c in cands):
            raise TypeError("answer candidates must be non-empty entity names (str)")
        if isinstance(self.log_prior, jax.core.Tracer):
            return  # rebuilt inside a transformation: checked when built
        _check_distinct_answers(cands)
        lp = check_log_prob(self.log_prior, "log_prior", hint=_HINT, keep_host=True)  # (no copy)
        if lp.shape != (len(cands),):
            raise ValueError(
                f"log_prior must have shape ({len(cands)},), one entry per candidate, "
                f"got {lp.shape}"
            )
        object.__setattr__(self, "log_prior", lp)
        if self.claim_energy is not None:
            e = check_energy(self.claim_energy, "claim_energy", keep_host=True)
            if e.shape != (len(cands),):
                raise ValueError(f"claim_energy must have shape ({len(cands)},), got {e.shape}")
            if not (np.isfinite(np.asarray(e)) & (np.asarray(e) >= 0)).all():
                raise ValueError("claim_energy must be finite and >= 0")
            object.__setattr__(self, "claim_energy", e)
        if self.kind == "answer":
            if not self.anchors:
                raise ValueError("answer candidates need anchors (the question's topic entities)")
            if self.min_hops not in (0, 1):
                raise ValueError(f"min_hops must be 0 or 1, got {self.min_hops!r}")
            if self.max_hops is not None:
                check_int(self.max_hops, "max_hops (or None)")

    @classmethod
    def merged(
        cls,
        question: str,
        candidates: Sequence[Candidate],
        log_prior: ArrayLike,
        **kwargs: Any,
    ) -> GroundingProblem:
        r"""A problem over the *distinct* candidates of a list with repeats (e.g. sampled
        answers), each with the summed prior mass of its copies (log-added log-priors, in
        order of first appearance): the prior of an answer is the mass of every way the model
        produced it (Eq. (1) over the distinct hypotheses).

        ``kwargs`` are the other fields (``anchors``, ``max_hops``, ``min_hops``,
        ``claim_energy``: one per listed candidate, and equal across the copies of one).

        Example:
            >>> import jax.numpy as jnp
            >>> p = GroundingProblem.merged("q", ["b", "b", "c"],
            ...                             jnp.log(jnp.array([0.3, 0.3, 0.4])), anchors=("a",))
            >>> p.names, [round(float(x), 6) for x in jnp.exp(p.log_prior)]
            (('b', 'c'), [0.6, 0.4])
        """
        cands = tuple(map(nfc, candidates))  # one spelling: copies that differ in it merge
        lp = np.asarray(check_log_prob(log_prior, "log_prior", hint=_HINT), float)
        if lp.shape != (len(cands),):
            raise ValueError(
                f"log_prior must have shape ({len(cands)},), one entry per candidate, "
                f"got {lp.shape}"
            )
        slot: dict[object, int] = {}
        which = np.asarray([slot.setdefault(_key(c), len(slot)) for c in cands], np.int64)
        first = np.unique(which, return_index=True)[1]
        merged = np.full(len(slot), -np.inf)
        np.logaddexp.at(merged, which, lp)  # the copies' masses add
        ce = kwargs.get("claim_energy")
        if ce is not None:
            ce = np.asarray(ce, float)
            if ce.shape != (len(cands),) or np.any(ce != ce[first][which]):
                raise ValueError(
                    "claim_energy must have one entry per listed candidate, equal across the "
                    "copies of a candidate"
                )
            kwargs["claim_energy"] = jnp.asarray(ce[first])
        dtype = jnp.asarray(log_prior).dtype
        return cls(question, tuple(cands[i] for i in first), jnp.asarray(merged, dtype), **kwargs)

    @classmethod
    def from_logprobs(
        cls, question: str, candidates: Sequence[Candidate], logprobs: ArrayLike, **kwargs: Any
    ) -> GroundingProblem:
        r"""A problem from raw log-scores ``[C]``, normalized over the candidates given:
        :math:`\log p_\theta(\rho_i\mid q) = s_i - \log\sum_j e^{s_j}` (Eq. (1)). An LLM's
        log-probabilities of a few sampled answers never sum to one; grounding needs the prior
        conditioned on the candidate set, which the constructor refuses to guess. Any real
        scores work (logits too; ``-inf``: no mass); ``kwargs`` are the other fields.

        Raises:
            ValueError: ``logprobs`` of another shape, with NaN or ``+inf``, or all ``-inf``.

        Example:
            >>> import jax.numpy as jnp
            >>> p = GroundingProblem.from_logprobs("q", ["b", "c"], jnp.array([-1.2, -2.3]),
            ...                                    anchors=("a",))
            >>> [round(float(x), 3) for x in jnp.exp(p.log_prior)]
            [0.75, 0.25]
        """
        s = as_float_array(logprobs, "logprobs", min_ndim=1)
        a = np.asarray(s)
        if a.shape != (len(candidates),):
            raise ValueError(f"logprobs must have shape ({len(candidates)},), got {a.shape}")
        if np.isnan(a).any() or (a == np.inf).any() or (a == -np.inf).all():
            raise ValueError("logprobs must not contain NaN or +inf, nor be all -inf")
        return cls(question, tuple(candidates), log_normalize(s), **kwargs)

    @cached_property  # (these three are read for every result: computed once)
    def kind(self) -> str:
        """``"chain"`` or ``"answer"``."""
        return "chain" if isinstance(self.candidates[0], ClaimChain) else "answer"

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name if isinstance(c, ClaimChain) else c for c in self.candidates)

    @cached_property
    def answers(self) -> tuple[str | None, ...]:
        """The entity each candidate answers: an answer candidate itself, a claim chain's last
        mention (``None`` when the chain leaves it open)."""
        return tuple(c.answer if isinstance(c, ClaimChain) else c for c in self.candidates)

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    def entities(self) -> list[str]:
        """Every entity the problem names, each once (anchors, then candidates' mentions, in
        order of first mention)."""
        named = self.candidates
        if self.kind == "chain":
            named = [e for c in named for e in c.entities]  # type: ignore[union-attr,misc]
        out = dict.fromkeys([*self.anchors, *named])
        out.pop(None, None)  # a chain's open mentions
        return list(out)


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["embeddings", "relation_map"],
    meta_fields=["metric"],
)
@dataclasses.dataclass(frozen=True)
class Realization:
    r"""A geometric realization (Sec. 5.1): entity map :math:`\eta` and relation maps
    :math:`T_r` with the metric :math:`d_{\mathcal M}` (a pytree of arrays).

    Attributes:
        embeddings: ``[n_entities, d]`` :math:`\eta`, rows in the evidence graph's entity order.
        relation_map: a :mod:`grounding.geometry` relation map (default: :class:`Identity`).
        metric: :math:`d_{\mathcal M}` by name (``"euclidean"``, ``"manhattan"``,
            ``"complex_l1"``) or a callable.

    Mentions are grounded with :math:`\psi_t = \eta(z_t)` (perfect entity linking), so a
    mention's node cost is :math:`d_{\mathcal M}(\eta(z_t), \eta(v))` (Eq. (9)).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Sec. 5.1, Eqs. (8)-(9).
    """

    embeddings: jax.Array
    relation_map: RelationMap = dataclasses.field(default_factory=Identity)
    metric: str | Metric = "euclidean"

    def __post_init__(self) -> None:
        if is_stand_in(self.embeddings):  # rebuilt by JAX (tracing, lowering): not checked
            return
        emb = as_float_array(self.embeddings, "embeddings")
        if emb.ndim != 2:
            raise ValueError(f"embeddings must be [n_entities, d], got shape {emb.shape}")
        if not bool(jnp.all(jnp.isfinite(emb))):
            raise ValueError("embeddings must be finite")
        object.__setattr__(self, "embeddings", emb)


def edge_cost(
    graph: TypedGraph,
    realization: Realization | None = None,
    *,
    alpha: ArrayLike = 1.0,
    xi: ArrayLike = 1.0,
    hop_cost: ArrayLike = 0.0,
) -> jax.Array:
    r"""The cost of traversing each edge of ``graph`` in a path energy (Eqs. (8)-(10)):

    .. math::
        c(e) = c_0 + \alpha\,\big[d_{\mathcal M}(T_r\eta(u), \eta(v)) + \xi\,(-\log w_e)\big],

    where the geometric term is 0 without a realization (every retrieved triple consistent),
    so the default is :math:`-\log w_e`: a certain edge costs nothing and an edge of
    reliability :math:`w` costs :math:`\log(1/w)`. :math:`c_0` (``hop_cost``) is an optional
    per-hop length penalty (the PCR paper's ``0.1`` per hop), not part of Eq. (10).

    Args:
        graph: the evidence graph.
        realization: optional :class:`Realization` (rows of ``embeddings`` = graph entities).
        alpha: :math:`\alpha \ge 0` (Eq. (10)).
        xi: :math:`\xi \ge 0` (Eq. (8)).
        hop_cost: :math:`c_0 \ge 0`.

    Returns:
        ``[n_edges]`` non-negative costs.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eqs. (8)-(10).

    Example:
        >>> g = TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c")], [1.0, 0.5])
        >>> [round(float(c), 6) for c in edge_cost(g)]
        [0.0, 0.693147]
    """
    alpha = check_nonnegative_scalar(alpha, "alpha")
    xi = check_nonnegative_scalar(xi, "xi")
    hop_cost = check_nonnegative_scalar(hop_cost, "hop_cost")
    check_realization(realization, graph.n_nodes)
    return edge_costs_from_arrays(
        graph.head, graph.relation, graph.tail, graph.reliability, realization, alpha, xi, hop_cost
    )


def check_realization(realization: Realization | None, n_nodes: int) -> None:
    """``realization`` is ``None`` or a :class:`Realization` with one row per entity."""
    if realization is None:
        return
    if not isinstance(realization, Realization):
        raise TypeError(
            f"realization must be a Realization or None, got {type(realization).__name__}"
        )
    if realization.embeddings.shape[0] != n_nodes:
        raise ValueError(
            f"realization.embeddings has {realization.embeddings.shape[0]} rows but the "
            f"evidence graph has {n_nodes} entities"
        )


def edge_costs_from_arrays(
    head: ArrayLike,
    relation: ArrayLike,
    tail: ArrayLike,
    reliability: ArrayLike,
    realization: Realization | None,
    alpha: ArrayLike,
    xi: ArrayLike,
    hop_cost: ArrayLike,
):
    """:func:`edge_cost` on edge arrays (no checks; ``jit``/``vmap``-able)."""
    w = jnp.asarray(reliability)
    if realization is None:
        res = xi * -jnp.log(w)  # Eq. (8), geometric term 0
    else:
        emb = realization.embeddings
        res = typed_residual(emb[head], emb[tail], relation, realization.relation_map,
                             w.astype(emb.dtype), xi, realization.metric)  # Eq. (8)  # fmt: skip
    return hop_cost + alpha * res  # Eq. (10), per edge
