r"""Statuses (Sec. 3.3), status-aware energies (Axiom 4), selective grounding (Eq. (22),
Prop. 9), calibration, and abstention-consistent decisions (Axiom 8)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_energy, check_nonnegative_scalar
from grounding.evidence import EvidenceState, EvidenceStatus, NamedIntEnum
from grounding.graph import Triple

__all__ = [
    "Action",
    "classify_status",
    "classify_claim",
    "status_energy",
    "selective_rule",
    "decide",
    "decide_action",
    "IsotonicCalibrator",
]


class Action(NamedIntEnum):
    """The action space of Sec. 4 (``str`` gives the name, ``int`` the code)."""

    ANSWER = 0
    ABSTAIN = 1
    RETRIEVE = 2
    VERIFY = 3


def classify_status(
    support_energy: ArrayLike, counter_support: ArrayLike, in_schema: ArrayLike, eps_s: ArrayLike
) -> jax.Array:
    r"""The four evidence statuses of Sec. 3.3, as :class:`EvidenceStatus` codes.

    Precedence: out of schema (the claim is not expressible), then contradicted (reliable
    counter-support, even if some path also supports it: conflicting evidence is not
    support), then supported (a finite :math:`E^{\mathrm{sup}}_R \le \epsilon_s`: an
    alignment exists and is good enough; ``+inf`` is no alignment, even at
    ``eps_s = inf``), else unsupported.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Sec. 3.3 (the four evidence statuses).
    """
    e = check_energy(support_energy, "support_energy", min_ndim=0)
    counter = jnp.asarray(counter_support, bool)
    schema = jnp.asarray(in_schema, bool)
    return jnp.where(
        ~schema,
        int(EvidenceStatus.OUT_OF_SCHEMA),
        jnp.where(
            counter,
            int(EvidenceStatus.CONTRADICTED),
            jnp.where(
                (e <= eps_s) & (e < jnp.inf),
                int(EvidenceStatus.SUPPORTED),
                int(EvidenceStatus.UNSUPPORTED),
            ),
        ),
    )


def classify_claim(
    state: EvidenceState,
    claim: Triple,
    support_energy: float,
    eps_s: float,
    min_reliability: float = 0.0,
) -> EvidenceStatus:
    """Status of one ``(head, relation, tail)`` claim against an :class:`EvidenceState`."""
    code = classify_status(
        jnp.asarray(support_energy),
        state.counter_support(claim, min_reliability),
        state.in_schema(claim),
        eps_s,
    )
    return EvidenceStatus(int(code))


def status_energy(
    raw_energy: ArrayLike,
    status: ArrayLike,
    kappa: ArrayLike,
    contradiction_penalty: ArrayLike | None = None,
) -> jax.Array:
    r"""Slack-extended, contradiction-dominant energy (Eq. (19) + Axiom 4).

    Supported and unsupported candidates get :math:`\min\{E, \kappa\}` (Eq. (19)); out-of-schema
    candidates get :math:`\kappa` (missing support of the strongest kind, not falsity);
    contradicted candidates get :math:`\kappa + \kappa_c` (default :math:`\kappa_c = \kappa`), so
    :math:`E(\rho_b) \ge E(\rho_u) + \kappa_c` for every contradicted :math:`\rho_b` and unsupported
    :math:`\rho_u` (Axiom 4 with :math:`\kappa_R = \kappa_c`).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (19), Axiom 4.
    """
    e = check_energy(raw_energy, "raw_energy", min_ndim=0)
    kappa = check_nonnegative_scalar(kappa, "kappa", allow_inf=True, strict=True)
    kc = (
        kappa
        if contradiction_penalty is None
        else check_nonnegative_scalar(
            contradiction_penalty, "contradiction_penalty", allow_inf=True, strict=True
        )
    )
    s = jnp.asarray(status)
    slack = jnp.minimum(e, kappa)  # Eq. (19)
    out = jnp.where(s == int(EvidenceStatus.OUT_OF_SCHEMA), kappa, slack)
    return jnp.where(s == int(EvidenceStatus.CONTRADICTED), kappa + kc, out)  # Axiom 4


def selective_rule(scores: ArrayLike, theta: ArrayLike) -> tuple[jax.Array, jax.Array]:
    r"""Selective grounding, Eq. (22): emit :math:`\hat\rho = \arg\max_\rho s_R(\rho)` iff
    :math:`\max_\rho s_R(\rho) \ge \theta`.

    Subnormal scores and thresholds (nonzero, below the dtype's smallest normal number, e.g.
    ``5e-324`` in float64) are read as 0, on every backend: XLA flushes them to zero on the
    CPU, and the rule flushes them itself so that no backend decides otherwise. So a subnormal
    score ties with 0 (the first of the tied candidates is the argmax), and a subnormal
    ``theta`` emits whatever the scores.

    Returns:
        ``(emit, index)``: a boolean and the argmax index (meaningful only when ``emit``).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (22), Prop. 9.
    """
    s, theta = _flush_subnormal(jnp.asarray(scores)), _flush_subnormal(jnp.asarray(theta))
    return jnp.max(s, axis=-1) >= theta, jnp.argmax(s, axis=-1)  # Eq. (22)


def _flush_subnormal(x: jax.Array) -> jax.Array:
    """``x`` with its subnormal entries set to 0 (see :func:`selective_rule`)."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    return jnp.where(jnp.abs(x) < jnp.finfo(x.dtype).tiny, jnp.zeros_like(x), x)


def decide_action(
    log_posterior: ArrayLike,
    status: ArrayLike,
    margin_threshold: ArrayLike = 0.0,
    theta: ArrayLike | None = None,
) -> jax.Array:
    r"""Abstention-consistent decision (Axiom 8) as an :class:`Action` code (``jit``/``vmap``-able).

    With :math:`\hat\rho` the posterior's best candidate (first on ties):

    - :math:`\hat\rho` contradicted ⇒ ABSTAIN;
    - :math:`\hat\rho` unsupported or out of schema ⇒ RETRIEVE (absence is not falsity: look again);
    - log-posterior margin between :math:`\hat\rho` and the runner-up below ``margin_threshold``
      ⇒ VERIFY;
    - posterior mass of :math:`\hat\rho` below ``theta`` (Eq. (22)) ⇒ ABSTAIN;
    - otherwise ANSWER.

    Args:
        log_posterior: ``[n]`` log posterior over candidates.
        status: ``[n]`` :class:`~grounding.EvidenceStatus` codes.
        margin_threshold: declared margin (``0``: never VERIFY).
        theta: selective threshold of Eq. (22) on the best candidate's posterior mass, in
            ``[0, 1]`` (``None``: none); not checked here (it may be traced): :func:`decide`
            and :func:`grounding.ground` reject values outside ``[0, 1]``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Axiom 8, Eq. (22).

    Example:
        >>> import jax.numpy as jnp
        >>> Action(int(decide_action(jnp.log(jnp.array([0.7, 0.3])), jnp.array([0, 2]))))
        <Action.ANSWER: 0>
    """
    lp = jnp.asarray(log_posterior)
    st = jnp.asarray(status)
    top, order = jax.lax.top_k(lp, min(2, lp.shape[-1]))  # ties: lower index first
    best = order[0]
    margin = top[0] - top[1] if lp.shape[-1] > 1 else jnp.inf
    s = st[best]
    low_mass = False if theta is None else jnp.exp(top[0]) < theta
    return jnp.select(
        [
            s == int(EvidenceStatus.CONTRADICTED),
            (s == int(EvidenceStatus.UNSUPPORTED)) | (s == int(EvidenceStatus.OUT_OF_SCHEMA)),
            margin < margin_threshold,
            low_mass,
        ],
        [int(Action.ABSTAIN), int(Action.RETRIEVE), int(Action.VERIFY), int(Action.ABSTAIN)],
        int(Action.ANSWER),
    )


def decide(
    log_posterior: ArrayLike,
    status: ArrayLike,
    margin_threshold: float = 0.0,
    theta: float | None = None,
) -> Action:
    """Abstention-consistent decision (Axiom 8) for one candidate set, as an :class:`Action`;
    the rule is :func:`decide_action`'s.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Axiom 8.
    """
    if theta is not None and not 0.0 <= float(theta) <= 1.0:
        raise ValueError(
            f"theta must lie in [0, 1] (a posterior-mass threshold, Eq. (22)), got {theta!r}"
        )
    lp = np.asarray(log_posterior, dtype=float)
    if lp.ndim != 1 or lp.size == 0:
        raise ValueError(f"log_posterior must be a non-empty 1-D array, got shape {lp.shape}")
    st = np.asarray(status)
    if st.shape != lp.shape:
        raise ValueError(f"status {st.shape} and log_posterior {lp.shape} differ in shape")
    return Action(int(decide_action(lp, st, margin_threshold, theta)))


@dataclasses.dataclass
class IsotonicCalibrator:
    """Isotonic-regression calibration of a support score (pool-adjacent-violators).

    Fits a non-decreasing map from scores to the empirical frequency of the external
    correctness event, as Prop. 9 requires of :math:`s_R`. Observations with equal scores
    are pooled first (one fitted value per distinct score, whatever their order in the
    input). Prediction is the step function of the fitted blocks (no extrapolation beyond the
    observed score range).

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Prop. 9 (calibrated support).
        - Ayer, Brunk, Ewing, Reid & Silverman, "An Empirical Distribution Function for Sampling
          with Incomplete Information", 1955 (pool-adjacent-violators).
    """

    thresholds_: np.ndarray | None = None
    values_: np.ndarray | None = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> IsotonicCalibrator:
        s = np.asarray(scores, dtype=float)
        y = np.asarray(labels, dtype=float)
        if s.ndim != 1 or s.shape != y.shape or s.size == 0:
            raise ValueError("scores and labels must be non-empty 1-D arrays of one length")
        if np.any(np.isnan(s)) or not np.all((y == 0) | (y == 1)):
            raise ValueError("scores must not contain NaN and labels must be 0/1")
        levels, which = np.unique(s, return_inverse=True)  # tied scores: one level
        sums = np.bincount(which, weights=y, minlength=len(levels))
        counts = np.bincount(which, minlength=len(levels)).astype(float)
        blocks: list[list[float]] = []  # [sum_y, count, min_score]
        for si, ys, n in zip(levels, sums, counts):
            blocks.append([ys, n, si])
            while (
                len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]
            ):
                ys, n, _ = blocks.pop()
                blocks[-1][0] += ys
                blocks[-1][1] += n
        self.thresholds_ = np.array([b[2] for b in blocks])
        self.values_ = np.array([b[0] / b[1] for b in blocks])
        return self

    def predict(self, scores: ArrayLike) -> np.ndarray:
        if self.thresholds_ is None:
            raise RuntimeError("IsotonicCalibrator.predict called before fit")
        s = np.asarray(scores, dtype=float)
        idx = np.clip(
            np.searchsorted(self.thresholds_, s, side="right") - 1, 0, len(self.values_) - 1
        )
        return self.values_[idx]
