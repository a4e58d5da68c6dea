r"""PRoH, grounded: planning and reasoning over a knowledge hypergraph, each sub-question's answer
paths found by EWO-guided beam search and its answers grounded by :func:`grounding.ground`.

After *PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
Generation* (arXiv:2510.12434); no code has been released, so this is a first public
implementation, offline (no LLM), with the choices below stated where the paper gives none.

1. **Anchoring**: the question's topic entity and its ``n_targets`` target hyperedges (most
   similar to the question).
2. **Plan context** (:func:`grounding.retrieval.plan_context`): a ``plan_depth``-hop sketch
   around the anchors; planners that accept a context (the LLM planner) get its text; the
   beam search favors its hyperedges (``context_bonus``).
3. **Plans**: up to ``n_plans`` distinct plans from the planner (a templated planner gives
   one), each reduced to its Hasse diagram (:meth:`~grounding.plans.Plan.transitive_reduction`).
   A planner with ``plans(question, k)`` (e.g. :class:`~grounding.plans.RoleChainPlanner`, one
   plan per predicted role chain) gives each plan a probability :math:`w`; its trajectories
   start at score :math:`\log w`, so competing plans meet in the final mixture.
4. **State search** (``search="dfs"`` or ``"bfs"``): a state is a plan, the number of levels
   resolved and one chosen answer per resolved step, with the sum of their log-probabilities;
   a transition resolves the next level, branching on each step's ``branch`` most probable
   answers; on the last level it yields a *solution*, the final step's answer distribution
   with its state's score. DFS pops the best child first and stops at ``max_solutions``
   (``K``) solutions; BFS expands every state level by level (at most ``max_states``) and keeps
   the ``K`` best. ``states_visited`` counts the states popped.
5. **A step** from its anchors (the entities it names, and the answers chosen for the steps it
   depends on; a step that has neither, as a free-text planner's first steps, is anchored at
   the entities its text names, :meth:`~grounding.retrieval.HypergraphIndex.mentions`):
   EWO-guided beam search (:func:`grounding.retrieval.beam_search`) over the observed
   hypergraph; candidates are the members of the paths' last hyperedges with prior
   :math:`\propto \exp(\text{score}/T)`; each candidate ``a`` reached from anchor ``d`` is the
   claim chain ``d -role_in-> * -role_out^-1-> a`` over the bipartite graph of the hyperedges
   the paths visited (Eqs. (10)-(13) on hyperedge paths), grounded by ``ground``; the step's
   distribution is the posterior's marginal over ``a``.

The answer distribution mixes the solutions' final distributions by their scores.

Failures are per question (:mod:`grounding.qa.pipeline`): a planner or refiner that
fails (a refiner must return one score in ``[0, 1]`` per entity text), or a question the index
cannot read, gives that question an outcome without answers whose reason names the failure; a
step
that names no entity of the hypergraph, or whose grounding fails, is a dead end of its
trajectory (the outcome's reason, when no trajectory reaches an answer, quotes the first dead
end). The configuration is checked when the system is built.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding.plans import Plan, Planner, SubQuestion
from grounding.problem import GroundingProblem, Realization
from grounding.qa._checks import (
    check_bool,
    check_config,
    check_has,
    check_questions,
    check_real,
)
from grounding.qa._hypergraph_outcomes import PRoHOutcome, Solution, StepAnswer, mix
from grounding.qa.pipeline import (
    QUESTION_ERRORS,
    claim_chains,
    done_batch,
    failure,
    ground_or_fail,
)
from grounding.retrieval import (
    HypergraphIndex,
    beam_search,
    plan_context,
    target_hyperedges,
)
from grounding.retrieval.hyperedge_search import path_answers
from grounding.solver import GroundingConfig

__all__ = ["PRoH", "PRoHOutcome", "StepAnswer", "Solution"]


class _QuestionFailure(Exception):
    """A question cannot go on (its planner or refiner failed): the reason."""


@dataclasses.dataclass(frozen=True)
class _State:
    plan: int
    level: int
    chosen: tuple[tuple[str, str], ...]
    score: float


class PRoH:
    """PRoH over one observed knowledge hypergraph (module docstring; defaults: the paper's
    ``d_p = 3``, ``d_max = 3``, ``n_0 = 2``, ``K = 2``; beam width 8, two branches per step,
    20 candidates, ``T = 0.1``, 5 target hyperedges, context width 20 and bonus 0.5 are this
    package's choices: the paper gives none).

    Args:
        planner: builds plans; one with ``accepts_context = True`` gets the plan context text.
        index: the observed hypergraph's :class:`~grounding.retrieval.HypergraphIndex`.
        search: ``"dfs"`` or ``"bfs"``.
        use_ewo, use_context, use_targets: the three ablations of the paper.
        config: the grounding settings (:class:`~grounding.GroundingConfig`).
        refine: optional ``(question, entity texts) -> [0, 1] scores`` (e.g.
            :class:`~grounding.retrieval.LLMRelevance`) replacing the relevance of the (at most
            ``max_refined``) entities whose embedding relevance reaches ``refine_threshold``.
        realization: an optional :class:`~grounding.Realization` for ``ground``.
        release_programs: release every compiled program of the process after each
            :meth:`answer_batch` (:func:`grounding.programs.release_programs`: the memory of
            a long-lived process returns to what it was; the next batch compiles again).

    Raises:
        TypeError, ValueError: an argument is of the wrong kind or out of range (the message
            names it).

    References:
        - "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for
          Retrieval-Augmented Generation", 2025 (arXiv:2510.12434).
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eqs. (7), (10)-(13).
    """

    def __init__(
        self,
        planner: Planner,
        index: HypergraphIndex,
        config: GroundingConfig,
        *,
        search: Literal["dfs", "bfs"] = "dfs",
        n_plans: int = 2,
        max_solutions: int = 2,
        branch: int = 2,
        plan_depth: int = 3,
        context_width: int = 20,
        context_bonus: float = 0.5,
        max_depth: int = 3,
        width: int = 8,
        n_targets: int = 5,
        k_candidates: int = 20,
        temperature: float = 0.1,
        max_states: int = 200,
        use_ewo: bool = True,
        use_context: bool = True,
        use_targets: bool = True,
        refine: Callable[[str, list[str]], ArrayLike] | None = None,
        refine_threshold: float = 0.3,
        max_refined: int = 50,
        realization: Realization | None = None,
        release_programs: bool = False,
    ):
        self.config, self.realization = check_config("PRoH", config, realization)
        self.release_programs = check_bool("release_programs", release_programs)
        if search not in ("dfs", "bfs"):
            raise ValueError(f"search must be 'dfs' or 'bfs', got {search!r:.100}")
        ints = dict(n_plans=n_plans, max_solutions=max_solutions, branch=branch,
                    plan_depth=plan_depth, context_width=context_width, max_depth=max_depth,
                    width=width, n_targets=n_targets, k_candidates=k_candidates,
                    max_states=max_states, max_refined=max_refined)  # fmt: skip
        for name, v in ints.items():
            setattr(self, name, check_int(v, name))
        self.temperature = check_real("temperature", temperature, low=0.0, open_low=True)
        self.context_bonus = check_real("context_bonus", context_bonus, low=0.0)
        self.refine_threshold = check_real("refine_threshold", refine_threshold, low=0.0, high=1.0)
        for name, v in (("use_ewo", use_ewo), ("use_context", use_context),
                        ("use_targets", use_targets)):  # fmt: skip
            setattr(self, name, check_bool(name, v))
        if refine is not None and not callable(refine):
            raise TypeError(f"refine must be a function or None, got {refine!r:.100}")
        check_has("planner", planner, "plan")
        if not isinstance(index, HypergraphIndex):
            raise TypeError(f"index must be a HypergraphIndex, got {index!r:.100}")
        self.planner, self.index, self.search = planner, index, search
        self.kh = index.hypergraph
        self.refine = refine

    # ---------------------------------------------------------------- one question

    def answer(self, question: Any) -> PRoHOutcome:
        """Answer one question (a failure of the question, e.g. of its planner or refiner: an
        outcome without answers whose reason names the failure)."""
        try:
            return self._answer(question)
        except _QuestionFailure as why:
            reason = str(why)
        except QUESTION_ERRORS as err:
            reason = failure("PRoH", err)
        return PRoHOutcome(question, (), (), (), np.zeros(0), 0, reason)

    def _answer(self, question) -> PRoHOutcome:
        kh = self.kh
        if not kh.has_entity(question.topic):
            return PRoHOutcome(
                question, (), (), (), np.zeros(0), 0, f"topic {question.topic!r} is in no hyperedge"
            )
        topic = kh.entity_index(question.topic)
        qv = self.index.embed(question.text)
        targets = target_hyperedges(self.index, qv, self.n_targets) if self.use_targets else ()
        context, sketch = None, ""
        if self.use_context:
            context, sketch = plan_context(
                self.index,
                [topic],
                qv,
                targets=targets,
                depth=self.plan_depth,
                width=self.context_width,
            )
        weighted = self._plans(question, sketch)
        plans = [p for p, _ in weighted]
        memo: dict = {}
        solutions, visited = self._search(weighted, context, memo)
        grounded = [s for s in memo.values() if s.problem is not None]
        budget = dict(
            ground_calls=len(grounded),
            hyperedges_read=len({h for s in grounded for p in s.paths for h in p.edges}),
        )
        if not solutions:
            dead = next((s.reason for s in memo.values() if s.reason), None)
            why = "no reasoning trajectory reached an answer" + (f" ({dead})" if dead else "")
            return PRoHOutcome(question, tuple(plans), (), (), np.zeros(0), visited, why, **budget)
        order, probs = mix(
            [s.score for s in solutions], [(s.final.answers, s.final.probs) for s in solutions]
        )
        return PRoHOutcome(
            question, tuple(plans), tuple(solutions), order, probs, visited, **budget
        )

    def answer_batch(self, questions: Sequence) -> list[PRoHOutcome]:
        """:meth:`answer` of every question (a failing question does not stop the others)."""
        outcomes = [self.answer(q) for q in check_questions(questions)]
        return done_batch(outcomes, self.release_programs)

    def _plans(self, question, sketch: str) -> list[tuple[Plan, float]]:
        """Up to ``n_plans`` distinct plans and their log-probabilities: a planner with
        ``plans(question, k)`` gives ``(plan, probability)`` pairs (e.g. one per predicted role
        chain); any other is asked ``n_plans`` times, each plan log-probability 0."""
        try:
            if hasattr(self.planner, "plans"):
                got = [(p, float(np.log(w))) for p, w in self.planner.plans(question, self.n_plans)]
            elif getattr(self.planner, "accepts_context", False):
                got = [(self.planner.plan(question, context=sketch), 0.0)
                       for _ in range(self.n_plans)]  # fmt: skip
            else:
                got = [(self.planner.plan(question), 0.0) for _ in range(self.n_plans)]
        except QUESTION_ERRORS as err:
            raise _QuestionFailure(failure("planner", err)) from err
        if not got:
            raise _QuestionFailure("planner: it gave no plan")
        plans: list[tuple[Plan, float]] = []
        for plan, lp in got[: self.n_plans]:
            if not isinstance(plan, Plan):
                raise TypeError(f"the planner returned {type(plan).__name__}, not a Plan")
            plan = plan.transitive_reduction()
            if all(plan.to_dict() != p.to_dict() for p, _ in plans):
                plans.append((plan, lp))
        return plans

    # ---------------------------------------------------------------- state search

    def _search(self, weighted: list[tuple[Plan, float]], context, memo):
        plans = [p for p, _ in weighted]
        start = [_State(i, 0, (), lp) for i, (_, lp) in enumerate(weighted)]
        if self.search == "dfs":  # the most probable plan is popped first
            start.sort(key=lambda s: s.score)
        frontier: deque = deque(start)
        solutions: list[Solution] = []
        visited = 0
        while frontier and visited < self.max_states:
            state = frontier.pop() if self.search == "dfs" else frontier.popleft()
            visited += 1
            if isinstance(state, Solution):
                solutions.append(state)
                if self.search == "dfs" and len(solutions) >= self.max_solutions:
                    break
                continue
            children = self._expand(plans[state.plan], state, context, memo)
            if self.search == "dfs":  # the best child is popped first
                frontier.extend(sorted(children, key=lambda c: c.score))
            else:
                frontier.extend(children)
        solutions.sort(key=lambda s: -s.score)
        return solutions[: self.max_solutions], visited

    def _expand(self, plan: Plan, state: _State, context, memo) -> list:
        levels = plan.levels()
        chosen = dict(state.chosen)
        resolved = {}
        for sid in levels[state.level]:
            step = plan.by_id[sid]
            resolved[sid] = self._step(step, chosen, context, memo)
            if not resolved[sid].answers:
                return []  # a dead end: this trajectory cannot resolve the step
        if state.level == len(levels) - 1:
            return [Solution(plan, chosen, state.score, resolved[plan.final])]
        options = [
            [(sid, a, float(np.log(p))) for a, p in zip(r.answers[: self.branch], r.probs)]
            for sid, r in resolved.items()
        ]
        out = []
        for combo in itertools.product(*options):
            new = dict(chosen) | {sid: a for sid, a, _ in combo}
            score = state.score + sum(lp for _, _, lp in combo)
            out.append(_State(state.plan, state.level + 1, tuple(sorted(new.items())), score))
        return out

    def _step(self, step: SubQuestion, chosen: dict[str, str], context, memo) -> StepAnswer:
        kh = self.kh
        names = [*step.anchors, *(chosen[d] for d in step.depends_on)]
        texts = {d: kh.entity_texts[kh.entity_index(chosen[d])] for d in step.depends_on}
        text = step.fill(texts)
        if not names:  # e.g. a free-text planner's step: the entities its text names
            names = [kh.entities[e] for e in self.index.mentions(text)]
        key = (step.id, step.relations, text, tuple(names))
        if key not in memo:
            memo[key] = self._resolve(step, text, names, context)
        return memo[key]

    def _resolve(self, step: SubQuestion, text: str, names: list[str], context) -> StepAnswer:
        kh, index = self.kh, self.index
        unknown = [a for a in names if not kh.has_entity(a)]
        if not names or unknown:
            why = (
                f"step {step.id!r} names no entity the hypergraph holds"
                if not names
                else f"step {step.id!r}: anchors {unknown} are not entities of the hypergraph"
            )
            return StepAnswer((), np.zeros(0), (), None, None, why)
        anchors = [kh.entity_index(a) for a in names]
        qv = index.embed(text)
        paths = beam_search(
            index, anchors, [1.0 / len(anchors)] * len(anchors), qv,
            width=self.width, max_depth=self.max_depth, use_ewo=self.use_ewo,
            context=context, context_bonus=self.context_bonus, relevance=self._relevance(text, qv),
        )  # fmt: skip
        ents, scores = path_answers(index, paths, exclude=anchors)
        ents, scores = ents[: self.k_candidates], scores[: self.k_candidates]
        if not len(ents):
            return StepAnswer((), np.zeros(0), tuple(paths), None, None, "no path from the anchors")
        log_prior = scores / self.temperature
        problem = self._problem(step, text, names, [kh.entities[e] for e in ents], log_prior)
        evidence = index.evidence(h for p in paths for h in p.edges)  # hyperedges visited
        [result] = ground_or_fail([problem], [evidence], self.config, self.realization)
        if isinstance(result, str):
            return StepAnswer((), np.zeros(0), tuple(paths), None, problem, result)
        order, probs = result.answer_probabilities()
        return StepAnswer(order, probs, tuple(paths), result, problem)

    def _relevance(self, text: str, qv: np.ndarray) -> np.ndarray | None:
        """The entities' relevance with the most relevant ones refined (``None``: no refiner)."""
        if self.refine is None:
            return None
        rho = self.index.entity_relevance(qv)
        top = np.flatnonzero(rho >= self.refine_threshold)
        top = top[np.argsort(-rho[top], kind="stable")][: self.max_refined]
        if len(top):
            texts = [self.index.entity_context[e] for e in top.tolist()]
            try:
                rho[top] = _refined(self.refine(text, texts), len(texts))
            except QUESTION_ERRORS as err:
                raise _QuestionFailure(failure("refine", err)) from err
        return rho

    def _problem(self, step, text, anchors, answers, log_prior) -> GroundingProblem:
        """The step's candidates: answers from the anchors along its relations, or (free
        text) answers one hyperedge away from the anchors."""
        lp = np.asarray(log_prior, np.float64)
        if not step.relations:  # free text: answers one hyperedge (two bipartite edges) away
            return GroundingProblem(text, tuple(answers), lp - logsumexp(lp),
                                    anchors=tuple(anchors), max_hops=2)  # fmt: skip
        cands = claim_chains([(d, a) for d in anchors for a in answers], step.relations)
        lp = np.tile(lp, len(anchors)) - np.log(len(anchors))
        return GroundingProblem(text, cands, lp - logsumexp(lp))


def _refined(scores: object, n: int) -> np.ndarray:
    """The refiner's output as ``n`` scores in ``[0, 1]``; else a ``ValueError`` quoting it."""
    try:
        out = np.asarray(scores, np.float64)
    except (TypeError, ValueError):
        out = None
    if out is None or out.shape != (n,) or not ((out >= 0) & (out <= 1)).all():
        raise ValueError(
            f"refine must return {n} scores in [0, 1] (one per entity text), got {scores!r:.200}"
        )
    return out
