r"""PankRAG's execution, grounded: a plan's sub-questions resolved in topological order, each
by retrieval, dependency-aware reranking and :func:`grounding.ground`.

After *PankRAG: Enhancing Graph Retrieval via Globally Aware Query Resolution and
Dependency-Aware Reranking Mechanism* (Li, Liu, Shan, Huang, Gong and Li). A
:class:`PankRAG` pipeline plans a question (any :class:`~grounding.plans.Planner`), then
runs the plan's levels (:meth:`~grounding.plans.Plan.levels`; steps of one level are
parallel and are grounded in one batch). For each step:

1. **Anchors**: the entities the step names, and the answers of the steps it depends on:
   each dependency's ``beam`` most probable answers that are graph entities (an out-of-graph
   answer, grounded as unsupported, anchors no walk), with their probabilities renormalized
   (several dependencies share the mass equally). A step that names no entity and depends on
   no step (free text) is anchored at the entities its text names, found by the
   :class:`~grounding.retrieval.EntityLinker` of the index's graph (names and entity texts);
   when it finds none, the step has no answer, with that reason. Its text gets each slot
   filled with the dependency's top answer.
2. **Retrieval**: *local* (a *specific* step) = path-constrained retrieval from the anchors
   (depth = the step's relation count, else 1); *global* (an *abstract* step) = community
   retrieval (:class:`~grounding.retrieval.CommunityRetriever`). A pool of
   ``pool * k_nodes`` nodes is retrieved (the steps of one level in one batched call per
   retriever, :func:`~grounding.qa.pipeline.retrieve_or_fail`).
3. **Reranking** (steps with dependencies): the pool is re-ordered by
   :math:`\alpha R_i + (1-\alpha) M_i` (:mod:`grounding.retrieval.rerank`, ``alpha`` 0.6
   specific / 0.75 abstract) and cut to ``k_nodes``; without the reranker, the pool is cut
   by the retriever's order. The kept nodes' :class:`~grounding.EvidenceState` goes to
   ``ground``.
4. **Answering**: the candidate model proposes answers from each anchor ``d`` along the
   step's relations; a candidate is the trajectory ``d -> a`` (a claim chain, Def. 1) with
   prior :math:`w_d\,p_\theta(a\mid d)`; ``ground`` gives its Gibbs posterior (Eq. (7)), and
   the step's answer distribution is its marginal over ``a``.

The final step's distribution answers the question. A step whose model abstains, or whose
dependency has no answer, has no answer, with the reason (never a silent empty answer). Failures
are per question and step (:mod:`grounding.qa.pipeline`): a planner that fails gives
that question an outcome without a plan and with the reason; a retriever or candidate model
that fails, or anchors the graph lacks, fail that step (and the steps depending on it) with
the reason (candidates the graph lacks are grounded as unsupported); when a level's batched
grounding fails, its steps are grounded one by one. The rest of the batch is answered as
usual. The configuration is checked when a pipeline is built.
``inject`` replaces a step's resolved answers by a wrong entity holding ``inject_mass`` of
the probability (the rest keeps its proportions): an error-propagation probe.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding.plans import Plan, Planner, SubQuestion
from grounding.prior import CandidateModel, Candidates
from grounding.problem import GroundingProblem, Realization
from grounding.qa._checks import (
    check_bool,
    check_config,
    check_has,
    check_questions,
    check_real,
    checked_candidates,
)
from grounding.qa._decomposed_outcomes import (
    PankRAGOutcome,
    StepOutcome,
    failed,
    with_injected,
)
from grounding.qa.pipeline import (
    QUESTION_ERRORS,
    claim_chains,
    done_batch,
    failure,
    ground_or_fail,
    retrieve_or_fail,
    unknown_entities,
)
from grounding.query import Query
from grounding.retrieval import (
    PCR,
    Communities,
    CommunityRetriever,
    EntityLinker,
    Retrieval,
    TextIndex,
    dependency_rerank,
)
from grounding.retrieval.rerank import ALPHA, embedding_agreement, graph_agreement
from grounding.solver import GroundingConfig

__all__ = ["PankRAG", "PankRAGOutcome", "StepOutcome"]

Mode = Literal["auto", "local", "global"]


@dataclasses.dataclass(frozen=True)
class _StepQuestion:
    """What a candidate model reads of a step: its text, one anchor, its relations."""

    text: str
    topic: str
    chain: tuple[str, ...]


class PankRAG:
    """Plan, retrieve per sub-question, rerank by dependencies, ground (module docstring).

    Args:
        planner: builds each question's plan.
        model: the candidate model (the LLM prior of Eq. (1)), asked once per step and anchor.
        index: the searched graph's text index.
        communities: the graph's communities (needed when a step retrieves globally).
        mode: ``"auto"`` (abstract steps global, specific ones local), ``"local"`` or
            ``"global"`` for every step.
        rerank: apply the dependency-aware reranker.
        agreement: ``"graph"`` or ``"embedding"`` agreement :math:`M_i`.
        alpha: one :math:`\\alpha` for every step (default: 0.6 specific, 0.75 abstract).
        k_nodes: nodes kept per step; ``pool``: how many times more are retrieved first.
        k_candidates: candidates asked of the model per anchor.
        beam: answers of a dependency passed on as anchors.
        linker: links the entities a free-text step names (default: an
            :class:`~grounding.retrieval.EntityLinker` of ``index``, built when first needed).
        realization: an optional :class:`~grounding.Realization` for ``ground``.
        release_programs: release every compiled program of the process after each
            :meth:`answer_batch` (:func:`grounding.programs.release_programs`: the memory of
            a long-lived process returns to what it was; the next batch compiles again).

    Raises:
        TypeError, ValueError: an argument is of the wrong kind or out of range (the message
            names it).

    References:
        - Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally
          Aware Query Resolution and Dependency-Aware Reranking Mechanism", 2025
          (arXiv:2506.11106): Secs. 2.2-2.3.1.
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Def. 1, Eqs. (1), (7).
    """

    def __init__(
        self,
        planner: Planner,
        model: CandidateModel,
        index: TextIndex,
        config: GroundingConfig,
        *,
        communities: Communities | None = None,
        mode: Mode = "auto",
        rerank: bool = True,
        agreement: Literal["graph", "embedding"] = "graph",
        alpha: float | None = None,
        k_nodes: int = 20,
        pool: int = 4,
        k_candidates: int = 20,
        beam: int = 5,
        linker: EntityLinker | None = None,
        realization: Realization | None = None,
        release_programs: bool = False,
    ):
        self.config, self.realization = check_config("PankRAG", config, realization)
        self.release_programs = check_bool("release_programs", release_programs)
        if mode not in ("auto", "local", "global"):
            raise ValueError(f"mode must be 'auto', 'local' or 'global', got {mode!r:.100}")
        if agreement not in ("graph", "embedding"):
            raise ValueError(f"agreement must be 'graph' or 'embedding', got {agreement!r:.100}")
        self.alpha = None if alpha is None else check_real("alpha", alpha, low=0.0, high=1.0)
        self.k_nodes, self.pool = check_int(k_nodes, "k_nodes"), check_int(pool, "pool")
        self.k_candidates = check_int(k_candidates, "k_candidates")
        self.beam = check_int(beam, "beam")
        check_has("planner", planner, "plan")
        check_has("model", model, "propose")
        if not isinstance(index, TextIndex):
            raise TypeError(f"index must be a TextIndex, got {index!r:.100}")
        if communities is not None and not isinstance(communities, Communities):
            raise TypeError(f"communities must be Communities or None, got {communities!r:.100}")
        if mode == "global" and communities is None:
            raise ValueError("global retrieval needs communities (Communities.build)")
        self.planner, self.model, self.index = planner, model, index
        self.graph = index.graph
        self.mode, self.use_rerank, self.agreement = mode, check_bool("rerank", rerank), agreement
        if linker is not None and not isinstance(linker, EntityLinker):
            raise TypeError(f"linker must be an EntityLinker or None, got {linker!r:.100}")
        self._linker = linker
        self._local: dict[int, PCR] = {}
        self._global = None if communities is None else CommunityRetriever(index, communities)

    @property
    def linker(self) -> EntityLinker:
        """The entity linker of free-text steps (built from the index when first used)."""
        if self._linker is None:
            self._linker = EntityLinker(self.index)
        return self._linker

    # ---------------------------------------------------------------- one step's parts

    def step_mode(self, step: SubQuestion) -> str:
        if self.mode != "auto":
            return self.mode
        return "global" if step.abstract and self._global is not None else "local"

    def retriever(self, depth: int):
        """The retriever of a step spanning ``depth`` hops: local (path-constrained from the
        anchors, ``depth`` deep), or global (communities) for ``depth = 0``."""
        if depth == 0:
            return self._global
        return self._local.setdefault(depth, PCR(self.index, max_hops=depth))

    def depth(self, step: SubQuestion, mode: str) -> int:
        """A step's retrieval depth: its relation count (at least 1) locally, 0 globally."""
        return 0 if mode == "global" else max(len(step.relations), 1)

    def _anchors(self, step: SubQuestion, done: Mapping[str, StepOutcome]):
        """Anchor names and weights (sum 1), or the reason there are none."""
        groups: list[dict[str, float]] = []
        named = step.anchors
        if not named and not step.depends_on:  # free text: the entities its text names
            named = self.linker.link(step.text)
        if named:
            groups.append({a: 1.0 / len(named) for a in named})
        for d in step.depends_on:
            dep = done[d]
            if not dep.answers:
                return (), np.zeros(0), f"dependency {d!r} has no answer ({dep.reason})"
            # an out-of-graph answer (grounded as unsupported) cannot anchor a walk: the beam
            # is the dependency's most probable answers that are graph entities
            beam = [(a, x) for a, x in zip(dep.answers, dep.probs) if self.graph.has_entity(a)]
            beam = beam[: self.beam]
            if not beam:
                shown = ", ".join(repr(a)[:60] for a in dep.answers[:3])
                return (), np.zeros(0), f"dependency {d!r} has no answer in the graph ({shown})"
            p = np.asarray([x for _, x in beam], np.float64)
            groups.append(dict(zip([a for a, _ in beam], p / p.sum())))
        weights: dict[str, float] = {}
        for g in groups:
            for a, w in g.items():
                weights[a] = weights.get(a, 0.0) + w / len(groups)
        unknown = [a for a in weights if not self.graph.has_entity(a)]
        if unknown:
            return (), np.zeros(0), f"anchors {unknown} are not entities of the graph"
        if not weights:
            why = f"no name or text of a graph entity is found in {step.text!r:.200}"
            return (), np.zeros(0), f"the step names no entity and depends on no step ({why})"
        return tuple(weights), np.array(list(weights.values())), None

    def _rerank(self, step, anchors, weights, pooled: Retrieval) -> Retrieval:
        """The pool reranked by agreement with the dependencies' answers (or cut)."""
        if not (self.use_rerank and step.depends_on):
            keep = slice(0, self.k_nodes)
            return dataclasses.replace(pooled, index=pooled.index[keep], scores=pooled.scores[keep])
        deps = np.array([self.graph.entity_index(a) for a in anchors], np.int64)
        if self.agreement == "graph":
            m = graph_agreement(self.graph, pooled.index, deps, weights)
        else:
            m = embedding_agreement(self.index.embeddings, pooled.index, deps, weights)
        kind = "abstract" if step.abstract else "specific"
        alpha = ALPHA[kind] if self.alpha is None else self.alpha
        return dependency_rerank(pooled, m, alpha, self.k_nodes)

    def _problem(self, step, text, anchors, weights) -> GroundingProblem | str:
        """The step's trajectories ``d -> a`` with prior ``w_d p(a | d)``, or why none (the
        model abstains from every anchor or fails from one)."""
        names, lp, reasons = [], [], []
        for d, w in zip(anchors, weights):
            try:
                c: Candidates = self.model.propose(
                    _StepQuestion(text, d, step.relations), self.k_candidates
                )
            except QUESTION_ERRORS as err:
                return f"{failure('candidate model', err)} (from anchor {d!r})"
            if checked_candidates(c).abstained:
                reasons.append(c.abstain_reason)
                continue
            names += [(d, a) for a in c.entities]
            with np.errstate(divide="ignore"):  # an anchor of weight 0 (inject_mass = 1)
                lp.append(np.log(w) + c.log_prior)
        if not names:
            return f"the model proposed nothing: {reasons[0] if reasons else 'no anchor'}"
        log_prior = np.concatenate(lp)
        log_prior = log_prior - logsumexp(log_prior)
        if step.relations:
            chains = claim_chains(names, step.relations)
            return GroundingProblem(text, chains, log_prior, anchors=tuple(anchors))
        # free text without a relation chain: answers grounded by walks from the anchors
        merged = Candidates.from_scores([a for _, a in names], log_prior)
        return GroundingProblem(
            text, merged.entities, merged.log_prior, anchors=tuple(anchors), max_hops=1
        )

    # ---------------------------------------------------------------- the loop

    def answer(
        self, question: Any, inject: Mapping[str, str] | None = None, inject_mass: float = 0.5
    ):
        """Run one question (see :meth:`answer_batch`)."""
        return self.answer_batch([question], [inject or {}], inject_mass)[0]

    def answer_batch(
        self,
        questions: Sequence,
        inject: Sequence[Mapping[str, str]] | None = None,
        inject_mass: float = 0.5,
    ) -> list[PankRAGOutcome]:
        """Plan and resolve every question; steps of the same level across questions are
        grounded in one batch. ``inject[i]`` maps a step id of question ``i`` to a wrong entity
        injected into that step's answers (``inject_mass`` of the probability, in (0, 1])."""
        questions = check_questions(questions)
        inject = list(inject) if inject is not None else [{}] * len(questions)
        if len(inject) != len(questions):
            raise ValueError(f"{len(inject)} injections for {len(questions)} questions")
        inject_mass = check_real("inject_mass", inject_mass, low=0.0, high=1.0, open_low=True)
        planned = [self._plan(q) for q in questions]
        plans = [p if isinstance(p, Plan) else None for p in planned]
        for plan, inj in zip(plans, inject):
            unknown = [s for s in inj if plan is not None and s not in plan.by_id]
            if unknown:
                raise ValueError(f"injection into unknown steps {unknown} of {plan.question!r}")
        levels = [p.levels() if p is not None else [] for p in plans]
        done: list[dict[str, StepOutcome]] = [{} for _ in questions]
        for depth in range(max((len(lv) for lv in levels), default=0)):
            jobs = [(i, sid) for i, lv in enumerate(levels) if depth < len(lv) for sid in lv[depth]]
            self._run_level(jobs, plans, done)
            for i, sid in jobs:
                if sid in inject[i]:
                    done[i][sid] = with_injected(done[i][sid], inject[i][sid], float(inject_mass))
        outcomes = [
            PankRAGOutcome(q, p, d) if p is not None else PankRAGOutcome(q, None, {}, why)
            for q, p, d, why in zip(questions, plans, done, planned)
        ]
        return done_batch(outcomes, self.release_programs)

    def _plan(self, question) -> Plan | str:
        """The question's plan, or why the planner failed."""
        try:
            plan = self.planner.plan(question)
        except QUESTION_ERRORS as err:
            return failure("planner", err)
        if not isinstance(plan, Plan):
            raise TypeError(f"the planner returned {type(plan).__name__}, not a Plan")
        return plan

    def _run_level(self, jobs, plans, done) -> None:
        """Resolve one level's steps of every question: anchors, one batched retrieval per
        retriever, reranking, candidates, one batched grounding."""
        anchored: list[tuple[int, str, _Anchored]] = []
        for i, sid in jobs:
            got = self._anchored(plans[i].by_id[sid], done[i])
            if isinstance(got, StepOutcome):
                done[i][sid] = got
            else:
                anchored.append((i, sid, got))
        pools = retrieve_or_fail(
            self.retriever,
            [self.depth(a.step, a.mode) for _, _, a in anchored],
            [Query(a.text, anchors=a.anchors) for _, _, a in anchored],
            self.pool * self.k_nodes,
            lambda r: r,
        )
        pending: list[tuple[int, str, _Anchored, Retrieval, GroundingProblem]] = []
        for (i, sid, a), pooled in zip(anchored, pools):
            ready = self._prepare(a, pooled)
            if isinstance(ready, StepOutcome):
                done[i][sid] = ready
            else:
                pending.append((i, sid, a, *ready))
        results = ground_or_fail(
            [p for *_, p in pending],
            [got.evidence for *_, got, _ in pending],
            self.config,
            self.realization,
        )
        for (i, sid, a, got, _), res in zip(pending, results):
            args = (a.step, a.text, a.anchors, a.weights, a.mode, got)
            if isinstance(res, str):
                done[i][sid] = failed(*args, res)
                continue
            done[i][sid] = StepOutcome(*args, res, *res.answer_probabilities())

    def _anchored(self, step: SubQuestion, done: Mapping[str, StepOutcome]):
        """The step's text (its slots filled), anchors and mode (an :class:`_Anchored`), or
        its failed :class:`StepOutcome` with the reason."""
        answers = {d: done[d].answer or "" for d in step.depends_on}
        text = step.fill(answers) if step.depends_on else step.text
        anchors, weights, why = self._anchors(step, done)
        mode = self.step_mode(step)
        if why is not None:
            return failed(step, text, anchors, weights, mode, None, why)
        return _Anchored(step, text, anchors, weights, mode)

    def _prepare(self, a: _Anchored, pooled: Retrieval | str):
        """The step's kept retrieval and grounding problem, or its failed
        :class:`StepOutcome` with the reason."""
        fail = functools.partial(failed, a.step, a.text, a.anchors, a.weights, a.mode)
        if isinstance(pooled, str):
            return fail(None, pooled)
        try:
            got = self._rerank(a.step, a.anchors, a.weights, pooled)
        except QUESTION_ERRORS as err:
            return fail(None, failure("retrieval", err))
        try:
            problem = self._problem(a.step, a.text, a.anchors, a.weights)
        except QUESTION_ERRORS as err:
            problem = failure("grounding", err)
        if not isinstance(problem, str):
            problem = unknown_entities(problem, got.evidence) or problem
        if isinstance(problem, str):
            return fail(got, problem)
        return got, problem


@dataclasses.dataclass(frozen=True)
class _Anchored:
    """A step with its text filled, its anchors (and weights) and its retrieval mode."""

    step: SubQuestion
    text: str
    anchors: tuple[str, ...]
    weights: np.ndarray
    mode: str
