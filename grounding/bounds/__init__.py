r"""Every bound of the paper as a function, with sharp versions where the paper's is loose.

Stability: Thm. 3 (paper's ``tanh(λω/2)`` and the sharp ``tanh(λω/4)``), Prop. 8 (``delta``),
and the certificate a grounded posterior carries (:func:`stability_certificate`).
Concentration and limits: Prop. 5 and Prop. 6 (explicit rates). Selection: Prop. 7, Cor. 1,
Prop. 12 (Hoeffding). Coverage: Eq. (15), Props. 4 and 11. Suppression and amplification:
Props. 14 and 15. Trade-off: Prop. 13.
"""

from grounding.bounds._coverage import (
    amplification,
    constraint_tradeoff,
    coverage_any_path,
    coverage_independent,
    soft_floor,
    suppression_log_ratio_bound,
)
from grounding.bounds._selection import (
    concentration_tv_bound,
    hard_limit_tv,
    hoeffding_failure_bound,
    hoeffding_sample_size,
    map_probability_lower_bound,
    margin_condition,
    pairwise_ranking_condition,
)
from grounding.bounds._stability import (
    certified_tv,
    energy_perturbation_delta,
    log_ratio_bound,
    oscillation,
    stability_certificate,
    tv_bound,
    tv_bound_delta,
    tv_bound_delta_sharp,
    tv_bound_sharp,
)

__all__ = [
    "oscillation",
    "log_ratio_bound",
    "tv_bound",
    "tv_bound_sharp",
    "tv_bound_delta",
    "tv_bound_delta_sharp",
    "energy_perturbation_delta",
    "certified_tv",
    "stability_certificate",
    "concentration_tv_bound",
    "hard_limit_tv",
    "margin_condition",
    "map_probability_lower_bound",
    "pairwise_ranking_condition",
    "hoeffding_failure_bound",
    "hoeffding_sample_size",
    "coverage_independent",
    "coverage_any_path",
    "soft_floor",
    "suppression_log_ratio_bound",
    "amplification",
    "constraint_tradeoff",
]
