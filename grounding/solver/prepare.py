r"""Stage 1 of the solver: a (problem, evidence state) pair laid out as the padded arrays the
compiled program consumes, with the static structure that selects the program.

Every dimension that reaches the compiled program is padded to a shape bucket
(:func:`grounding._shapes.bucket`), so that questions of similar size share one compiled
program and a workload meets finitely many programs: candidates (zero prior, no admissible
walk), anchors (masked), the claim chains' width, the edges (``+inf`` cost: they do not exist;
at least :data:`MIN_EDGES`) and the nodes (isolated padding nodes). Large graphs (from
:data:`~grounding.semiring.layout.ELL_MIN_EDGES` edges) are padded in finer buckets (an
eighth of a power of two) and carry a layout of the padded edges.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from grounding._checks import float_dtype
from grounding._shapes import bucket
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.graph._memo import GraphMemo
from grounding.problem import GroundingProblem, Realization, check_realization
from grounding.semiring.layout import ELL_MIN_EDGES, EdgeIndex
from grounding.solver.config import GroundingConfig

__all__ = [
    "checked_state",
    "AnswerFamily",
    "ChainGroups",
    "ChainPlan",
    "Prepared",
    "Statics",
    "chain_indices",
    "merge_structures",
    "prepare",
    "relayout",
]


class ChainGroups(NamedTuple):
    """The static layout of a question's claim chains, shapes only (what selects the compiled
    program; which candidate sits in which slot is an input, see :class:`ChainPlan`):
    ``groups`` ``((T, M), ...)``: ``M`` slots of ``T``-hop chains grounded chain by chain
    (``q["alone{T}"]``, ``[M]`` candidate indices); ``shared`` ``((T, K, M), ...)``: ``K``
    prefixes of ``T``-hop chains with ``M`` slots each, every prefix grounded from one
    forward pass (``q["shared{T}"]``, ``[K, M]``). ``M`` and ``K`` are powers of two, so
    questions with differently arranged candidates share one program; an empty slot holds
    the index ``c_pad``, out of range: its output is dropped, never written over a candidate."""

    groups: tuple[tuple[int, int], ...]
    shared: tuple[tuple[int, int, int], ...] = ()


class ChainPlan(NamedTuple):
    """Which candidates are grounded how (host side): ``alone`` ``((T, indices), ...)`` are
    grounded chain by chain; ``shared`` ``((T, indices), ...)`` are sets of at least
    :data:`MIN_SHARED` chains that share every mention but the last and every claimed
    relation (as the candidates of one question do: one topic, one relation chain, many
    answers), grounded from one forward pass. Padding candidates are in neither (they keep
    raw energy ``+inf``)."""

    alone: tuple[tuple[int, tuple[int, ...]], ...]
    shared: tuple[tuple[int, tuple[int, ...]], ...] = ()

    def structure(self) -> ChainGroups:
        """The smallest :class:`ChainGroups` that holds this plan."""
        by_t: dict[int, list[int]] = {}
        for t, m in self.shared:
            by_t.setdefault(t, []).append(len(m))
        return ChainGroups(
            tuple((t, bucket(len(idx), floor=1)) for t, idx in self.alone),
            tuple((t, bucket(len(n), floor=1), bucket(max(n), floor=1))
                  for t, n in sorted(by_t.items())),
        )  # fmt: skip


def merge_structures(structures: Iterable[ChainGroups]) -> ChainGroups:
    """The smallest :class:`ChainGroups` that holds each of ``structures`` (per hop count,
    the most slots): one program for a batch of questions with different arrangements."""
    alone: dict[int, int] = {}
    shared: dict[int, tuple[int, int]] = {}
    for s in structures:
        for t, m in s.groups:
            alone[t] = max(alone.get(t, 0), m)
        for t, k, m in s.shared:
            k0, m0 = shared.get(t, (0, 0))
            shared[t] = (max(k0, k), max(m0, m))
    return ChainGroups(
        tuple(sorted(alone.items())), tuple((t, k, m) for t, (k, m) in sorted(shared.items()))
    )


def chain_indices(plan: ChainPlan, structure: ChainGroups, c_pad: int) -> dict:
    """The slot arrays of ``plan`` laid out in ``structure`` (which must hold it): the
    ``q["alone{T}"]`` and ``q["shared{T}"]`` inputs of the program, empty slots ``c_pad``."""
    out = {f"alone{t}": np.full(m, c_pad, np.int32) for t, m in structure.groups}
    out.update({f"shared{t}": np.full((k, m), c_pad, np.int32) for t, k, m in structure.shared})
    for t, idx in plan.alone:
        out[f"alone{t}"][: len(idx)] = idx
    rows: dict[int, int] = {}
    for t, idx in plan.shared:
        r = rows[t] = rows.get(t, -1) + 1
        out[f"shared{t}"][r, : len(idx)] = idx
    return out


class AnswerFamily(NamedTuple):
    """Answer candidates grounded by every walk of ``min_hops..max_hops`` edges from the
    anchors (``max_hops=None``: any length)."""

    max_hops: int | None
    min_hops: int


Structure = ChainGroups | AnswerFamily


class Statics(NamedTuple):
    """What selects one compiled program (hashable): the candidates' structure, the config's
    flags (:meth:`~grounding.GroundingConfig.flags`: best walk compiled, eps set, theta set,
    omega set, tau traced), the metric of the realization, the (padded) node count, and
    whether the evidence brings its own layout (large graphs)."""

    structure: Structure
    flags: tuple[bool, bool, bool, bool, bool]
    metric: str
    n_nodes: int
    has_layout: bool


class Prepared(NamedTuple):
    """One question laid out: the checked evidence state, the question's arrays (candidates,
    prior, settings, the chains' slot indices), the evidence arrays, the statics and, for
    claim chains, the plan the slot indices lay out."""

    state: EvidenceState
    q: dict
    ev: dict
    statics: Statics
    plan: ChainPlan | None = None


def _evidence(evidence) -> EvidenceState:
    if isinstance(evidence, TypedGraph):
        evidence = EvidenceState(evidence)
    if not isinstance(evidence, EvidenceState):
        raise TypeError(f"evidence must be an EvidenceState, got {type(evidence).__name__}")
    if evidence.graph.n_nodes == 0:
        raise ValueError("evidence is empty: its graph has no entities to ground candidates in")
    return evidence


def _check_anchors(problem: GroundingProblem, g: TypedGraph) -> bool:
    """Check that ``g`` names every anchor (topic entity) of the problem (a ``ValueError``
    naming each missing one and the fix); return whether the problem's candidates are every
    node of ``g`` in order. Candidates, and any other entity a candidate names, may be missing
    from ``g``: they are grounded as out of graph (see :func:`_absent_candidates`)."""
    missing = list(dict.fromkeys(a for a in problem.anchors if not g.has_entity(a)))
    if missing:
        shown = ", ".join(repr(a)[:100] for a in missing)
        raise ValueError(
            f"problem: anchor (topic) {'entity' if len(missing) == 1 else 'entities'} {shown} "
            f"{'is' if len(missing) == 1 else 'are'} not in the evidence graph "
            f"({g.n_nodes} entities): every walk starts at an anchor, so it must be a node of "
            "the graph; link the topic to a graph entity (or drop it from anchors), or ground "
            "against a state over the full vocabulary (a candidate the graph lacks is no "
            "error: it is grounded as unsupported)"
        )
    return problem.kind == "answer" and problem.candidates == g.entities


def _absent_candidates(problem: GroundingProblem, g: TypedGraph) -> np.ndarray:
    """``[C]`` whether each candidate names an entity that ``g`` lacks (an answer candidate
    itself, any mention of a claim chain): such a candidate is *out of graph*. It has no walk,
    so it gets exactly what an entity of ``g`` without edges would get (raw energy ``+inf``,
    status unsupported unless out of schema or contradicted, slack energy ``kappa``, outside
    the hard feasible set); with a realization, its missing embedding is no alignment either.
    Answer candidates here; claim chains are read with their mentions' indices in
    :func:`_candidate_arrays`."""
    return np.asarray([not g.has_entity(a) for a in problem.candidates], bool)


def checked_state(problem: GroundingProblem, evidence: EvidenceState | TypedGraph) -> EvidenceState:
    """The evidence of a (problem, evidence) pair as a state that names every anchor of the
    problem (a ``TypeError`` or ``ValueError`` says what is wrong, as :func:`prepare` would)."""
    if not isinstance(problem, GroundingProblem):
        raise TypeError(f"problem must be a GroundingProblem, got {type(problem).__name__}")
    state = _evidence(evidence)
    _check_anchors(problem, state.graph)
    return state


def _candidate_arrays(problem: GroundingProblem, state: EvidenceState, c_pad: int, min_rel):
    """Per-candidate index arrays (padded to ``c_pad``), the static structure and the chain
    plan (``None`` for answers). An out-of-graph candidate (:func:`_absent_candidates`) is
    flagged in ``absent`` (its raw energy is ``+inf`` in the program); an out-of-graph answer
    points at node 0 and an out-of-graph chain is in no slot of the plan (as padding), so no
    index of a missing entity is ever formed."""
    g = state.graph
    every_node = _check_anchors(problem, g)
    C = problem.n_candidates
    counter = np.zeros(c_pad, bool)
    schema = np.ones(c_pad, bool)
    schema[C:] = False  # padding: no admissible walk
    absent = np.zeros(c_pad, bool)
    if problem.kind == "answer":
        if not every_node:
            absent[:C] = _absent_candidates(problem, g)
        answers = np.zeros(c_pad, np.int32)
        answers[:C] = (
            np.arange(C)
            if every_node
            else [0 if out else g.entity_index(a) for a, out in zip(problem.candidates, absent)]
        )
        anchors = list(dict.fromkeys(g.entity_index(a) for a in problem.anchors))
        a_pad = bucket(len(anchors), floor=1)  # padding repeats the first anchor, masked out
        arrays = dict(
            answers=answers,
            anchors=np.asarray(anchors + anchors[:1] * (a_pad - len(anchors)), np.int32),
            anchor_mask=np.arange(a_pad) < len(anchors),
        )
        structure: Structure = AnswerFamily(problem.max_hops, problem.min_hops)
        plan = None
    else:
        cands = problem.candidates
        rels = cands[0].relations
        one_chain = all([c.relations == rels for c in cands])  # the usual case
        # columns past a chain's end are never read: the width is bucketed like every shape
        width = bucket((len(rels) if one_chain else max([c.n_hops for c in cands])) + 1, floor=4)
        mentions = np.full((c_pad, width), -1, np.int32)
        claimed = np.full((c_pad, width), -1, np.int32)
        # every mention at once: -1 an open mention, -2 a name the graph lacks
        get = g._entity_ix.get
        flat = np.fromiter(
            (-1 if e is None else get(e, -2) for c in cands for e in c.entities), np.int64
        )
        if one_chain:  # one row per candidate, of one length
            flat = flat.reshape(C, len(rels) + 1)
            mentions[:C, : flat.shape[1]] = flat
            absent[:C] = (flat == -2).any(axis=1)
            by_chain = {rels: list(range(C))}
        else:
            lens = np.fromiter((len(c.entities) for c in cands), np.int64, C)
            row = np.repeat(np.arange(C), lens)
            mentions[row, np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)] = flat
            absent[:C] = np.bincount(row[flat == -2], minlength=C) > 0  # out of graph
            by_chain = {}  # candidates mostly share one relation chain
            for i, c in enumerate(cands):
                by_chain.setdefault(c.relations, []).append(i)
        mentions[absent] = -1  # no walk: in no slot, raw energy +inf (an entity without edges)
        groups: dict[int, list[int]] = {}
        present = np.flatnonzero(~absent[:C]).tolist()
        for relations, idx in by_chain.items():
            schema[idx], claimed[idx, : len(relations)] = _typed_chain(g, relations)
            kept = present if one_chain else [i for i in idx if not absent[i]]
            groups.setdefault(len(relations), []).extend(kept)
        if state.negative or state.functional:  # else nothing is countered
            counter[:C] = [
                any(state.counter_support(h, min_rel) for h in c.named_hops()) for c in cands
            ]
        plan = _chain_plan({t: sorted(idx) for t, idx in groups.items() if idx}, mentions, claimed)
        structure, slots = _slots(plan, c_pad)
        arrays = dict(mentions=mentions, claimed=claimed, **slots)
    return dict(arrays, counter=counter, schema=schema, absent=absent), structure, plan


def _typed_chain(graph: TypedGraph, relations: tuple[str | None, ...]) -> tuple[bool, list[int]]:
    """Whether a claim's relations are in the schema, and their indices: all ``-1`` when one
    is outside it (the claim is then out of schema: no admissible walk), ``-1`` for an open
    (``None``) relation."""
    get = graph._relation_ix.get
    ix = [-1 if r is None else get(r, -2) for r in relations]
    return (False, [-1] * len(ix)) if -2 in ix else (True, ix)


#: A prefix is shared through one forward pass when at least this many chains have it, for at
#: most :data:`MAX_SHARED` prefixes a question (the largest; they are batched in the compiled
#: program, so their number bounds its memory); other chains are grounded one by one.
MIN_SHARED, MAX_SHARED = 4, 8


def _chain_plan(groups: dict[int, list[int]], mentions, claimed) -> ChainPlan:
    """Each hop count's chains split into those that share a prefix (every mention but the
    last, every claimed relation) with enough others and the rest."""
    alone, shared = [], []
    for t, idx in sorted(groups.items()):
        prefix = np.concatenate([mentions[idx, :t], claimed[idx, :t]], axis=1)
        by_prefix: dict[bytes, list[int]] = {}
        if (prefix == prefix[0]).all():  # the usual case: one topic, one relation chain
            by_prefix[b""] = list(idx)
        else:
            for i, key in zip(idx, prefix):
                by_prefix.setdefault(key.tobytes(), []).append(i)
        shared += [(t, tuple(m)) for m in by_prefix.values() if len(m) >= MIN_SHARED]
    shared = sorted(shared, key=lambda g: -len(g[1]))[:MAX_SHARED]
    taken = {i for _, members in shared for i in members}
    for t, idx in sorted(groups.items()):
        rest = tuple(i for i in idx if i not in taken)
        if rest:
            alone.append((t, rest))
    return ChainPlan(tuple(alone), tuple(sorted(shared)))


@functools.lru_cache(maxsize=1024)
def _slots(plan: ChainPlan, c_pad: int) -> tuple[ChainGroups, dict]:
    """A plan's own structure and its slot arrays (:func:`chain_indices`), read-only: questions
    with one arrangement of candidates (most of a batch) share them."""
    structure = plan.structure()
    slots = chain_indices(plan, structure, c_pad)
    for x in slots.values():
        x.setflags(write=False)
    return structure, slots


_EDGES = GraphMemo()

#: The fewest edges a small graph is padded to: the questions of a batch over small evidence
#: graphs then share one program (a call costs more than the rows it would save).
MIN_EDGES = 128


def _edge_arrays(graph: TypedGraph) -> tuple[dict, object]:
    """Edge arrays padded to a power of two of at least :data:`MIN_EDGES` (small graphs:
    segment layout) or exact with the graph's ELL layout (large graphs). Memoized for the
    last few graphs (a retriever grounds many questions against one graph), per float dtype
    (64-bit mode can be switched on later)."""
    dtype = float_dtype()
    hit = _EDGES.find(graph, dtype)
    return _EDGES.keep(graph, dtype, _build_edge_arrays(graph, dtype)) if hit is None else hit


def padded_nodes(graph: TypedGraph) -> int:
    """The node count the program sees: a bucket of the graph's (isolated padding nodes; a
    large graph keeps one padding node beyond its own for the padding edges to join)."""
    n, large = graph.n_nodes, graph.n_edges >= ELL_MIN_EDGES
    return bucket(n + 1, steps=8) if large else bucket(n)


def _build_edge_arrays(graph: TypedGraph, dtype: np.dtype) -> tuple[dict, object]:
    """The padded edge arrays; reliabilities in ``dtype``, the float dtype in use, so that the
    energies are computed in the dtype the result reports (a graph built before 64-bit mode
    was switched on stores float32 reliabilities: they are widened, not recomputed).

    Padding edges join the last padding node to itself and are masked (``+inf`` cost); a large
    graph gets the layout of its padded edges (None: small graphs build theirs from the
    possibly traced padded arrays inside the core)."""
    E, large = graph.n_edges, graph.n_edges >= ELL_MIN_EDGES
    e_pad = bucket(E, steps=8) if large else bucket(E, floor=MIN_EDGES)
    n_pad = padded_nodes(graph)
    end = n_pad - 1 if large else 0

    def padded(x, dtype, fill):
        out = np.full(e_pad, fill, dtype)
        out[:E] = np.asarray(x)
        return out

    arrays = dict(
        head=padded(graph.head, np.int32, end),
        tail=padded(graph.tail, np.int32, end),
        relation=padded(graph.relation, np.int32, 0),
        reliability=padded(graph.reliability, dtype, 1.0),
        edge_mask=np.arange(e_pad) < E,
    )
    layout = EdgeIndex.from_edges(arrays["head"], arrays["tail"], n_pad) if large else None
    return arrays, layout


def prepare(
    problem: GroundingProblem,
    evidence: EvidenceState,
    realization: Realization | None,
    config: GroundingConfig,
    c_pad: int | None = None,
    settings: dict | None = None,
) -> Prepared:
    """Validate a (problem, evidence) pair and lay it out for the compiled program, with
    candidates padded to ``c_pad`` (default: a bucket); ``settings``: the config's arrays
    (default :meth:`~grounding.GroundingConfig.arrays`; a batch passes host copies)."""
    if not isinstance(problem, GroundingProblem):
        raise TypeError(f"problem must be a GroundingProblem, got {type(problem).__name__}")
    state = _evidence(evidence)
    check_realization(realization, state.graph.n_nodes)
    flags = config.flags()
    if problem.kind == "answer" and problem.max_hops is None and not flags[0]:
        raise ValueError("answer candidates with max_hops=None (any length) need tau == 0")
    C = problem.n_candidates
    c_pad = bucket(C) if c_pad is None else c_pad
    q, structure, plan = _candidate_arrays(problem, state, c_pad, config.min_reliability)
    lp = np.full(c_pad, -np.inf)
    lp[:C] = np.asarray(problem.log_prior)
    claim = np.zeros(c_pad)
    if problem.claim_energy is not None:
        claim[:C] = np.asarray(problem.claim_energy)
    q.update(config.arrays() if settings is None else settings, log_prior=lp, claim=claim)
    ev, layout = _edge_arrays(state.graph)
    if layout is not None:
        ev = dict(ev, layout=layout)
    metric = "euclidean" if realization is None else realization.metric
    # graphs are padded with isolated nodes (no walk reaches them; every node cost there is
    # +inf) so that questions with evidence graphs of similar size share one program
    n_nodes = padded_nodes(state.graph)
    statics = Statics(structure, flags, metric, n_nodes, layout is not None)
    return Prepared(state, q, ev, statics, plan)


def relayout(prepared: Prepared, structure: ChainGroups, width: int) -> Prepared:
    """A claim-chain question laid out in a larger ``structure`` (one that holds its plan, see
    :func:`merge_structures`) with its mention arrays widened to ``width`` columns (``-1``:
    columns past a chain's end are never read), so that it shares a program with others."""
    c_pad, w = prepared.q["mentions"].shape
    if structure == prepared.statics.structure and width == w:
        return prepared  # (the usual case: laid out so already)
    q = dict(prepared.q)
    if width != w:  # (widths are bucketed: usually equal)
        q["mentions"] = np.pad(q["mentions"], ((0, 0), (0, width - w)), constant_values=-1)
        q["claimed"] = np.pad(q["claimed"], ((0, 0), (0, width - w)), constant_values=-1)
    q = {k: v for k, v in q.items() if not k.startswith(("alone", "shared"))}
    q.update(chain_indices(prepared.plan, structure, c_pad))
    statics = prepared.statics._replace(structure=structure)
    return prepared._replace(q=q, statics=statics)
