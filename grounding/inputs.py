r"""Host-side inputs of :func:`grounding.ground`: validated options, and the padded arrays
of a (problem, evidence state) pair that the jitted core consumes.

Candidates are padded to a power of two (zero prior, no admissible walk) and edges of small
graphs too (``+inf`` cost: they do not exist), so questions of similar size share one
compiled program; large graphs keep their exact edges and their ELL layout.
"""

from __future__ import annotations

import weakref

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_nonnegative_scalar, is_concrete
from grounding.evidence import EvidenceState, check_min_reliability
from grounding.graph import TypedGraph
from grounding.problem import GroundingProblem, check_realisation
from grounding.semiring.layout import ELL_MIN_EDGES

__all__ = [
    "options",
    "with_defaults",
    "prepare",
    "pad_edges",
    "check_n_paths",
    "check_path_candidates",
    "bucket",
]


def bucket(n: int, floor: int = 8) -> int:
    """The padded size of ``n``: the next power of two, at least ``floor``."""
    return max(floor, 1 << max(n - 1, 0).bit_length())


def _scalar(x: ArrayLike, name: str, **kw) -> jax.Array:
    a = check_nonnegative_scalar(x, name, **kw)
    if a.ndim:
        raise ValueError(f"{name} must be a scalar for one question, got shape {a.shape}")
    return a


def _probability(x: ArrayLike, name: str, why: str) -> jax.Array:
    """A scalar in ``[0, 1]`` (checked when concrete; a traced value passes through)."""
    a = _scalar(x, name)
    if is_concrete(a) and not float(np.asarray(a)) <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1] ({why}), got {float(np.asarray(a))}")
    return a


# ----------------------------------------------------------------------------- preparation
def options(
    lam, kappa, tau, eps, alpha, xi, hop_cost, mismatch_cost, eps_s, contradiction_penalty,
    margin_threshold, theta, omega,
) -> tuple[dict, tuple]:  # fmt: skip
    """Validated scalars (arrays for the core) and the static flags they imply."""
    kappa_ = _scalar(kappa, "kappa", allow_inf=True, strict=True)
    tau_ = _scalar(tau, "tau")
    opts = dict(
        lam=_scalar(lam, "lam"),
        kappa=kappa_,
        tau=tau_,
        alpha=_scalar(alpha, "alpha"),
        xi=_scalar(xi, "xi"),
        hop_cost=_scalar(hop_cost, "hop_cost"),
        mismatch=_scalar(mismatch_cost, "mismatch_cost", allow_inf=True),
        eps_s=kappa_ if eps_s is None else _scalar(eps_s, "eps_s", allow_inf=True),
        kc=kappa_
        if contradiction_penalty is None
        else _scalar(contradiction_penalty, "contradiction_penalty", allow_inf=True, strict=True),
        margin=_scalar(margin_threshold, "margin_threshold", allow_inf=True),
    )
    if eps is not None:
        opts["eps"] = _scalar(eps, "eps", allow_inf=True)
    if theta is not None:
        opts["theta"] = _probability(theta, "theta", "a posterior-mass threshold, Eq. (22)")
    if omega is not None:
        opts["omega"] = _scalar(omega, "omega", allow_inf=True)
    flags = (float(tau_) == 0.0, eps is not None, theta is not None, omega is not None)
    return opts, flags


def _evidence(evidence) -> EvidenceState:
    if isinstance(evidence, TypedGraph):
        evidence = EvidenceState(evidence)
    if not isinstance(evidence, EvidenceState):
        raise TypeError(f"evidence must be an EvidenceState, got {type(evidence).__name__}")
    if evidence.graph.n_nodes == 0:
        raise ValueError("evidence is empty: its graph has no entities to ground candidates in")
    return evidence


def _candidate_arrays(problem: GroundingProblem, state: EvidenceState, c_pad: int, min_rel):
    """Per-candidate index arrays (padded to ``c_pad``) and the static structure."""
    g = state.graph
    every_node = problem.kind == "answer" and problem.candidates == g.entities
    names = problem.anchors if every_node else problem.entities()
    for name in names:
        if not g.has_entity(name):
            raise ValueError(
                f"problem: entity {name!r} is not in the evidence graph ({g.n_nodes} entities; "
                "ground against a state over the full vocabulary)"
            )
    C = problem.n_candidates
    counter = np.zeros(c_pad, bool)
    schema = np.ones(c_pad, bool)
    schema[C:] = False  # padding: no admissible walk
    if problem.kind == "answer":
        answers = np.zeros(c_pad, np.int32)
        answers[:C] = (
            np.arange(C) if every_node else [g.entity_index(a) for a in problem.candidates]
        )
        anchors = np.asarray(list(dict.fromkeys(g.entity_index(a) for a in problem.anchors)))
        arrays = dict(answers=answers, anchors=anchors.astype(np.int32))
        structure = ("answer", problem.max_hops, problem.min_hops)
    else:
        t_max = max(c.n_hops for c in problem.candidates)
        mentions = np.full((c_pad, t_max + 1), -1, np.int32)
        claimed = np.full((c_pad, t_max), -1, np.int32)
        groups: dict[int, list[int]] = {}
        for i, c in enumerate(problem.candidates):
            groups.setdefault(c.n_hops, []).append(i)
            mentions[i, : c.n_hops + 1] = [
                -1 if e is None else g.entity_index(e) for e in c.entities
            ]
            schema[i] = all(r is None or r in g.relations for r in c.relations)
            claimed[i, : c.n_hops] = [
                g.relation_index(r) if r is not None and schema[i] else -1 for r in c.relations
            ]
            counter[i] = any(state.counter_support(h, min_rel) for h in c.named_hops())
        groups[problem.candidates[0].n_hops] += list(range(C, c_pad))
        arrays = dict(mentions=mentions, claimed=claimed)
        structure = ("chain", tuple((t, tuple(ix)) for t, ix in sorted(groups.items())))
    return dict(arrays, counter=counter, schema=schema), structure


_EDGE_CACHE: dict[int, tuple[weakref.ref, np.dtype, dict, object]] = {}


def _edge_arrays(graph: TypedGraph) -> tuple[dict, object]:
    """Edge arrays padded to a power of two (small graphs: segment layout) or exact with the
    graph's ELL layout (large graphs). Memoised for the last few graphs (a retriever grounds
    many questions against one graph): a graph's edge arrays cannot change in place (JAX
    arrays are immutable and :class:`~grounding.TypedGraph` keeps read-only copies of NumPy
    ones), and an entry is for one float dtype (64-bit mode can be switched on later)."""
    dtype = np.dtype(jnp.result_type(float))
    hit = _EDGE_CACHE.get(id(graph))
    if hit is not None and hit[0]() is graph and hit[1] == dtype:
        return hit[2], hit[3]
    arrays, layout = _build_edge_arrays(graph, dtype)
    _EDGE_CACHE.pop(id(graph), None)
    if len(_EDGE_CACHE) >= 8:
        _EDGE_CACHE.pop(next(iter(_EDGE_CACHE)))
    _EDGE_CACHE[id(graph)] = (weakref.ref(graph), dtype, arrays, layout)
    return arrays, layout


def _build_edge_arrays(graph: TypedGraph, dtype: np.dtype) -> tuple[dict, object]:
    """The padded edge arrays; reliabilities in ``dtype``, the float dtype in use, so that the
    energies are computed in the dtype the result reports (a graph built before 64-bit mode
    was switched on stores float32 reliabilities: they are widened, not recomputed)."""
    E = graph.n_edges
    e_pad = E if E >= ELL_MIN_EDGES else bucket(E)
    pad = e_pad - E
    arrays = dict(
        head=np.pad(np.asarray(graph.head, np.int32), (0, pad)),
        tail=np.pad(np.asarray(graph.tail, np.int32), (0, pad)),
        relation=np.pad(np.asarray(graph.relation, np.int32), (0, pad)),
        reliability=np.pad(np.asarray(graph.reliability, dtype), (0, pad), constant_values=1.0),
        edge_mask=np.arange(e_pad) < E,
    )
    layout = (
        graph.edge_index() if E >= ELL_MIN_EDGES else None
    )  # None: built from the (possibly traced) padded arrays inside the core
    return arrays, layout


def pad_edges(arrays: dict, n_edges: int) -> dict:
    """Segment-layout edge arrays padded with masked-out edges to ``n_edges``."""
    pad = n_edges - len(arrays["head"])
    if pad == 0:
        return arrays
    fill = dict(reliability=1.0, edge_mask=False)
    return {k: np.pad(v, (0, pad), constant_values=fill.get(k, 0)) for k, v in arrays.items()}


def prepare(problem, evidence, realisation, opts, flags, min_reliability, c_pad=None):
    """Validate a (problem, evidence) pair and lay it out for the core: ``(state, question
    arrays, evidence arrays, statics)``; candidates padded to ``c_pad`` (default: a bucket)."""
    if not isinstance(problem, GroundingProblem):
        raise TypeError(f"problem must be a GroundingProblem, got {type(problem).__name__}")
    state = _evidence(evidence)
    min_reliability = check_min_reliability(min_reliability)
    check_realisation(realisation, state.graph.n_nodes)
    if problem.kind == "answer" and problem.max_hops is None and not flags[0]:
        raise ValueError("answer candidates with max_hops=None (any length) need tau == 0")
    C = problem.n_candidates
    c_pad = bucket(C) if c_pad is None else c_pad
    q, structure = _candidate_arrays(problem, state, c_pad, min_reliability)
    lp = np.full(c_pad, -np.inf)
    lp[:C] = np.asarray(problem.log_prior)
    claim = np.zeros(c_pad)
    if problem.claim_energy is not None:
        claim[:C] = np.asarray(problem.claim_energy)
    q.update(opts, log_prior=lp, claim=claim)
    ev, layout = _edge_arrays(state.graph)
    if layout is not None:
        ev = dict(ev, layout=layout)
    metric = "euclidean" if realisation is None else realisation.metric
    # small graphs are padded with isolated nodes (no walk reaches them; every node cost there
    # is +inf) so that questions with evidence graphs of similar size share one program
    n = state.graph.n_nodes
    statics = (structure, flags, metric, n if layout is not None else bucket(n), layout is not None)
    return state, q, ev, statics


def check_n_paths(n_paths: int) -> int:
    """How many supporting walks to report per candidate: an int ``>= 0``."""
    if isinstance(n_paths, bool) or not isinstance(n_paths, (int, np.integer)) or n_paths < 0:
        raise ValueError(f"n_paths must be a non-negative int, got {n_paths!r}")
    return int(n_paths)


def check_path_candidates(path_candidates: int | None) -> int | None:
    """How many candidates get walks in the report: an int ``>= 0``, or ``None`` (all)."""
    if path_candidates is None:
        return None
    if (
        isinstance(path_candidates, bool)
        or not isinstance(path_candidates, (int, np.integer))
        or path_candidates < 0
    ):
        raise ValueError(
            f"path_candidates must be a non-negative int or None, got {path_candidates!r}"
        )
    return int(path_candidates)


def with_defaults(params: dict, defaults: dict) -> dict:
    """``params`` completed by ``defaults`` (the keyword defaults of :func:`grounding.ground`);
    ``lam`` and ``kappa`` are required, unknown names are an error."""
    unknown = set(params) - set(defaults) - {"lam", "kappa"}
    if unknown:
        raise TypeError(f"ground_batch: unknown arguments {sorted(unknown)}")
    for required in ("lam", "kappa"):
        if required not in params:
            raise TypeError(f"ground_batch: missing keyword argument {required!r}")
    return {**defaults, **params}
