r""":class:`GroundingConfig`: every setting of :func:`grounding.ground` in one frozen, validated
pytree.

The numeric settings (:math:`\lambda`, :math:`\kappa`, :math:`\tau`, :math:`\epsilon`, the
edge-cost coefficients, thresholds, :math:`\omega`) are the pytree's leaves: they may be traced,
so ``jax.grad`` of a loss through :func:`grounding.ground` with respect to ``lam`` or ``kappa``
works, and a config can be passed through ``jit``. The report options, the counter-support
threshold and whether ``tau`` is zero (best walk, Eq. (11), or entropic, Eq. (13)) are static.
Values are checked once, when the config is built (concrete values only: a traced value
passes through); JAX's own rebuilding of a config (tracers, cotangents) skips the checks.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_int, check_nonnegative_scalar, is_concrete
from grounding.evidence import check_min_reliability

__all__ = ["GroundingConfig", "SUPPORT"]

#: The default ``eps``: the hard feasible set's tolerance follows the status tolerance ``eps_s``.
SUPPORT = "support"


@dataclasses.dataclass(frozen=True)
class GroundingConfig:
    r"""The settings of :func:`grounding.ground` (and of every system that grounds).

    Attributes:
        lam: grounding strength :math:`\lambda \ge 0` (Eq. (7)).
        kappa: slack :math:`\kappa_R > 0`, the finite energy of missing support (Eq. (19));
            ``inf``: no slack (then a candidate without a walk gets no mass).
        tau: path temperature :math:`\tau \ge 0` (``0``: best walk, Eq. (11); a traced
            ``tau`` takes the entropic path of Eq. (13) and must be ``> 0``).
        eps: tolerance of the hard feasible set :math:`F_R = \{E \le \epsilon\}` (Eqs.
            (5)-(6)) on the total energy without slack (``+inf`` for a contradicted or
            out-of-schema candidate, plus any claim energy); ``"support"`` (the default): the
            status tolerance ``eps_s`` (itself ``kappa`` by default), so that hard grounding
            keeps exactly the candidates whose status is supported (a walk over edges of
            reliability below 1 has a positive energy: a tolerance of 0 would keep no candidate
            whenever the evidence is uncertain); ``0.0``: the strict rule (only walks over
            edges of reliability 1); ``None``: no hard posterior.
        alpha, xi, hop_cost: the edge-cost coefficients of :func:`grounding.edge_cost`.
        mismatch_cost: cost of aligning a claimed relation with an edge of another type
            (``inf``: typed claims must match).
        eps_s: support tolerance of the statuses (``E_raw <= eps_s`` is supported; default
            ``kappa``: support at least as good as the slack).
        contradiction_penalty: :math:`\kappa_c > 0` of Axiom 4 (default ``kappa``).
        margin_threshold, theta: the decision rule's margin and selective threshold (Axiom 8,
            Eq. (22)); ``theta`` is a posterior mass in ``[0, 1]`` (``None``: no threshold).
        omega: the oscillation at which the certificate's TV bounds are evaluated (Thm. 3);
            ``None``: the worst case over *every* evidence state with these candidates, prior
            and slack, :math:`\mathrm{osc}_S(E_R) + E_{\max}` with :math:`E_{\max} = \kappa +
            \kappa_c` (chains) or :math:`\kappa` (answers), valid because every energy lies in
            :math:`[0, E_{\max}]`.
        min_reliability: reliability an observed edge needs to count as counter-support, in
            ``[0, 1]`` (static).
        n_paths: best supporting walks reported per candidate (``0``: none; static).
        path_candidates: how many candidates get walks in the report: those of highest
            posterior that have a walk (ties: lower index first); ``None``: all (static). The
            report's cost follows this number, not the number of candidates (each reported
            candidate costs one k-best sweep of the graph); the other candidates' slots are
            empty (``paths.length == -1``, no triples).

    Raises:
        ValueError: a concrete value out of range (the message names the field).
        TypeError: a setting that is not a number.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (7), (11), (13), (19), (22); Axioms 4 and 8.

    Example:
        >>> cfg = GroundingConfig(lam=4.0, kappa=1.0, eps=0.0)
        >>> cfg.replace(lam=2.0).lam
        2.0
    """

    lam: ArrayLike
    kappa: ArrayLike
    tau: ArrayLike = 0.0
    eps: ArrayLike | str | None = SUPPORT
    alpha: ArrayLike = 1.0
    xi: ArrayLike = 1.0
    hop_cost: ArrayLike = 0.0
    mismatch_cost: ArrayLike = math.inf
    eps_s: ArrayLike | None = None
    contradiction_penalty: ArrayLike | None = None
    margin_threshold: ArrayLike = 0.0
    theta: ArrayLike | None = None
    omega: ArrayLike | None = None
    min_reliability: float = 0.0
    n_paths: int = 3
    path_candidates: int | None = 16
    tropical: bool = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_scalar("lam", self.lam)
        _check_scalar("kappa", self.kappa, allow_inf=True, strict=True)
        _check_scalar("tau", self.tau)
        for name in ("alpha", "xi", "hop_cost"):
            _check_scalar(name, getattr(self, name))
        _check_scalar("mismatch_cost", self.mismatch_cost, allow_inf=True)
        _check_scalar("margin_threshold", self.margin_threshold, allow_inf=True)
        if isinstance(self.eps, str) and self.eps != SUPPORT:
            raise ValueError(f"eps must be a number, {SUPPORT!r} or None, got {self.eps!r:.100}")
        for name, kw in (
            ("eps", dict(allow_inf=True)),
            ("eps_s", dict(allow_inf=True)),
            ("contradiction_penalty", dict(allow_inf=True, strict=True)),
            ("theta", {}),
            ("omega", dict(allow_inf=True)),
        ):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                _check_scalar(name, getattr(self, name), **kw)
        if self.theta is not None and is_concrete(self.theta):
            if not float(np.asarray(self.theta)) <= 1.0:
                raise ValueError(
                    "theta must lie in [0, 1] (a posterior-mass threshold, Eq. (22)), got "
                    f"{float(np.asarray(self.theta))}"
                )
        object.__setattr__(self, "min_reliability", check_min_reliability(self.min_reliability))
        object.__setattr__(self, "n_paths", check_int(self.n_paths, "n_paths", 0))
        if self.path_candidates is not None:
            object.__setattr__(
                self, "path_candidates", check_int(self.path_candidates, "path_candidates", 0)
            )
        # Eq. (11) (best walk) or Eq. (13) (entropic): decided here, where tau is concrete
        # unless the caller traces it, and carried through jit as static data
        tropical = is_concrete(self.tau) and float(np.asarray(self.tau)) == 0.0
        object.__setattr__(self, "tropical", tropical)

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of every setting."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)

    def replace(self, **changes: Any) -> GroundingConfig:
        """A copy with ``changes`` (checked like a new config; unknown names: TypeError). The
        copy keeps this config's path rule (best walk or entropic) unless ``tau`` changes: a
        config traced through ``jit`` has a traced ``tau``, which alone would read as
        entropic."""
        unknown = set(changes) - set(self.fields())
        if unknown:
            raise TypeError(f"GroundingConfig has no setting {sorted(unknown)}")
        out = dataclasses.replace(self, **changes)
        if "tau" not in changes:
            object.__setattr__(out, "tropical", self.tropical)
        return out

    def flags(self) -> tuple[bool, bool, bool, bool]:
        """The static flags of the compiled program: ``(tropical, eps set, theta set, omega
        set)``."""
        return (
            self.tropical,
            self.eps is not None,
            self.theta is not None,
            self.omega is not None,
        )

    def arrays(self) -> dict[str, jax.Array]:
        """The scalars the compiled program reads, under the config's own field names
        (defaults filled in: ``eps_s`` and the contradiction penalty default to ``kappa``, a
        ``"support"`` ``eps`` to ``eps_s``). Built once per config and float width (a batch
        reads them for every question), unless a value is traced."""
        key = jnp.result_type(float)
        cached = self.__dict__.get("_arrays")
        if cached is not None and cached[0] == key:
            return cached[1]
        leaves = _leaves(self)
        out = self._arrays_of_config({k: jnp.asarray(v) for k, v in leaves.items()})
        if is_concrete(*leaves.values()):
            object.__setattr__(self, "_arrays", (key, out))
        return out

    @staticmethod
    def _arrays_of(a: dict) -> dict[str, jax.Array]:
        out = dict(
            lam=a["lam"],
            kappa=a["kappa"],
            tau=a["tau"],
            alpha=a["alpha"],
            xi=a["xi"],
            hop_cost=a["hop_cost"],
            mismatch_cost=a["mismatch_cost"],
            eps_s=a.get("eps_s", a["kappa"]),
            contradiction_penalty=a.get("contradiction_penalty", a["kappa"]),
            margin_threshold=a["margin_threshold"],
        )
        out.update({k: a[k] for k in ("eps", "theta", "omega") if k in a})
        return out

    def _arrays_of_config(self, a: dict) -> dict[str, jax.Array]:
        out = self._arrays_of(a)
        if isinstance(self.eps, str):  # SUPPORT: the hard tolerance follows eps_s
            out["eps"] = out["eps_s"]
        return out


def make_config(config: GroundingConfig | None, params: dict, caller: str) -> GroundingConfig:
    """``config`` updated by keyword ``params``, or a new config from ``params`` alone (a
    TypeError names ``caller`` for unknown or missing settings)."""
    unknown = set(params) - set(GroundingConfig.fields())
    if unknown:
        raise TypeError(f"{caller}: unknown settings {sorted(unknown)}")
    if config is not None:
        if not isinstance(config, GroundingConfig):
            raise TypeError(
                f"{caller}: config must be a GroundingConfig, got {type(config).__name__}"
            )
        return config.replace(**params) if params else config
    missing = [k for k in ("lam", "kappa") if k not in params]
    if missing:
        raise TypeError(f"{caller}: missing setting {missing[0]!r} (or pass a GroundingConfig)")
    return GroundingConfig(**params)


_DATA = (
    "lam",
    "kappa",
    "tau",
    "eps",
    "alpha",
    "xi",
    "hop_cost",
    "mismatch_cost",
    "eps_s",
    "contradiction_penalty",
    "margin_threshold",
    "theta",
    "omega",
)
_META = ("min_reliability", "n_paths", "path_candidates", "tropical")


def _flatten(config: GroundingConfig):
    data = tuple(None if isinstance(v, str) else v for v in map(config.__getattribute__, _DATA))
    eps_support = isinstance(config.eps, str)  # SUPPORT is static: no leaf of its own
    return data, (*(getattr(config, k) for k in _META), eps_support)


def _unflatten(meta: tuple, data: tuple) -> GroundingConfig:
    """Rebuilt without the checks: JAX rebuilds configs around tracers, cotangents (which may
    be negative or zero) and placeholders."""
    config = object.__new__(GroundingConfig)
    for k, v in (*zip(_DATA, data), *zip(_META, meta)):
        object.__setattr__(config, k, v)
    if meta[-1]:
        object.__setattr__(config, "eps", SUPPORT)
    return config


jax.tree_util.register_pytree_node(GroundingConfig, _flatten, _unflatten)


def _leaves(config: GroundingConfig) -> dict:
    """The numeric settings that are set (``None`` ones left out)."""
    values = ((k, getattr(config, k)) for k in _DATA)
    return {k: v for k, v in values if v is not None and not isinstance(v, str)}


def _check_scalar(name: str, x: ArrayLike, **kw) -> None:
    """One question's scalar setting, by :func:`grounding._checks.check_nonnegative_scalar`
    (no batch axis; ``None``, strings and bools are not numbers)."""
    if isinstance(x, (bool, str, bytes)) or x is None:
        raise TypeError(f"{name} must be a number, got {x!r:.100}")
    a = check_nonnegative_scalar(x, name, **kw)
    if a.ndim:
        raise ValueError(f"{name} must be a scalar for one question, got shape {a.shape}")
