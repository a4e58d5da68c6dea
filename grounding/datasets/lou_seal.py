r"""The Lou Seal running example (Sec. 5.4, Thm. 1, Fig. 2 of the paper): its data.

Question (Complex WebQuestions, Talmor & Berant 2018): *"Lou Seal is the mascot for the team
that last won the World Series when?"*  The supported route is

    LOU SEAL -mascot_of-> SAN FRANCISCO GIANTS -most_recent_world_series_win-> 2014 WORLD SERIES.

:func:`lou_seal` returns the latent graph :math:`W_1` (``data/lou_seal.tsv``, real facts only);
:data:`CLAIMS` the five candidate trajectories as plain claim chains (name, entities,
relations, description); :data:`STAND_IN_PRIOR` a declared *stand-in* for the LLM prior;
:data:`FUNCTIONAL` and :data:`ANTISYMMETRIC` the relation declarations that make
counter-evidence (:func:`lou_seal_evidence`). :func:`grounding.examples.lou_seal_example`
builds the two-world construction of Thm. 1 on this data and grounds it.

Declarations (documented, not derived from the paper): ``mascot_of`` and
``most_recent_world_series_win`` are functional (one object per subject), and ``mascot_of``
antisymmetric (the reversal of an observed mascot edge is explicit counter-evidence).
"""

from __future__ import annotations

from importlib import resources

from grounding.datasets.tsv import load_triples
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph

__all__ = [
    "lou_seal",
    "lou_seal_evidence",
]

GIANTS = "san_francisco_giants"
MASCOT = "mascot_of"
LAST_WIN = "most_recent_world_series_win"

#: The question (Complex WebQuestions, Talmor & Berant 2018).
QUESTION = "Lou Seal is the mascot for the team that last won the World Series when?"
#: Relations declared functional (a different observed object is counter-support, Sec. 3.3).
FUNCTIONAL = frozenset({MASCOT, LAST_WIN})
#: Relations declared antisymmetric (the reversed triple of an observed edge is counter-support).
ANTISYMMETRIC = frozenset({MASCOT})

#: The candidate trajectories :math:`\Gamma(q)` as ``(name, entities, relations, description)``.
CLAIMS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    (
        "correct_2014",
        ("lou_seal", GIANTS, "2014_world_series"),
        (MASCOT, LAST_WIN),
        "the supported two-hop route (true in W1)",
    ),
    (
        "stale_2012",
        ("lou_seal", GIANTS, "2012_world_series"),
        (MASCOT, LAST_WIN),
        "right team, an earlier title (true in W2)",
    ),
    (
        "wrong_team_drift",
        ("lou_seal", "st_louis_cardinals", "2011_world_series"),
        (MASCOT, LAST_WIN),
        "drifts to another mascot's team",
    ),
    (
        "relation_reversal",
        (GIANTS, "lou_seal", "2014_world_series"),
        (MASCOT, LAST_WIN),
        "reverses mascot_of (the team is the mascot of Lou Seal)",
    ),
    (
        "unsupported_generic",
        ("lou_seal", "san_francisco", "2010_world_series"),
        ("located_in", LAST_WIN),
        "invents a city-level bridge and a generic answer",
    ),
)

#: Declared stand-in for the LLM prior :math:`p_\theta(\rho\mid q)` over :data:`CLAIMS`.
#: Hand-set numbers, NOT the output of any language model: it favors the generic answer, as
#: the paper's discussion of Eq. (20) supposes ("the model prior strongly favors a generic but
#: unsupported answer").
STAND_IN_PRIOR: dict[str, float] = {
    "correct_2014": 0.25,
    "stale_2012": 0.20,
    "wrong_team_drift": 0.12,
    "relation_reversal": 0.08,
    "unsupported_generic": 0.35,
}


def lou_seal() -> TypedGraph:
    """The latent Lou Seal graph :math:`W_1` (19 real triples, see ``data/lou_seal.tsv``)."""
    return load_triples(resources.files("grounding.datasets") / "data" / "lou_seal.tsv")


def lou_seal_evidence(graph: TypedGraph, coverage: float = 1.0) -> EvidenceState:
    """Evidence state over ``graph`` with the declared :data:`FUNCTIONAL` relations and the
    reversals of observed :data:`ANTISYMMETRIC` edges as explicit counter-evidence.

    Example:
        >>> sorted(lou_seal_evidence(lou_seal()).functional)
        ['mascot_of', 'most_recent_world_series_win']
    """
    negative = frozenset((t, r, h) for h, r, t in graph.triples() if r in ANTISYMMETRIC)
    return EvidenceState(
        graph=graph,
        negative=negative,
        functional=FUNCTIONAL & frozenset(graph.relations),
        coverage=coverage,
        provenance={"dataset": "lou_seal", "source": "Complex WebQuestions (Talmor & Berant 2018)"},
    )
