r"""Optimal transport between claim sets: Eq. (3) of the paper as a transport cost.

Sinkhorn (log domain, ``jit``/``vmap``/``grad``-able) pads with zero-mass points to a
bucket so that sets of different sizes share one compiled kernel; :func:`ot_exact` is a
numpy/scipy reference.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike
from scipy.optimize import linear_sum_assignment, linprog

from grounding._checks import check_int, is_concrete
from grounding._numerics import logsumexp, xlogy
from grounding._shapes import bucket
from grounding.alignment._common import check_array, check_marginal, check_param, pad_to

# Kernels are jitted by assignment (``f = jax.jit(f, ...)``) rather than by decorator, so that
# mutation testing (scripts/mutation.sh; mutmut skips decorated functions) reaches their bodies.

__all__ = [
    "SinkhornResult",
    "sinkhorn",
    "entropic_ot",
    "ot_exact",
]


# ------------------------------------------------------------------ optimal transport
class SinkhornResult(NamedTuple):
    """Output of :func:`sinkhorn` (a pytree)."""

    cost: jax.Array  #: transport cost <P, C>
    plan: jax.Array  #: [n, m] plan P
    objective: jax.Array  #: <P, C> - epsilon H(P)
    marginal_error: jax.Array  #: ||P 1 - a||_1 (column sums are exact)


def sinkhorn(
    cost: ArrayLike,
    a: ArrayLike | None = None,
    b: ArrayLike | None = None,
    epsilon: ArrayLike = 0.1,
    n_iter: int = 1000,
) -> SinkhornResult:
    r"""Entropic optimal transport by log-domain Sinkhorn: Eq. (3) of the paper over claim sets.

    .. math::  P_\epsilon = \arg\min_{P \in U(a, b)} \langle P, C\rangle - \epsilon H(P),
               \qquad H(P) = -\sum_{ij} P_{ij} \log P_{ij},

    with ``f = eps log a - eps LSE_j((g_j - C_ij)/eps)``, symmetrically ``g``, and
    ``P_ij = exp((f_i + g_j - C_ij)/eps)`` (iterated as ``f/eps``, ``g/eps``). At convergence
    :math:`0 \le \langle P_\epsilon, C\rangle - \mathrm{OT}(C) \le \epsilon\min(H(a), H(b))`;
    after ``n_iter`` (static) steps ``P`` is the entropic plan for marginals ``(P1, b)``,
    so both sides widen by ``max|C| * marginal_error``. Small ``epsilon`` converges slowly.

    Args:
        cost: ``[n, m]``; a, b: marginal weights (default uniform); epsilon: ``> 0``.

    Returns:
        :class:`SinkhornResult`.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).
        - Cuturi, "Sinkhorn Distances: Lightspeed Computation of Optimal Transport", 2013.

    Example:
        >>> r = sinkhorn([[0.0, 1.0], [1.0, 0.0]], epsilon=0.01)
        >>> round(float(r.cost), 6), r.plan.round(3).tolist()
        (0.0, [[0.5, 0.0], [0.0, 0.5]])
    """
    res = _sinkhorn(cost, a, b, epsilon, n_iter)
    n, m = np.shape(cost)
    if is_concrete(res.plan):  # slice on the host: an eager slice compiles once per shape
        return res._replace(plan=jnp.asarray(np.asarray(res.plan)[:n, :m]))
    return res._replace(plan=res.plan[:n, :m])


def _sinkhorn(cost, a, b, epsilon, n_iter) -> SinkhornResult:
    cost = check_array(cost, "cost", 2)
    eps = check_param(epsilon, "epsilon", strict=True).astype(cost.dtype)
    check_int(n_iter, "n_iter")
    (n, m), dt = cost.shape, cost.dtype
    a, b = check_marginal(a, n, "a", dt), check_marginal(b, m, "b", dt)
    pn, pm = bucket(n) - n, bucket(m) - m  # padded points carry zero mass
    # v starts at 0 (scaling 1) on the m columns and at -inf on the padding, so that the
    # padded columns never enter an update: the iterates are those of the unpadded problem.
    v0 = jnp.asarray(np.concatenate([np.zeros(m), np.full(pm, -np.inf)]).astype(dt))
    return _sinkhorn_kernel(
        pad_to(cost, [(0, pn), (0, pm)]),
        pad_to(a, [(0, pn)]),
        pad_to(b, [(0, pm)]),
        v0,
        eps,
        n_iter,
    )


def _sinkhorn_kernel(cost, a, b, v0, eps, n_iter: int) -> SinkhornResult:
    def safe_log(w):
        return jnp.where(w > 0, jnp.log(jnp.where(w > 0, w, 1.0)), -jnp.inf)

    log_a, log_b, k = safe_log(a), safe_log(b), -cost / eps  # scaled potentials u = f/eps

    def body(_, uv):
        u, v = uv
        u = log_a - logsumexp(v[None, :] + k, axis=1)
        v = log_b - logsumexp(u[:, None] + k, axis=0)
        return u, v

    u, v = jax.lax.fori_loop(0, n_iter, body, (jnp.zeros_like(a), v0))
    log_p = u[:, None] + v[None, :] + k
    plan = jnp.exp(log_p)
    transport = jnp.sum(plan * cost)  # Eq. (3): <P, C>
    objective = transport + eps * jnp.sum(xlogy(plan, log_p))
    return SinkhornResult(transport, plan, objective, jnp.sum(jnp.abs(plan.sum(1) - a)))


_sinkhorn_kernel = jax.jit(_sinkhorn_kernel, static_argnames="n_iter")


def entropic_ot(
    cost: ArrayLike,
    a: ArrayLike | None = None,
    b: ArrayLike | None = None,
    epsilon: ArrayLike = 0.1,
    n_iter: int = 1000,
) -> jax.Array:
    r"""Entropic OT cost :math:`\langle P_\epsilon, C\rangle` of :func:`sinkhorn`; Eq. (3).

    Tends to the exact OT cost (:func:`ot_exact`) as ``epsilon -> 0``; not a metric for
    ``epsilon > 0`` (``entropic_ot(C_xx) > 0`` in general). Eq. (3) of the paper.

    Args:
        cost: ``[n, m]``; a, b: marginals (default uniform); epsilon: ``> 0``; n_iter: static.

    Returns:
        Scalar transport cost, differentiable in ``cost``.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).
        - Cuturi, "Sinkhorn Distances: Lightspeed Computation of Optimal Transport", 2013.

    Example:
        >>> round(float(entropic_ot([[0.0, 1.0], [1.0, 0.0]], epsilon=0.01)), 6)
        0.0
    """
    return _sinkhorn(cost, a, b, epsilon, n_iter).cost  # Eq. (3)


def ot_exact(cost: ArrayLike, a: ArrayLike | None = None, b: ArrayLike | None = None) -> float:
    r"""Exact OT cost :math:`\min_{P \in U(a,b)} \langle P, C\rangle`, a numpy reference.

    Uniform equal-size sets: ``min_perm (1/n) sum_i C[i, perm(i)]`` by
    ``scipy.optimize.linear_sum_assignment`` (Birkhoff); otherwise the transport linear
    programme (HiGHS). ``W_1`` when ``C`` is a metric. Eq. (3) of the paper. Not ``jit``-able.

    Args:
        cost: ``[n, m]`` concrete costs; a, b: marginals (default uniform).

    Returns:
        Python float.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).

    Example:
        >>> ot_exact([[0.0, 1.0], [1.0, 0.0]])
        0.0
    """
    if not is_concrete(cost, a, b):
        raise TypeError("ot_exact is a numpy reference: cost, a, b must be concrete (not traced)")
    c = np.asarray(check_array(cost, "cost", 2), dtype=np.float64)
    n, m = c.shape
    if a is None and b is None and n == m:
        rows, cols = linear_sum_assignment(c)
        return float(c[rows, cols].mean())  # Eq. (3)
    wa = np.asarray(check_marginal(a, n, "a", c.dtype), np.float64)
    wb = np.asarray(check_marginal(b, m, "b", c.dtype), np.float64)
    wa, wb = wa / wa.sum(), wb / wb.sum()
    eq = np.vstack([np.kron(np.eye(n), np.ones(m)), np.kron(np.ones(n), np.eye(m))])
    res = linprog(c.ravel(), A_eq=eq, b_eq=np.concatenate([wa, wb]), bounds=(0, None))
    return float(res.fun)  # Eq. (3)
