r"""The classical Laplacian energy and its spectral form (Eq. (23), App. G, Prop. 16).

Node representations are a matrix ``H`` of shape ``[n, d]``. :math:`\mathrm{Tr}(H^\top L H)`
(Eq. (23)) rewards adjacent rows for being *equal*; App. G reads it in the Laplacian's
eigenbasis (Prop. 16). Validation: shapes and dtypes always; values (NaN, sign, index range,
symmetry) only on concrete arrays, read on the host with NumPy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import (
    check_arcs,
    check_features,
    check_int,
    check_square_matrix,
    host_value,
)

# Kernels are jitted by assignment (``f = jax.jit(f, ...)``) rather than by decorator, so that
# mutation testing (scripts/mutation.sh; mutmut skips decorated functions) reaches their bodies.

__all__ = [
    "adjacency",
    "laplacian",
    "laplacian_energy",
    "pairwise_smoothness",
    "laplacian_spectrum",
    "spectral_energy",
]


# ----------------------------------------------------------------------------- Eq. (23), Prop. 16
def adjacency(
    head: ArrayLike, tail: ArrayLike, weight: ArrayLike, n_nodes: int, symmetrize: bool = False
) -> jax.Array:
    r"""Dense weighted adjacency :math:`A_{uv} = \sum_{e = (u, v)} w_e` (parallel arcs add up).

    Args:
        head, tail: ``[m]`` integer endpoints in ``[0, n_nodes)``.
        weight: ``[m]`` non-negative weights.
        n_nodes: number of nodes ``n`` (a static Python int).
        symmetrize: return :math:`A + A^\top` (for an undirected edge list stored once).

    Returns:
        ``[n, n]`` matrix ``A``.

    Example:
        >>> adjacency([0, 0], [1, 1], [1.0, 2.0], 2).tolist()
        [[0.0, 3.0], [0.0, 0.0]]
    """
    n_nodes = check_int(n_nodes, "n_nodes")
    head, tail, weight = check_arcs(n_nodes, head, tail, weight)
    return _adjacency(head, tail, weight, n_nodes, bool(symmetrize))


def _adjacency(head, tail, weight, n, symmetrize):
    E_head = jax.nn.one_hot(head, n, dtype=weight.dtype)  # one-hot matmul instead of a scatter
    A = E_head.T @ (weight[:, None] * jax.nn.one_hot(tail, n, dtype=weight.dtype))
    return A + A.T if symmetrize else A


_adjacency = jax.jit(_adjacency, static_argnums=(3, 4))


def laplacian(adjacency: ArrayLike) -> jax.Array:
    r"""Combinatorial Laplacian :math:`L = D - A`, :math:`D = \mathrm{diag}(A\mathbf 1)` (Eq. (23)).

    Args:
        adjacency: ``[n, n]`` non-negative weights (symmetric for Eq. (23) to hold).

    Returns:
        ``[n, n]`` Laplacian (out-degree Laplacian for a non-symmetric ``A``).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (23).

    Example:
        >>> laplacian([[0.0, 2.0], [2.0, 0.0]]).tolist()
        [[2.0, -2.0], [-2.0, 2.0]]
    """
    A = check_square_matrix(adjacency, "adjacency")
    if (h := host_value(A)) is not None and np.any(h < 0):
        raise ValueError("adjacency must be non-negative")
    return _laplacian(A)


def _laplacian(A):
    return jnp.diag(jnp.sum(A, axis=1)) - A  # Eq. (23): L = D - A


_laplacian = jax.jit(_laplacian)


def laplacian_energy(H: ArrayLike, L: ArrayLike) -> jax.Array:
    r"""Laplacian energy :math:`\mathrm{Tr}(H^\top L H)` (left side of Eq. (23)).

    Args:
        H: ``[n, d]`` node representations.
        L: ``[n, n]`` Laplacian.

    Returns:
        Scalar; equals :func:`pairwise_smoothness` for ``L = laplacian(A)``, ``A``
        symmetric. Gradient in ``H``: :math:`(L + L^\top) H`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (23), Prop. 10.

    Example:
        >>> float(laplacian_energy([[0.0], [1.0]], [[1.0, -1.0], [-1.0, 1.0]]))
        1.0
    """
    H = check_features(H)
    return _laplacian_energy(H, check_square_matrix(L, "L", H.shape[0]))


def _laplacian_energy(H, L):
    return jnp.sum(H * (L @ H))  # Eq. (23): Tr(H^T L H)


_laplacian_energy = jax.jit(_laplacian_energy)


def pairwise_smoothness(H: ArrayLike, A: ArrayLike) -> jax.Array:
    r"""Pairwise form :math:`\tfrac12 \sum_{u,v} A_{uv} \|h_v - h_u\|_2^2` (right side of Eq. (23)).

    Args:
        H: ``[n, d]`` node representations.
        A: ``[n, n]`` adjacency (every ordered pair ``(u, v)`` is summed).

    Returns:
        Scalar energy.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (23).

    Example:
        >>> float(pairwise_smoothness([[0.0], [1.0]], [[0.0, 1.0], [1.0, 0.0]]))
        1.0
    """
    H = check_features(H)
    return _pairwise(H, check_square_matrix(A, "A", H.shape[0]))


def _pairwise(H, A):
    sq = jnp.sum((H[None, :, :] - H[:, None, :]) ** 2, axis=-1)
    return 0.5 * jnp.sum(A * sq)  # Eq. (23), right side


_pairwise = jax.jit(_pairwise)


_eigh = jax.jit(jnp.linalg.eigh)


def laplacian_spectrum(L: ArrayLike) -> tuple[jax.Array, jax.Array]:
    r"""Eigen-decomposition :math:`L = U \Lambda U^\top` (App. G, Prop. 16).

    Args:
        L: ``[n, n]`` symmetric Laplacian.

    Returns:
        ``(lam, U)``: ascending eigenvalues ``[n]`` (``lam[0] = 0`` for a graph Laplacian)
        and orthonormal eigenvectors in the columns of ``U`` ``[n, n]``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 16 (App. G).

    Example:
        >>> lam, U = laplacian_spectrum([[1.0, -1.0], [-1.0, 1.0]])
        >>> [round(float(x), 6) + 0.0 for x in lam]
        [0.0, 2.0]
    """
    return _eigh(check_square_matrix(L, "L", symmetric=True))


def spectral_energy(H: ArrayLike, L: ArrayLike) -> jax.Array:
    r"""Spectral form of the Laplacian energy (Prop. 16):
    :math:`\sum_\ell \lambda_\ell \|\hat h_\ell\|_2^2` with :math:`\hat H = U^\top H`.

    Args:
        H: ``[n, d]`` node representations.
        L: ``[n, n]`` symmetric Laplacian.

    Returns:
        Scalar; equals :func:`laplacian_energy` (Prop. 16).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 16 (App. G).

    Example:
        >>> round(float(spectral_energy([[0.0], [1.0]], [[1.0, -1.0], [-1.0, 1.0]])), 6)
        1.0
    """
    H = check_features(H)
    lam, U = _eigh(
        check_square_matrix(L, "L", H.shape[0], symmetric=True)
    )  # shared eigh compilation
    return _spectral(H, lam, U)


def _spectral(H, lam, U):
    return jnp.sum(lam * jnp.sum((U.T @ H) ** 2, axis=-1))  # Prop. 16


_spectral = jax.jit(_spectral)
