r""":class:`GroundingConfig`: every setting of :func:`grounding.ground` in one frozen, validated
pytree.

The numeric settings (:math:`\lambda`, :math:`\kappa`, :math:`\tau`, :math:`\epsilon`, the
edge-cost coefficients, thresholds, :math:`\omega`) are the pytree's leaves: they may be traced,
so ``jax.grad`` of a loss through :func:`grounding.ground` with respect to ``lam``, ``kappa`` or
``tau`` works, a config can be passed through ``jit`` and ``vmap``, and ``tree_map`` or an
optimizer step (``optax.apply_updates``) on a config gives a config. The report options and the
counter-support threshold are static. The path rule (best walk, Eq. (11), or entropic, Eq.
(13)) is read from ``tau`` where a config is used, never inherited: see
:class:`GroundingConfig` for the contract of rebuilt and traced configs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_int, check_nonnegative_scalar, float_dtype, is_concrete
from grounding._numerics import temperature_floor
from grounding.evidence import check_min_reliability

__all__ = ["GroundingConfig", "SUPPORT"]

#: The default ``eps``: the hard feasible set's tolerance follows the status tolerance ``eps_s``.
SUPPORT = "support"


def _setting(
    default: Any = dataclasses.MISSING,
    *,
    positive: bool = False,
    inf: bool = False,
    at_most: float | None = None,
    unset: str | None = None,
) -> Any:
    """A numeric setting (a leaf of the pytree) and its range: ``>= 0`` (``> 0`` when
    ``positive``), finite unless ``inf``, at most ``at_most``; a default of ``None`` (or
    :data:`SUPPORT`) makes it optional, and ``unset`` names the setting it then follows."""
    optional = default is None or isinstance(default, str)
    meta = dict(leaf=True, positive=positive, inf=inf, at_most=at_most, unset=unset,
                optional=optional)  # fmt: skip
    return dataclasses.field(default=default, metadata=meta)


def _static(default: Any, check: Any) -> Any:
    """A static setting (metadata of the pytree, part of a program's key) and its check."""
    return dataclasses.field(default=default, metadata=dict(leaf=False, check=check))


@dataclasses.dataclass(frozen=True)
class GroundingConfig:
    r"""The settings of :func:`grounding.ground` (and of every system that grounds).

    Attributes:
        lam: grounding strength :math:`\lambda \ge 0` (Eq. (7)).
        kappa: slack :math:`\kappa_R > 0`, the finite energy of missing support (Eq. (19));
            ``inf``: no slack (then a candidate without a walk gets no mass).
        tau: path temperature :math:`\tau \ge 0`: the entropic energy of Eq. (13) above
            :func:`~grounding._numerics.temperature_floor` (``1.1e-19`` in float32,
            ``1.5e-154`` in float64), its limit, the best walk's energy of Eq. (11), below it
            (``0``, and a ``tau`` that would underflow: a subnormal float32 ``tau`` grounds as
            ``tau = 0``, never as no walk at all).
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

    Rebuilt and traced configs:
        A config built by JAX or by the caller from another one's leaves
        (``jax.tree_util.tree_map``, ``optax.apply_updates``, the gradient ``jax.grad``
        returns, ``jit``, ``vmap``) is rebuilt without checks, since a gradient with respect
        to a config is a config whose leaves may be negative (it is a direction, not
        settings) and JAX rebuilds configs around placeholders. It is checked where it meets
        the solver, by :func:`grounding.ground` and :func:`grounding.ground_batch`:

        - concrete values are checked as when a config is built: a value out of range is a
          ``ValueError`` naming the field there (a step that takes ``lam`` below 0 fails at
          the next ``ground``, it does not ground at the prior);
        - the path rule follows ``tau`` itself, never the parent's: a concrete ``tau`` picks
          Eq. (11) or Eq. (13) (:attr:`tropical`); a traced ``tau`` picks it at run time (both
          are compiled: a ``vmap`` over ``tau`` that holds ``0`` grounds that row by Eq. (11));
        - traced values cannot be checked without leaving the trace, so ``ground`` does not
          raise there: a traced value out of its range (below 0, NaN, ``+inf`` where not
          allowed, ``kappa`` or the contradiction penalty ``<= 0``, ``theta > 1``) is read as
          ``0`` and the result is flagged, ``certificate.valid`` False (vacuous bounds) and
          the action ABSTAIN, with no NaN in the result or its gradient (zero for the
          replaced value). Answers over walks of any length (``max_hops=None``) have Eq. (11)
          only: there a traced ``tau`` above the floor is flagged in the same way.

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

    # each setting declared once, here, with its range (checked when a config is built, and
    # where a rebuilt or traced config meets the solver: _check, checked_settings)
    lam: ArrayLike = _setting()
    kappa: ArrayLike = _setting(positive=True, inf=True)
    tau: ArrayLike = _setting(0.0)
    eps: ArrayLike | str | None = _setting(SUPPORT, inf=True)
    alpha: ArrayLike = _setting(1.0)
    xi: ArrayLike = _setting(1.0)
    hop_cost: ArrayLike = _setting(0.0)
    mismatch_cost: ArrayLike = _setting(math.inf, inf=True)
    eps_s: ArrayLike | None = _setting(None, inf=True, unset="kappa")
    contradiction_penalty: ArrayLike | None = _setting(None, positive=True, inf=True, unset="kappa")
    margin_threshold: ArrayLike = _setting(0.0, inf=True)
    theta: ArrayLike | None = _setting(None, at_most=1.0)
    omega: ArrayLike | None = _setting(None, inf=True)
    min_reliability: float = _static(0.0, check_min_reliability)
    n_paths: int = _static(3, lambda v: check_int(v, "n_paths", 0))
    path_candidates: int | None = _static(
        16, lambda v: None if v is None else check_int(v, "path_candidates", 0)
    )

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
        """Every concrete value in its declared range (traced ones pass through); the static
        settings normalized. Marks the config checked."""
        for name, spec in _LEAVES.items():
            x = getattr(self, name)
            if name == "eps" and isinstance(x, str):
                if x != SUPPORT:
                    raise ValueError(f"eps must be a number, {SUPPORT!r} or None, got {x!r:.100}")
                continue
            if x is None and spec["optional"]:
                continue
            _check_scalar(name, x, allow_inf=spec["inf"], strict=spec["positive"])
            bound = spec["at_most"]
            if bound is not None and is_concrete(x) and not float(np.asarray(x)) <= bound:
                raise ValueError(
                    f"{name} must lie in [0, {bound:g}] (a posterior-mass threshold, Eq. (22)), "
                    f"got {float(np.asarray(x))}"
                )
        for name, check in _STATIC.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        object.__setattr__(self, "_checked", True)

    @property
    def tropical(self) -> bool | None:
        """The path rule ``tau`` selects: ``True`` for the best walk (Eq. (11): a concrete
        ``tau`` below :func:`~grounding._numerics.temperature_floor` of the float width the
        solver computes in, ``0`` included), ``False`` for the entropic energy (Eq. (13)),
        ``None`` when ``tau`` is traced (the rule is then chosen at run time). Read from
        ``tau`` (once per float width), never inherited from the config this one was rebuilt
        from."""
        key = float_dtype()
        cached = self.__dict__.get("_tropical")
        if cached is None or cached[0] != key:
            cached = (key, _path_rule(self.tau, key))
            object.__setattr__(self, "_tropical", cached)
        return cached[1]

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of every setting."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)

    def replace(self, **changes: Any) -> GroundingConfig:
        """A copy with ``changes`` (checked like a new config; unknown names: TypeError); its
        path rule follows its own ``tau`` (:attr:`tropical`)."""
        unknown = set(changes) - set(self.fields())
        if unknown:
            raise TypeError(f"GroundingConfig has no setting {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def flags(self) -> tuple[bool, bool, bool, bool, bool]:
        """The static flags of the compiled program: ``(best walk compiled, eps set, theta set,
        omega set, tau traced)``. The first is :attr:`tropical` for a concrete ``tau``; for a
        traced ``tau`` it is True and the last flag says that the entropic rule is compiled
        beside it, the one that applies chosen at run time."""
        traced = not is_concrete(self.tau)
        return (
            traced or bool(self.tropical),
            self.eps is not None,
            self.theta is not None,
            self.omega is not None,
            traced,
        )

    def arrays(self) -> dict[str, jax.Array]:
        """The scalars the compiled program reads, under the config's own field names
        (defaults filled in: ``eps_s`` and the contradiction penalty default to ``kappa``, a
        ``"support"`` ``eps`` to ``eps_s``). Built once per config and float width (a batch
        reads them for every question), unless a value is traced; each in the float width
        the solver computes in (a float32 setting under 64-bit mode is widened)."""
        key = float_dtype()
        cached = self.__dict__.get("_arrays")
        if cached is not None and cached[0] == key:
            return cached[1]
        leaves = _leaves(self)
        out = self._arrays_of_config({k: jnp.asarray(v, key) for k, v in leaves.items()})
        if is_concrete(*leaves.values()):
            object.__setattr__(self, "_arrays", (key, out))
        return out

    @staticmethod
    def _arrays_of(a: dict) -> dict[str, jax.Array]:
        """The settings ``a`` (the leaves that are set) with the unset ones that default to
        another filled in (``eps_s`` and the contradiction penalty: ``kappa``)."""
        out = dict(a)
        for name, spec in _LEAVES.items():
            if name not in out and spec["unset"] is not None:
                out[name] = a[spec["unset"]]
        return out

    def _arrays_of_config(self, a: dict) -> dict[str, jax.Array]:
        out = self._arrays_of(a)
        if isinstance(self.eps, str):  # SUPPORT: the hard tolerance follows eps_s
            out["eps"] = out["eps_s"]
        return out


def make_config(config: GroundingConfig | None, params: dict, caller: str) -> GroundingConfig:
    """``config`` updated by keyword ``params``, or a new config from ``params`` alone (a
    TypeError names ``caller`` for unknown or missing settings). A config rebuilt from leaves
    (``tree_map``, an optimizer step, JAX's transformations) is checked here, where it meets
    the solver: its concrete values as a new config's (a ValueError names the field)."""
    unknown = set(params) - set(GroundingConfig.fields())
    if unknown:
        raise TypeError(f"{caller}: unknown settings {sorted(unknown)}")
    if config is not None:
        if not isinstance(config, GroundingConfig):
            raise TypeError(
                f"{caller}: config must be a GroundingConfig, got {type(config).__name__}"
            )
        if params:
            return config.replace(**params)  # checked like a new config
        if not config.__dict__.get("_checked"):
            config._check()
        return config
    missing = [k for k in ("lam", "kappa") if k not in params]
    if missing:
        raise TypeError(f"{caller}: missing setting {missing[0]!r} (or pass a GroundingConfig)")
    return GroundingConfig(**params)


def checked_settings(a: Mapping[str, jax.Array]) -> tuple[dict[str, jax.Array], jax.Array]:
    """The point-of-use check of possibly traced settings (the compiled program's ``q``, or
    :meth:`GroundingConfig.arrays`): ``(settings, ok)`` where a value out of its range (NaN,
    below 0, ``+inf`` where not allowed, ``kappa`` or the contradiction penalty ``<= 0``,
    ``theta > 1``) is replaced by ``0`` and ``ok`` (a bool scalar) is False if any was.
    ``jit``/``vmap``/``grad``-able: the replaced values get a zero gradient, never NaN. Keys
    that are not settings pass through."""
    out, ok = dict(a), jnp.asarray(True)
    for name, spec in _LEAVES.items():
        if name not in a:
            continue
        x = jnp.asarray(a[name])
        good = x > 0 if spec["positive"] else x >= 0  # False at NaN
        if not spec["inf"]:
            good &= jnp.isfinite(x)
        if spec["at_most"] is not None:
            good &= x <= spec["at_most"]
        out[name] = jnp.where(good, x, jnp.zeros_like(x))
        ok &= good
    return out, ok


def _path_rule(tau: object, dtype: Any) -> bool | None:
    """Whether a concrete ``tau`` (read in the solver's float width ``dtype``) selects the best
    walk, Eq. (11): below :func:`~grounding._numerics.temperature_floor`; ``None`` for a
    traced ``tau`` or a leaf that is not a number (JAX's placeholders)."""
    if not is_concrete(tau) or isinstance(tau, (bool, str, bytes)) or tau is None:
        return None
    try:
        v = np.asarray(tau)
        if v.ndim or v.dtype.kind in "bOSU":
            return None
        with np.errstate(over="ignore"):
            x = float(v.astype(dtype))
    except (TypeError, ValueError):
        return None
    return not x >= temperature_floor(dtype)


#: The settings by kind, read off the fields' declarations: the numeric leaves of the pytree
#: (with their ranges) and the static settings (with their checks), in field order.
_LEAVES = {f.name: f.metadata for f in dataclasses.fields(GroundingConfig) if f.metadata["leaf"]}
_STATIC = {
    f.name: f.metadata["check"]
    for f in dataclasses.fields(GroundingConfig)
    if not f.metadata["leaf"]
}
_DATA, _META = tuple(_LEAVES), tuple(_STATIC)


def _flatten(config: GroundingConfig):
    data = tuple(None if isinstance(v, str) else v for v in map(config.__getattribute__, _DATA))
    eps_support = isinstance(config.eps, str)  # SUPPORT is static: no leaf of its own
    return data, (*(getattr(config, k) for k in _META), eps_support)


def _flatten_with_keys(config: GroundingConfig):
    data, meta = _flatten(config)
    return tuple(zip(map(jax.tree_util.GetAttrKey, _DATA), data)), meta


def _unflatten(meta: tuple, data: tuple) -> GroundingConfig:
    """Rebuilt without the checks (:func:`make_config` checks it where it meets the solver):
    JAX rebuilds configs around tracers, cotangents (which may be negative or zero) and
    placeholders (``None``, ``object()``, axis numbers). The static data hold no path rule:
    :attr:`GroundingConfig.tropical` is read from the rebuilt ``tau`` when asked, so a config
    stepped from ``tau = 0`` to ``tau > 0`` (or back) follows its new ``tau``, and configs of
    every ``tau`` share one tree structure (an optimizer's state built at one ``tau`` fits
    the parameters at another)."""
    config = object.__new__(GroundingConfig)
    for k, v in (*zip(_DATA, data), *zip(_META, meta)):
        object.__setattr__(config, k, v)
    if meta[-1]:
        object.__setattr__(config, "eps", SUPPORT)
    return config


jax.tree_util.register_pytree_with_keys(
    GroundingConfig, _flatten_with_keys, _unflatten, flatten_func=_flatten
)


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
