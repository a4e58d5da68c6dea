"""grounding: evidence-relative grounding of LLM trajectories under incomplete KG evidence.

The top level holds what a user calls first: a problem (:class:`GroundingProblem`), an
evidence state (:class:`EvidenceState` over a :class:`TypedGraph`), the solver
(:func:`ground`, :func:`ground_batch`, :class:`GroundingConfig`), its result, the decision
rule and the posteriors. Everything else is a namespace, each documented with the equation or
result of the paper it implements (*Grounding LLM Reasoning under Incomplete Graph Evidence*,
Li & Song):

- the theory: :mod:`grounding.energy`, :mod:`grounding.bounds`, :mod:`grounding.geometry`,
  :mod:`grounding.worlds`, :mod:`grounding.regularize`, :mod:`grounding.alignment`;
- the path engine: :mod:`grounding.semiring`, :mod:`grounding.paths`; its compiled programs
  in a long-lived process: :mod:`grounding.programs` (the cap, the counters, the release);
- above the core: :mod:`grounding.retrieval`, :mod:`grounding.plans`, :mod:`grounding.qa`,
  :mod:`grounding.language`, :mod:`grounding.learn`, :mod:`grounding.datasets`,
  :mod:`grounding.plot`, :mod:`grounding.testing`.

``docs/theory.md`` maps results to code and tests; ``docs/architecture.md`` the floors.
"""

from grounding import bounds, energy, geometry, paths, programs, semiring  # noqa: F401
from grounding.decision import (
    Action,
    IsotonicCalibrator,
    classify_claim,
    classify_status,
    decide,
    decide_action,
    selective_rule,
    status_energy,
)
from grounding.evidence import EvidenceState, EvidenceStatus
from grounding.graph import Triple, TypedGraph
from grounding.posterior import (
    expected_energy,
    gibbs_log_posterior,
    hard_feasible,
    hard_log_posterior,
    kl_divergence,
    kl_objective,
    kl_objective_decomposition,
    log_normalize,
    log_odds,
    log_partition,
    map_index,
    tv_distance,
)
from grounding.problem import ClaimChain, GroundingProblem, Realization, edge_cost
from grounding.result import Certificate, GroundingResult, SupportingPaths
from grounding.solver import GroundingConfig, ground, ground_batch

__version__ = "0.1.0"

__all__ = [
    # the problem and its evidence
    "GroundingProblem",
    "ClaimChain",
    "Realization",
    "edge_cost",
    "TypedGraph",
    "Triple",
    "EvidenceState",
    "EvidenceStatus",
    # the solver and its result
    "ground",
    "ground_batch",
    "GroundingConfig",
    "GroundingResult",
    "Certificate",
    "SupportingPaths",
    # the decision rule (Sec. 3.3, Axiom 8)
    "Action",
    "classify_status",
    "classify_claim",
    "status_energy",
    "selective_rule",
    "decide",
    "decide_action",
    "IsotonicCalibrator",
    # the posteriors (Eqs. (1), (6), (7)) and their divergences
    "gibbs_log_posterior",
    "hard_log_posterior",
    "hard_feasible",
    "log_normalize",
    "log_partition",
    "log_odds",
    "map_index",
    "expected_energy",
    "kl_divergence",
    "kl_objective",
    "kl_objective_decomposition",
    "tv_distance",
]
