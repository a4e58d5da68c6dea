"""grounding: evidence-relative grounding of LLM trajectories under incomplete KG evidence.

The public API is flat; every name below is documented with the equation or result of the
paper (``shared/seeds/002``) it implements. ``docs/theory.md`` maps results to code and tests.
"""

from grounding.bounds import (
    amplification,
    concentration_tv_bound,
    constraint_tradeoff,
    coverage_any_path,
    coverage_independent,
    energy_perturbation_delta,
    hard_limit_tv,
    hoeffding_failure_bound,
    hoeffding_sample_size,
    log_ratio_bound,
    map_probability_lower_bound,
    margin_condition,
    oscillation,
    pairwise_ranking_condition,
    soft_floor,
    suppression_log_ratio_bound,
    tv_bound,
    tv_bound_delta,
    tv_bound_delta_sharp,
    tv_bound_sharp,
)
from grounding.decision import (
    Action,
    IsotonicCalibrator,
    classify_claim,
    classify_status,
    decide,
    selective_rule,
    status_energy,
)
from grounding.energy import (
    aggregate_paths,
    aggregation_bounds,
    best_path_energy,
    path_energy,
    path_posterior,
    projection,
    revise,
    revision_objective,
    slack_energy,
    support_region,
    unified_objective,
    variational_path_objective,
)
from grounding.evidence import EvidenceState, EvidenceStatus, TypedGraph
from grounding.geometry import (
    BilinearEnergy,
    Identity,
    Linear,
    Rotation,
    Translation,
    edge_residuals,
    entity_cost,
    euclidean,
    manhattan,
    typed_residual,
)
from grounding.paths import chain_energy, chain_path_energies, enumerate_walks, simple_paths, walk_nodes
from grounding.posterior import (
    expected_energy,
    gibbs_log_posterior,
    hard_feasible,
    hard_log_posterior,
    kl_divergence,
    kl_objective,
    kl_objective_decomposition,
    log_odds,
    log_partition,
    map_index,
    tv_distance,
)

__version__ = "0.1.0"

__all__ = [
    # evidence
    "TypedGraph", "EvidenceState", "EvidenceStatus",
    # geometry, Eqs. (8)-(9)
    "Translation", "Linear", "Rotation", "Identity", "BilinearEnergy",
    "typed_residual", "edge_residuals", "entity_cost", "euclidean", "manhattan",
    # energies, Eqs. (10)-(14), (19), (28)-(30)
    "path_energy", "best_path_energy", "aggregate_paths", "path_posterior",
    "variational_path_objective", "aggregation_bounds", "slack_energy", "support_region",
    "projection", "revise", "revision_objective", "unified_objective",
    # paths by enumeration
    "enumerate_walks", "walk_nodes", "simple_paths", "chain_path_energies", "chain_energy",
    # posteriors, Eqs. (5)-(7), (16)-(18), (20)
    "gibbs_log_posterior", "hard_log_posterior", "hard_feasible", "log_partition",
    "kl_divergence", "kl_objective", "kl_objective_decomposition", "log_odds", "map_index",
    "tv_distance", "expected_energy",
    # bounds
    "oscillation", "log_ratio_bound", "tv_bound", "tv_bound_sharp", "tv_bound_delta",
    "tv_bound_delta_sharp", "energy_perturbation_delta", "concentration_tv_bound",
    "hard_limit_tv", "margin_condition", "map_probability_lower_bound",
    "pairwise_ranking_condition", "hoeffding_failure_bound", "hoeffding_sample_size",
    "coverage_independent", "coverage_any_path", "soft_floor", "suppression_log_ratio_bound",
    "amplification", "constraint_tradeoff",
    # decisions
    "Action", "classify_status", "classify_claim", "status_energy", "selective_rule", "decide",
    "IsotonicCalibrator",
]
