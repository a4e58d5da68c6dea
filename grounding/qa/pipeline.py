r"""The parts every question-answering system of :mod:`grounding.qa` is built from: one
failure policy, one evidence-per-retriever routine, one retriever signature, the claim chains a
candidate asserts, and the grounding of many questions at once.

Failures are per question. An error of one question's stage (:data:`QUESTION_ERRORS`: a
candidate model or endpoint failing, a topic entity missing from the graph, a retriever or
:func:`grounding.ground` refusing that question's data) becomes that question's reason
(:func:`failure`: the stage, the error's type and its message), and the rest of the batch is
answered as usual; other exceptions (programming errors such as ``TypeError``) propagate. The
one fallback rule, :func:`batch_or_each`: when a batched stage (candidates, chain prediction,
retrieval, grounding) fails, its questions are run one by one, so that only the failing ones
lose their answer. A candidate the evidence graph lacks
fails nothing: :func:`grounding.ground` grounds it as out of graph (unsupported, slack energy
``kappa``), and only a missing topic fails a question (:func:`unknown_entities`).

References:
    Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Def. 1, Eq. (1).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from grounding import programs
from grounding.evidence import EvidenceState
from grounding.language import EndpointError
from grounding.prior import CandidateModel, CandidateModelError, Candidates, QuestionLike
from grounding.prior.candidates import propose_batch, runs_batches
from grounding.problem import ClaimChain, GroundingProblem, Realization
from grounding.qa._checks import checked_candidates
from grounding.query import Query
from grounding.result import GroundingResult
from grounding.retrieval.base import Retrieval, Retriever
from grounding.solver import GroundingConfig, ground_batch

__all__ = [
    "QUESTION_ERRORS",
    "batch_or_each",
    "RetrieverSpec",
    "Retrievers",
    "claim_chains",
    "done_batch",
    "failure",
    "ground_or_fail",
    "ground_questions",
    "retrieve_or_fail",
    "split_failures",
    "unknown_entities",
]

#: The errors that fail one question (its outcome says why) rather than its batch: a candidate
#: model or endpoint failing, a name the graph lacks, data a retriever or ``ground`` refuses.
QUESTION_ERRORS = (CandidateModelError, EndpointError, OSError, LookupError, ValueError)

T = TypeVar("T")
K = TypeVar("K")
R = TypeVar("R")

#: What a system takes as its retriever: one retriever, or a function of the retrieval depth
#: (the number of hops the question's claims span) that builds one.
RetrieverSpec = Retriever | Callable[[int], Retriever]


def failure(stage: str, err: BaseException) -> str:
    """Why a question failed at ``stage``: the stage, the error's type and its message."""
    msg = err.args[0] if isinstance(err, KeyError) and len(err.args) == 1 else str(err)
    return f"{stage} failed ({type(err).__name__}): {msg}"


class Retrievers:
    """A system's retriever by depth: the given retriever, or the one its function builds for
    a depth (built once per depth, so that questions of one depth share one batched call).

    Raises:
        TypeError: ``spec`` is neither a retriever nor a function.
    """

    def __init__(self, spec: RetrieverSpec):
        if not (callable(getattr(spec, "retrieve", None)) or callable(spec)):
            raise TypeError(
                f"retriever must have a retrieve() method or be a function of the depth, "
                f"got {spec!r:.100}"
            )
        self.spec = spec
        self._built: dict[int, Retriever] = {}

    def __call__(self, depth: int) -> Retriever:
        """The retriever for ``depth`` hops."""
        if hasattr(self.spec, "retrieve"):
            return self.spec  # type: ignore[return-value]
        if depth not in self._built:
            self._built[depth] = self.spec(depth)  # type: ignore[operator]
        return self._built[depth]


def batch_or_each(
    run: Callable[[list[T]], Sequence[R]] | None,
    items: Sequence[T],
    stage: str,
    *,
    one: Callable[[T], R] | None = None,
    again: bool = False,
) -> list[R | str]:
    """The one fallback rule of a batched stage: ``run(items)``, one output per item; when it
    raises one of :data:`QUESTION_ERRORS`, each item alone (``one(item)``, by default
    ``run([item])[0]``), and an item that fails alone gets the reason (:func:`failure` of
    ``stage``) in place of its output, so only the failing items lose theirs. A single item
    is run alone at once (unless ``one`` is given: then the batch is tried first);
    ``run=None`` (no batched form) runs every item alone. A failure's reason is a string in
    the item's place, so a stage's outputs are never strings.

    With ``again``, the items that pass alone are run once more as one batch, and those
    outputs are kept: for a stage whose outputs depend on the batch they are asked in, they
    are then what a batch without the failing items gives (when every item passes alone, the
    whole batch is what failed, and the outputs alone are kept).

    Raises:
        TypeError: ``run`` returns another number of outputs than items.
    """
    items = list(items)
    if run is not None and (len(items) > 1 or (items and one is not None)):
        try:
            return _one_each(run(items), len(items), stage)
        except QUESTION_ERRORS:
            pass  # find the failing items: run them one by one
    alone = one if one is not None else (lambda x: _one_each(run([x]), 1, stage)[0])  # type: ignore[misc]
    out: list[R | str] = []
    ok = []
    for j, x in enumerate(items):
        try:
            out.append(alone(x))
            ok.append(j)
        except QUESTION_ERRORS as err:
            out.append(failure(stage, err))
    if again and run is not None and 1 < len(ok) < len(items):
        try:
            for j, y in zip(ok, _one_each(run([items[j] for j in ok]), len(ok), stage)):
                out[j] = y
        except QUESTION_ERRORS as err:
            for j in ok:
                out[j] = failure(stage, err)
    return out


def _one_each(got: Sequence[R], n: int, stage: str) -> list[R]:
    got = list(got)
    if len(got) != n:
        raise TypeError(f"{stage} returned {len(got)} outputs for {n} questions")
    return got


def retrieve_or_fail(
    retrievers: Callable[[K], Retriever],
    keys: Sequence[K],
    queries: Sequence[Query],
    k: int,
    take: Callable[[Retrieval], T] = lambda r: r.evidence,  # type: ignore[assignment, return-value]
) -> list[T | str]:
    """``take`` of each query's :class:`~grounding.retrieval.Retrieval` of ``k`` nodes, by
    the retriever of its key (``retrievers(key)``; a :class:`Retrievers` takes the depth): one
    ``retrieve_batch`` call per retriever (a batched retriever, e.g.
    :class:`~grounding.retrieval.PCR` at a depth limit, computes the whole batch at once;
    others are asked query by query), by :func:`batch_or_each` (a failing batch is retrieved
    one by one). A query whose retriever cannot be built, or whose retrieval (or ``take``)
    fails, gets the reason (a string) in its place."""
    out: list[Any] = [None] * len(queries)
    groups: dict[int, tuple[Retriever, list[int]]] = {}
    for j, key in enumerate(keys):
        try:
            r = retrievers(key)
        except QUESTION_ERRORS as err:
            out[j] = failure("retrieval", err)
            continue
        groups.setdefault(id(r), (r, []))[1].append(j)
    for r, members in groups.values():
        batch = getattr(r, "retrieve_batch", None)
        got = batch_or_each(
            None if batch is None else (lambda qs, b=batch: [take(x) for x in b(qs, k)]),
            [queries[j] for j in members],
            "retrieval",
            one=lambda q, r=r: take(r.retrieve(q, k)),
        )
        for j, x in zip(members, got):
            out[j] = x
    return out


def ground_or_fail(
    problems: Sequence[GroundingProblem],
    states: Sequence[EvidenceState],
    config: GroundingConfig,
    realization: Realization | None = None,
) -> list[GroundingResult | str]:
    """:func:`grounding.ground_batch` of each problem on its evidence state, by
    :func:`batch_or_each` (when the batch fails, each problem is grounded alone); a problem
    that cannot be grounded gets the reason (a string) in place of its result."""
    pairs = list(zip(problems, states))

    def run(chunk: list[tuple[GroundingProblem, EvidenceState]]) -> list[GroundingResult]:
        return ground_batch([p for p, _ in chunk], [s for _, s in chunk], config,
                            realization=realization)  # fmt: skip

    return batch_or_each(run, pairs, "grounding")


def ground_questions(
    keys: Sequence[K],
    problems: Mapping[K, GroundingProblem],
    states: Mapping[K, EvidenceState],
    config: GroundingConfig,
    realization: Realization | None = None,
) -> tuple[dict[K, GroundingResult], dict[K, str]]:
    """:func:`ground_or_fail` of the questions ``keys`` (their problems and evidence states by
    key), split into the results and the reasons of the questions that failed."""
    got = ground_or_fail(
        [problems[k] for k in keys], [states[k] for k in keys], config, realization
    )
    return split_failures(keys, got)


def split_failures(keys: Sequence[K], got: Sequence[T | str]) -> tuple[dict[K, T], dict[K, str]]:
    """A stage's per-question outputs (``got[j]`` of question ``keys[j]``) split into the
    successes and the reasons (the strings) of the questions that failed."""
    ok = {k: x for k, x in zip(keys, got) if not isinstance(x, str)}
    return ok, {k: x for k, x in zip(keys, got) if isinstance(x, str)}


def unknown_entities(problem: GroundingProblem, state: EvidenceState) -> str | None:
    """Why ``problem`` cannot be grounded in ``state``: the anchors (topic entities) the
    evidence graph lacks, each named, else ``None``. A candidate the graph lacks is no reason:
    :func:`grounding.ground` grounds it as out of graph (unsupported)."""
    g = state.graph
    missing = [a for a in dict.fromkeys(problem.anchors) if not g.has_entity(a)]
    if not missing:
        return None
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    shown = ", ".join(repr(e)[:100] for e in missing[:5])
    if len(missing) == 1:
        return f"topic entity {shown} is not in the evidence graph"
    return f"topic entities {shown}{more} are not in the evidence graph"


def claim_chains(
    pairs: Sequence[tuple[str, str]], relations: Sequence[str]
) -> tuple[ClaimChain, ...]:
    """The claim chains ``anchor -r_1-> * ... -r_T-> answer`` of ``(anchor, answer)`` pairs
    (Def. 1: a typed walk of exactly ``T`` hops, its intermediate entities left open)."""
    relations = tuple(relations)
    mid = (None,) * (len(relations) - 1)
    pairs = [(d, a) for d, a in pairs]
    names = [*relations, *itertools.chain.from_iterable(pairs)]
    if not (relations and all(names) and all(map(isinstance, names, itertools.repeat(str)))):
        return tuple(ClaimChain((d, *mid, a), relations) for d, a in pairs)  # (says what is wrong)
    stars = "*->" * len(mid)  # each chain's default name, as ClaimChain writes it
    return tuple(ClaimChain._trusted((d, *mid, a), relations, f"{d}->{stars}{a}") for d, a in pairs)


def done_batch(outcomes: list, release: bool) -> list:
    """A system's outcomes of one batch, after releasing every compiled program of the process
    when the system was built with ``release_programs=True``
    (:func:`grounding.programs.release_programs`)."""
    if release:
        programs.release_programs()
    return outcomes


def proposals(model: CandidateModel, questions: Sequence[QuestionLike], k: int) -> list[Candidates]:
    """A candidate model's candidates of each question (one ``propose_batch`` call when the
    model runs questions together, else ``propose`` one by one), or an abstention naming the
    model's failure (:func:`~grounding.qa.pipeline.batch_or_each`)."""
    got = batch_or_each(
        (lambda qs: propose_batch(model, qs, k)) if runs_batches(model) else None,
        questions,
        "candidate model",
        one=lambda q: checked_candidates(model.propose(q, k)),
    )
    return [Candidates.abstain(c) if isinstance(c, str) else c for c in got]
