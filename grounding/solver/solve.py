r""":func:`ground` and :func:`ground_batch`: the solver's entry points, one direction through
its three stages (prepare -> compiled program -> support)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import is_concrete
from grounding._shapes import bucket
from grounding.evidence import EvidenceState
from grounding.problem import GroundingProblem, Realization
from grounding.result import GroundingResult
from grounding.solver.compact import compact_evidence
from grounding.solver.config import GroundingConfig, make_config
from grounding.solver.prepare import (
    ChainGroups,
    Prepared,
    checked_state,
    merge_structures,
    prepare,
    relayout,
)
from grounding.solver.program import compiled
from grounding.solver.support import finish, traced_result

__all__ = ["ground", "ground_batch"]


def ground(
    problem: GroundingProblem,
    evidence: EvidenceState,
    config: GroundingConfig | None = None,
    *,
    realization: Realization | None = None,
    **settings: Any,
) -> GroundingResult:
    r"""Ground one question's candidates in an evidence state (see :mod:`grounding.solver`).

    The settings are a :class:`~grounding.GroundingConfig` (``config``) or its fields as
    keywords (``lam`` and ``kappa`` required), or both (the keywords replace the config's
    fields); they are checked once, here. ``lam``, ``kappa`` and ``tau`` may be traced:
    ``jax.grad`` of a loss of the result's ``log_posterior`` with respect to them works (the
    result then holds traced arrays and no path report).

    Args:
        problem: the question, candidates and log-prior.
        evidence: an :class:`~grounding.EvidenceState` (any retriever's ``.evidence``) or a
            bare :class:`~grounding.TypedGraph`. Its graph must name every anchor (topic
            entity) of the problem; a graph without edges is valid (every candidate is then
            unsupported). A candidate that names an entity the graph lacks (an answer, any
            mention of a claim chain) is *out of graph*, not an error: the evidence does not
            show it, so it is grounded exactly as an entity of the graph without edges would
            be — raw energy ``+inf``, status unsupported (unless out of schema or
            contradicted), slack energy ``kappa`` (Eq. (19)), outside the hard feasible set
            (Eq. (5)); when every candidate is out of graph, the hard rule abstains
            (``hard_abstained``) as for any empty feasible set.
        config: the settings (a :class:`~grounding.GroundingConfig`).
        realization: :class:`~grounding.Realization` (``None``: evidence-only).
        settings: any field of :class:`~grounding.GroundingConfig` as a keyword (each is
            described there once): ``lam`` (grounding strength, Eq. (7)), ``kappa`` (slack,
            Eq. (19)), ``tau`` (path temperature, Eqs. (11), (13)), ``eps`` (the hard feasible
            set's tolerance, Eqs. (5)-(6)), the edge-cost coefficients, the status tolerance,
            the contradiction penalty (Axiom 4), the decision rule's thresholds (Eq. (22)),
            the certificate's ``omega`` (Thm. 3) and the walk report's size.

    Returns:
        :class:`~grounding.GroundingResult`.

    Raises:
        ValueError: anchors of the problem missing from the evidence graph (the message
            names each and the fix), an empty evidence graph, a negative or non-scalar
            ``lam``/``kappa``/``tau``, ``theta`` or ``min_reliability`` outside ``[0, 1]``, a
            problem and realization of different vocabularies, or :math:`Z_R(\lambda) = 0`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (7), (11), (13), (19), (22); Axioms 4 and 8.

    Example:
        >>> import jax.numpy as jnp
        >>> from grounding import ClaimChain, EvidenceStatus, GroundingProblem, TypedGraph
        >>> g = TypedGraph.from_triples([("lou_seal", "mascot_of", "giants")], [0.9],
        ...                             entities=["lou_seal", "giants", "cardinals"])
        >>> p = GroundingProblem("whose mascot is Lou Seal?",
        ...     [ClaimChain(("lou_seal", t), ("mascot_of",)) for t in ("giants", "cardinals")],
        ...     jnp.log(jnp.array([0.4, 0.6])))
        >>> r = ground(p, g, lam=4.0, kappa=1.0)
        >>> r.answer, r.answer_name, [s.name for s in map(EvidenceStatus, r.status)]
        ('giants', 'lou_seal->giants', ['SUPPORTED', 'UNSUPPORTED'])
    """
    config = make_config(config, settings, "ground")
    prepared = prepare(problem, evidence, realization, config)
    out = compiled(prepared.statics, None)(prepared.ev, prepared.q, realization)
    return _result(out, problem, prepared, realization, config)


def ground_batch(
    problems: Sequence[GroundingProblem],
    evidence: EvidenceState | Sequence[EvidenceState],
    config: GroundingConfig | None = None,
    *,
    realization: Realization | None = None,
    **settings: Any,
) -> list[GroundingResult]:
    """:func:`ground` for many questions, the one way to ground many: one ``vmap``-ed program
    per group of questions with the same statics (candidate kind, shapes after padding; claim
    chains of any arrangement share one layout, the group's, see
    :class:`~grounding.solver.prepare.ChainGroups`), and one device-to-host transfer per group
    (a group whose padding to a power of two would add more than 32 rows runs as two calls: a
    power of two of its questions, then the rest).

    The evidence is shared (one state for all questions) or per question (a sequence). Per
    question, without a realization, each state is first compacted
    (:func:`~grounding.solver.compact.compact_evidence`: the entities its edges touch and the
    problem's entities, padded to one power-of-two size for the batch), so that questions with
    evidence of similar size share one program whatever graph it came from; walks use only
    edges, so results are unchanged (a name the state lacks stays out of graph). Problems of
    every kind (claim chains, answers) may be mixed: they are grouped by their statics.

    The settings (``config`` and/or keywords, as for :func:`ground`) are shared by every
    question. Results equal :func:`ground` question by question.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (7), (11), (13), (19), (22); Axioms 4 and 8.
    """
    config = make_config(config, settings, "ground_batch")
    problems = list(problems)
    if not problems:
        raise ValueError("ground_batch: no problems")
    shared = not isinstance(evidence, Sequence)
    states = [evidence] * len(problems) if shared else list(evidence)
    if len(states) != len(problems):
        raise ValueError(f"{len(problems)} problems but {len(states)} evidence states")
    if not shared and realization is None:  # a realization is indexed by the full vocabulary
        states = [checked_state(p, s) for p, s in zip(problems, states)]
        keep = [p.entities() for p in problems]  # (a name a state lacks stays out of graph)
        states = compact_evidence(states, keep, texts=False, unknown="skip")
    c_pad = bucket(max(p.n_candidates for p in problems))
    settings = config.arrays()
    traced = not is_concrete(*settings.values())
    if not traced:  # on the host once for the batch, not once per group and setting
        settings = {k: np.asarray(v) for k, v in settings.items()}
    prepared = [
        prepare(p, s, realization, config, c_pad, settings) for p, s in zip(problems, states)
    ]
    groups: dict = {}
    for i, p in enumerate(prepared):
        groups.setdefault(_group_key(p, shared, i), []).append(i)
    for members in groups.values():  # claim chains: one layout for the group (see _group_key)
        if prepared[members[0]].plan is not None and len(members) > 1:
            structure = merge_structures(prepared[i].statics.structure for i in members)
            width = max(prepared[i].q["mentions"].shape[1] for i in members)
            for i in members:
                prepared[i] = relayout(prepared[i], structure, width)
    results: list[GroundingResult | None] = [None] * len(problems)
    for members in groups.values():
        statics = prepared[members[0]].statics
        if not shared and statics.has_layout:  # large graphs have their own ELL layout
            for i in members:
                p = prepared[i]
                out = compiled(statics, None)(p.ev, p.q, realization)
                results[i] = _result(out, problems[i], p, realization, config)
            continue
        for part in _parts(members):
            out = _group(part, prepared, shared, realization, traced)
            leaves, treedef = jax.tree_util.tree_flatten(out)
            on_host = is_concrete(*leaves)
            if on_host:
                leaves = jax.device_get(leaves)  # one transfer for the whole part
            for j, i in enumerate(part):
                one = treedef.unflatten([x[j] for x in leaves])
                results[i] = _result(one, problems[i], prepared[i], realization, config, on_host)
    return results  # type: ignore[return-value]


#: A group whose padding to a power of two would add more rows than this runs in two parts
#: (one call costs about as much as this many rows of a small question).
SPLIT_ROWS = 32


def _parts(members: list[int]) -> list[list[int]]:
    """A group's questions as one call's rows, or, when padding them to a power of two would
    add more than :data:`SPLIT_ROWS` rows, as a power of two of them, then the rest (padded
    in turn: under a quarter of a split group's rows are then padding, where padding it whole
    could make up nearly half)."""
    n = len(members)
    if bucket(n, floor=1) - n <= SPLIT_ROWS:
        return [members]
    top = 1 << (n.bit_length() - 1)
    return [members[:top], members[top:]]


def _group_key(p: Prepared, shared: bool, i: int) -> tuple:
    """The group of a prepared question: its statics and array shapes, and its edge bucket (a
    question's edges are padded to its own power of two, never to the largest graph of the
    batch). Claim chains group without their layout (which candidate is grounded how, how
    many hops at most): the group is then laid out in one :class:`ChainGroups` holding every
    member's chains (:func:`merge_structures`), so questions with differently arranged
    candidates share one program; questions over large graphs of their own run alone."""
    statics, q = p.statics, p.q
    if isinstance(statics.structure, ChainGroups):
        if not shared and statics.has_layout:
            return (i,)
        statics = statics._replace(structure=None)
        layout = ("mentions", "claimed", "alone", "shared")
        q = {k: v for k, v in q.items() if not k.startswith(layout)}
    # (keys in the order prepare writes them: the same for every question of one kind)
    shapes = tuple([(k, np.shape(v)) for k, v in q.items()])
    return statics, shapes, np.shape(p.ev["head"])


def _result(
    out: dict, problem, prepared: Prepared, realization, config, on_host: bool = False
) -> GroundingResult:
    """One question's result from its program outputs: reported on the host, or as they are
    when a setting is traced (``jax.grad``, ``jit``); ``on_host``: the outputs are NumPy."""
    out["log_prior"] = prepared.q["log_prior"]
    if not on_host:
        if not is_concrete(*jax.tree_util.tree_leaves(out)):
            return traced_result(out, problem)
        out = jax.device_get(out)
    return finish(out, problem, prepared, realization, config)


def _group(
    members: list[int], prepared: list[Prepared], shared: bool, realization, traced: bool
) -> dict:
    """The program's outputs for a group of questions of one statics, stacked: the batch is
    padded to a power of two (repeating its last question) so that groups of similar size
    share one compiled program; the padding's outputs are there but never read. ``traced``:
    a setting is traced (each leaf is then checked: traced leaves stack with ``jnp``)."""
    padded = members + [members[-1]] * (bucket(len(members), floor=1) - len(members))
    stack = _stack_any if traced else _stack
    qs = jax.tree_util.tree_map(stack, *[prepared[i].q for i in padded])
    if shared:
        ev = prepared[members[0]].ev
    else:  # one edge bucket per group: the members' edge arrays have one length
        ev = jax.tree_util.tree_map(stack, *[prepared[i].ev for i in padded])
    return compiled(prepared[members[0]].statics, not shared)(ev, qs, realization)


def _stack_any(*xs):
    """:func:`_stack`, or ``jnp.stack`` when a leaf is traced."""
    return _stack(*xs) if is_concrete(*xs) else jnp.stack(xs)


def _stack(*xs):
    """Stack one leaf of every question on the host. A leaf every question shares (a setting
    of the config) is broadcast, not copied; the others are stacked by ``np.array`` (the
    group's leaves have one shape: ``np.stack``'s per-array checks cost three times as
    much)."""
    first = xs[0]
    if all(x is first for x in xs):
        return np.broadcast_to(np.asarray(first), (len(xs), *np.shape(first)))
    return np.array(xs)
