"""Hypothesis strategies for grounding objects, importable by users' own test suites.

Strategies draw a seed integer and build arrays with NumPy's generator (never a JAX PRNG
key), so shrinking works on the seed and sizes, and failures replay exactly.

Example:
    >>> from hypothesis import given
    >>> from grounding.testing.strategies import prior_energy
    >>> @given(prior_energy())
    ... def test_posterior_normalizes(pe):
    ...     ...
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from hypothesis import strategies as st

from grounding.graph import TypedGraph
from grounding.problem import ClaimChain, GroundingProblem
from grounding.testing import _alignment_strategies, _regularize_strategies

__all__ = [
    "seeds",
    "lambdas",
    "log_simplex",
    "energies",
    "prior_energy",
    "perturbed_energies",
    "path_families",
    "typed_graphs",
    "weighted_digraphs",
    "binary_partitions",
    "grounding_problems",
]

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def lambdas(
    min_value: float = 1e-6, max_value: float = 1e6, zero: bool = True
) -> st.SearchStrategy[float]:
    """Grounding strengths, log-uniform over ``[min_value, max_value]`` (and optionally 0)."""
    lo, hi = np.log10(min_value), np.log10(max_value)
    s = st.floats(lo, hi).map(lambda e: float(10.0**e))
    return st.one_of(st.just(0.0), s) if zero else s


def _dirichlet(rng: np.random.Generator, n: int, zeros: bool) -> np.ndarray:
    conc = rng.choice([0.1, 1.0, 10.0])
    p = rng.dirichlet(np.full(n, conc))
    p = np.maximum(p, 1e-300)
    if zeros and n > 1:
        kill = rng.random(n) < 0.3
        kill[rng.integers(n)] = False  # keep at least one candidate
        p = np.where(kill, 0.0, p)
    p = p / p.sum()
    with np.errstate(divide="ignore"):
        return np.log(p)


@st.composite
def log_simplex(
    draw: st.DrawFn, n_min: int = 1, n_max: int = 8, zeros: bool = False, n: int | None = None
) -> np.ndarray:
    """A normalized log-probability vector (``-inf`` entries when ``zeros``)."""
    size = n if n is not None else draw(st.integers(n_min, n_max))
    rng = np.random.default_rng(draw(seeds))
    return _dirichlet(rng, size, zeros)


def _energies(rng: np.random.Generator, n: int, inf_frac: float, scale: float) -> np.ndarray:
    e = rng.exponential(scale, n) * rng.choice([0.0, 1.0], n, p=[0.1, 0.9])
    if inf_frac:
        e = np.where(rng.random(n) < inf_frac, np.inf, e)
    return e


@st.composite
def energies(
    draw: st.DrawFn,
    n: int | None = None,
    n_min: int = 1,
    n_max: int = 8,
    allow_inf: bool = False,
    scale: float = 2.0,
) -> np.ndarray:
    """Energies in ``[0, inf)`` (with ties at 0) and optionally ``+inf`` entries."""
    size = n if n is not None else draw(st.integers(n_min, n_max))
    rng = np.random.default_rng(draw(seeds))
    return _energies(rng, size, 0.3 if allow_inf else 0.0, scale)


@st.composite
def prior_energy(
    draw: st.DrawFn, n_min: int = 1, n_max: int = 8, zeros: bool = False, allow_inf: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A ``(log_prior, energy)`` pair on one candidate set."""
    n = draw(st.integers(n_min, n_max))
    return draw(log_simplex(n=n, zeros=zeros)), draw(energies(n=n, allow_inf=allow_inf))


@st.composite
def perturbed_energies(
    draw: st.DrawFn, n_min: int = 2, n_max: int = 8
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log_prior, E_R, E_R')``: two finite evidence energies on one candidate set (Thm. 3)."""
    n = draw(st.integers(n_min, n_max))
    rng = np.random.default_rng(draw(seeds))
    e = _energies(rng, n, 0.0, 2.0)
    delta = rng.uniform(-1, 1, n) * rng.choice([0.01, 0.3, 3.0])
    return draw(log_simplex(n=n)), e, np.maximum(e + delta, 0.0)


@st.composite
def path_families(
    draw: st.DrawFn, p_min: int = 1, p_max: int = 8, allow_inf: bool = True, zeros: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(path_energy, log_path_prior)`` for Eq. (13): at least one finite positive-prior path."""
    p = draw(st.integers(p_min, p_max))
    rng = np.random.default_rng(draw(seeds))
    lw = _dirichlet(rng, p, zeros)
    e = _energies(rng, p, 0.3 if allow_inf else 0.0, 2.0)
    e[int(np.argmax(lw))] = rng.exponential(2.0)  # one admissible path with positive prior
    return e, lw


@st.composite
def typed_graphs(
    draw: st.DrawFn, n_min: int = 2, n_max: int = 6, e_max: int = 12, r_max: int = 3
) -> TypedGraph:
    """Small typed directed multigraphs with cycles, self-loops and parallel edges."""
    n = draw(st.integers(n_min, n_max))
    r = draw(st.integers(1, r_max))
    m = draw(st.integers(1, e_max))
    rng = np.random.default_rng(draw(seeds))
    triples = [
        (f"v{rng.integers(n)}", f"r{rng.integers(r)}", f"v{rng.integers(n)}") for _ in range(m)
    ]
    w = np.where(rng.random(m) < 0.5, 1.0, rng.uniform(0.05, 1.0, m))
    return TypedGraph.from_triples(
        triples,
        w,
        entities=[f"v{i}" for i in range(n)],
        relations=[f"r{i}" for i in range(r)],
    )


class WeightedDigraph(NamedTuple):
    """Edge arrays of a directed multigraph with per-edge costs and step log-priors."""

    head: np.ndarray
    tail: np.ndarray
    cost: np.ndarray
    log_prior: np.ndarray
    n_nodes: int


@st.composite
def weighted_digraphs(
    draw: st.DrawFn, n_max: int = 6, e_max: int = 14, inf_frac: float = 0.1, positive: bool = False
) -> WeightedDigraph:
    """Small directed multigraphs (cycles, self-loops, parallel edges, possibly no edges) with
    costs in ``[0, 3]`` (``(0, 3]`` when ``positive``) of which about ``inf_frac`` are ``+inf``,
    and step log-priors in ``[-2, 0]`` with about ``inf_frac`` ``-inf`` (edges without prior
    mass). Costs are rounded to 0.25 so ties between walks occur."""
    n = draw(st.integers(1, n_max))
    m = draw(st.integers(0, e_max))
    rng = np.random.default_rng(draw(seeds))
    cost = np.round(rng.uniform(0.0, 3.0, m) * 4) / 4
    if positive:
        cost = np.maximum(cost, 0.25)
    cost[rng.random(m) < inf_frac] = np.inf
    prior = rng.uniform(-2.0, 0.0, m)
    prior[rng.random(m) < inf_frac] = -np.inf
    head, tail = rng.integers(0, n, m), rng.integers(0, n, m)
    return WeightedDigraph(head.astype(np.int32), tail.astype(np.int32), cost, prior, n)


@st.composite
def binary_partitions(draw: st.DrawFn, n: int) -> np.ndarray:
    """A boolean mask over ``n`` candidates with at least one True and one False (n >= 2)."""
    rng = np.random.default_rng(draw(seeds))
    mask = rng.random(n) < 0.5
    mask[0], mask[-1] = True, False
    return rng.permutation(mask)


@st.composite
def grounding_problems(
    draw: st.DrawFn,
    kind: str | None = None,
    c_max: int = 6,
    t_max: int = 2,
    zeros: bool = True,
    c_min: int = 1,
) -> tuple[TypedGraph, GroundingProblem]:
    """``(evidence graph, problem)`` pairs for :func:`grounding.ground`: a small
    :func:`typed_graphs` graph and either answer candidates (entity names, anchored at one or
    two nodes, walks of ``min_hops..max_hops`` edges) or claim chains of one length ``T``
    (entities named or wildcards ``None``, relations of the schema or unspecified), with a
    normalized log-prior (zeros allowed when ``zeros``); ``c_min..c_max`` candidates (answer
    candidates are also capped by the number of entities)."""
    g = draw(typed_graphs())
    rng = np.random.default_rng(draw(seeds))
    kind = kind or draw(st.sampled_from(["answer", "chain"]))
    c = draw(st.integers(c_min, c_max))
    lp = _dirichlet(rng, c, zeros)
    names = list(g.entities)
    if kind == "answer":
        anchors = tuple(
            rng.choice(names, size=min(len(names), draw(st.integers(1, 2))), replace=False)
        )
        cands = tuple(str(x) for x in rng.choice(names, size=min(c, len(names)), replace=False))
        lp = _dirichlet(rng, len(cands), zeros)
        problem = GroundingProblem(
            "q", cands, lp, anchors=tuple(str(a) for a in anchors),
            max_hops=draw(st.integers(1, 3)), min_hops=draw(st.sampled_from([0, 1])),
        )  # fmt: skip
        return g, problem
    t = draw(st.integers(1, t_max))
    chains = []
    for i in range(c):
        ents = tuple(None if rng.random() < 0.25 else str(rng.choice(names)) for _ in range(t + 1))
        rels = tuple(
            None if rng.random() < 0.25 else str(rng.choice(g.relations)) for _ in range(t)
        )
        chains.append(ClaimChain(ents, rels, name=f"c{i}"))
    return g, GroundingProblem("q", tuple(chains), lp)


# Strategies for the alignment costs (Eqs. (2)-(3)) and the typed regularizer (Eqs. (23)-(25))
# live beside their tests; they are re-exported here so users have one module to import.
def _reexport() -> list[str]:
    added = []
    for mod in (_alignment_strategies, _regularize_strategies):
        for name in mod.__all__:
            if name not in globals():
                globals()[name] = getattr(mod, name)
                added.append(name)
    return added


__all__ = [*__all__, *_reexport()]
