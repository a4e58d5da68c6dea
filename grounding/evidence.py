r"""Evidence states: the retrieved graph with contradictions, coverage and provenance.

An :class:`EvidenceState` is the observed state :math:`R \supseteq G_R` of Sec. 3.2: the
retrieved snapshot :math:`G_R` (a :class:`~grounding.graph.TypedGraph`) plus explicit
counter-evidence, functional relation declarations, a coverage estimate :math:`c_R`
(Axiom 6) and provenance. It is what every retriever hands to :func:`grounding.ground`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from grounding.graph import Triple, TypedGraph

__all__ = ["EvidenceState", "EvidenceStatus"]


def check_min_reliability(min_reliability: object) -> float:
    """The reliability an observed edge needs to count as counter-support: a real scalar in
    ``[0, 1]`` (edge reliabilities lie in ``(0, 1]``, Eq. (8); above 1, or NaN, no edge would
    qualify and counter-evidence would be switched off without a word)."""
    if isinstance(min_reliability, jax.core.Tracer):
        raise TypeError(
            "min_reliability is a static setting (it decides which edges count as "
            "counter-support): give a Python number, not a value traced by jit, vmap or grad"
        )
    v = np.asarray(min_reliability)
    if isinstance(min_reliability, bool) or v.ndim or v.dtype.kind not in "iuf":
        raise TypeError(f"min_reliability must be a real number, got {min_reliability!r}")
    if not 0.0 <= float(v) <= 1.0:
        raise ValueError(
            f"min_reliability must lie in [0, 1] (edge reliabilities lie in (0, 1]), got "
            f"{min_reliability!r}"
        )
    return float(v)


class NamedIntEnum(enum.IntEnum):
    """An ``IntEnum`` (the codes live in JAX arrays) that prints as its name."""

    def __str__(self) -> str:
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


class EvidenceStatus(NamedIntEnum):
    """The four evidence statuses of Sec. 3.3 (``str`` gives the name, ``int`` the code).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Sec. 3.3.
    """

    SUPPORTED = 0
    CONTRADICTED = 1
    UNSUPPORTED = 2
    OUT_OF_SCHEMA = 3


@dataclasses.dataclass(frozen=True)
class EvidenceState:
    r"""The observed evidence state :math:`R` (Sec. 3.2): snapshot plus what surrounds it.

    Attributes:
        graph: the retrieved snapshot :math:`G_R`.
        negative: explicit counter-evidence triples ("it is reliably not the case that ...").
        functional: relations declared functional (one object per subject), so a different
            observed object is counter-support for a claim (Sec. 3.3, "contradicted").
        coverage: declared coverage estimate :math:`c_R \in [0, 1]` (Axiom 6).
        provenance: free-form metadata (snapshot id, retriever, scores, timestamps).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Sec. 3.2 (evidence state), Axiom 6 (coverage).

    Example:
        >>> g = TypedGraph.from_triples([("lou_seal", "mascot_of", "giants")])
        >>> s = EvidenceState(g, functional=frozenset({"mascot_of"}))
        >>> s.counter_support(("lou_seal", "mascot_of", "cardinals")), s.in_schema(("a", "won", "b"))
        (True, False)
    """

    graph: TypedGraph
    negative: frozenset[Triple] = frozenset()
    functional: frozenset[str] = frozenset()
    coverage: float = 1.0
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.coverage) <= 1.0:
            raise ValueError(f"coverage must lie in [0, 1], got {self.coverage}")
        object.__setattr__(self, "negative", frozenset(tuple(t) for t in self.negative))
        object.__setattr__(self, "functional", frozenset(self.functional))
        unknown = self.functional - set(self.graph.relations)
        if unknown:
            raise ValueError(f"functional names relations not in the schema: {sorted(unknown)}")

    def _over(self, graph: TypedGraph) -> EvidenceState:
        """This state (negatives, functional relations, coverage, provenance) over ``graph``,
        without the checks of :meth:`__post_init__` when ``graph`` has this state's schema
        (they passed for it: a compacted copy of the graph, one per question of a batch)."""
        if graph.relations != self.graph.relations:
            return dataclasses.replace(self, graph=graph)
        out = object.__new__(EvidenceState)
        out.__dict__.update(
            graph=graph, negative=self.negative, functional=self.functional,
            coverage=self.coverage, provenance=self.provenance,
        )  # fmt: skip
        return out

    def __repr__(self) -> str:
        """The graph's size and what surrounds it, the defaults left out, e.g.
        ``EvidenceState(TypedGraph(nodes=3, edges=2, relations=2), negative=1,
        functional=['mascot_of'], coverage=0.8, provenance=['retriever'])``."""
        parts = [repr(self.graph)]
        if self.negative:
            parts.append(f"negative={len(self.negative)}")
        if self.functional:
            parts.append(f"functional={sorted(self.functional)}")
        if float(self.coverage) != 1.0:
            parts.append(f"coverage={float(self.coverage):g}")
        if self.provenance:
            parts.append(f"provenance={list(self.provenance)}")
        return f"EvidenceState({', '.join(parts)})"

    @functools.cached_property
    def _functional_objects(self) -> dict[tuple[str, str], list[tuple[str, float]]]:
        """``(subject, functional relation) -> [(object, reliability), ...]`` observed in
        :math:`G_R` (built once)."""
        out: dict[tuple[str, str], list[tuple[str, float]]] = {}
        w = np.asarray(self.graph.reliability)
        for (a, b, c), we in zip(self.graph.triples(), w):
            if b in self.functional:
                out.setdefault((a, b), []).append((c, float(we)))
        return out

    def counter_support(self, claim: Triple, min_reliability: float = 0.0) -> bool:
        """Whether :math:`R` holds reliable counter-evidence for ``claim`` (Sec. 3.3): the claim
        is an explicit negative, or its relation is functional and :math:`G_R` gives the
        subject another object with reliability at least ``min_reliability`` (in ``[0, 1]``)."""
        min_reliability = check_min_reliability(min_reliability)
        h, r, t = claim
        if (h, r, t) in self.negative:
            return True
        return any(
            c != t and we >= min_reliability for c, we in self._functional_objects.get((h, r), ())
        )

    def in_schema(self, claim: Triple) -> bool:
        """A claim is expressible when its relation type is in the schema :math:`\\mathcal R_R`."""
        return claim[1] in self.graph.relations
