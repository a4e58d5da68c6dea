r"""Question planners: a question in, a :class:`~grounding.plans.Plan` (sub-question DAG) out.

The planners behind one protocol (``plan(question) -> Plan``), after *PankRAG: Enhancing
Graph Retrieval via Globally Aware Query Resolution and Dependency-Aware Reranking Mechanism*
(Li, Liu, Shan, Huang, Gong and Li):

- :class:`TemplatePlanner`: for templated knowledge-graph questions (a topic entity and a
  relation chain, :class:`~grounding.datasets.KGQuestion`): one step per relation, each
  following its relation from the previous step's answers. Exact by construction: it reads
  the chain the question was generated from; it does not parse the text.
- :class:`FlatPlanner`: no decomposition, the whole question as one step (an ablation).
- :class:`PredictedPathPlanner`: the blind counterpart of :class:`TemplatePlanner`: one step
  per relation of the path a :class:`~grounding.plans.RelationChainPredictor` predicts from a
  :class:`~grounding.query.BlindQuestion` (text and topic entity, nothing gold).
- :class:`HeuristicPlanner`: free text, offline. Rewrites embedded descriptions innermost
  first (English nests them to the right) into steps whose answers fill ``#k`` slots:
  relative clauses (``the state where X is located``), ``of``-chains (``the director of X``)
  and possessives (``X's birthplace``). A baseline, scored against human decompositions.
- :class:`LLMPlanner`: any OpenAI-compatible endpoint, in two phases: bottom-up (the atomic
  sub-questions, which ones need which earlier answers: *progress*; the others are
  *parallel*), then top-down (each sub-question rewritten to stand on its own given the
  answers it refers to). A reply that is not a valid plan raises :class:`PlanError`, or, with
  ``fallback="flat"``, gives a one-step plan of the whole question with the reason in
  :attr:`Plan.fallback`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from grounding._checks import check_int
from grounding.graph import INVERSE_SUFFIX
from grounding.hypergraph import KnowledgeHypergraph, hop_relations
from grounding.plans._base import PlanError, Planner, _escape
from grounding.plans._common import _chain, _example, _role_chain
from grounding.plans._llm import DECOMPOSE_PROMPT, REWRITE_PROMPT, LLMPlanner
from grounding.plans.dag import Plan, SubQuestion, plan_from_decomposition
from grounding.query import BlindQuestion, relation_phrase

__all__ = [
    "Planner",
    "PlanError",
    "TemplatePlanner",
    "FlatPlanner",
    "PredictedPathPlanner",
    "HeuristicPlanner",
    "LLMPlanner",
    "HypergraphTemplatePlanner",
    "DECOMPOSE_PROMPT",
    "REWRITE_PROMPT",
]


class TemplatePlanner:
    """One step per relation of a templated question's chain (exact by construction).

    Step ``q1`` asks for the first relation of the topic entity (its anchor); step ``qk``
    asks for relation ``k`` of step ``q(k-1)``'s answers (the slot ``{q(k-1)}``). Each step
    carries its relation in :attr:`SubQuestion.relations`.

    Args:
        relation_labels: a label per relation name (its
            :func:`~grounding.graph.inverse_relation` reads it backwards).
        texts: optional display text per entity name (default: the name).

    References:
        Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally Aware
            Query Resolution and Dependency-Aware Reranking Mechanism", 2025 (arXiv:2506.11106):
            Sec. 2.2 (its plans; exact steps in place of its LLM's).

    Example:
        >>> from types import SimpleNamespace
        >>> q = SimpleNamespace(text="What is the capital of the country of X?", topic="X",
        ...                     chain=("country", "capital"))
        >>> p = TemplatePlanner({"country": "country", "capital": "capital"}).plan(q)
        >>> [(s.text, s.relations) for s in p.steps]
        [('What is the country of X?', ('country',)), ('What is the capital of {q1}?', ('capital',))]
    """

    name = "template"

    def __init__(self, relation_labels: Mapping[str, str], texts: Mapping[str, str] | None = None):
        self.labels = dict(relation_labels)
        self.texts = dict(texts or {})

    def _label(self, relation: str) -> str:
        base = relation[: -len(INVERSE_SUFFIX)] if relation.endswith(INVERSE_SUFFIX) else relation
        if base not in self.labels:
            raise PlanError(f"relation {relation!r} has no label")
        return self.labels[base]

    def plan(self, question: Any) -> Plan:
        chain = _given_chain(question)
        topic = getattr(question, "topic", None)
        if not chain or not topic:
            raise PlanError(
                "the template planner needs a question with a topic entity and a relation "
                f"chain, got {question!r}"
            )
        return Plan(question.text, self.chain_steps(topic, chain))

    def chain_steps(self, topic: str, chain: Sequence[str]) -> tuple[SubQuestion, ...]:
        """The steps ``q1 .. qT`` of ``chain`` from ``topic``: one relation each, step ``k``
        anchored at the answers of step ``k - 1`` (its slot)."""
        steps = []
        subject = _escape(self.texts.get(topic, topic))
        for k, rel in enumerate(chain, 1):
            label = _escape(self._label(rel))
            phrase = relation_phrase(label, subject, inverse=rel.endswith(INVERSE_SUFFIX))
            text = f"What is {phrase}?"  # the benchmark questions' phrasing
            deps = (f"q{k - 1}",) if k > 1 else ()
            anchors = (topic,) if k == 1 else ()
            steps.append(SubQuestion(f"q{k}", text, deps, anchors=anchors, relations=(rel,)))
            subject = "{" + f"q{k}" + "}"
        return tuple(steps)


def _given_chain(question: Any) -> tuple[str, ...]:
    """A question's relation chain (``()`` when it has none); a bare string is a
    ``TypeError`` (its characters would be read as one-letter relations)."""
    chain = getattr(question, "chain", None)
    return () if chain is None else _chain(chain, _example(None, question), empty=True)


class FlatPlanner:
    """No decomposition: the whole question as one step (the "without DAG" ablation), anchored
    at its topic entity and following its whole relation chain when it has one."""

    name = "flat"

    def plan(self, question: Any) -> Plan:
        text = question if isinstance(question, str) else question.text
        if not isinstance(text, str) or not text.strip():
            raise PlanError("the question is empty")
        topic = getattr(question, "topic", None)
        chain = _given_chain(question)
        step = SubQuestion("q1", _escape(text), anchors=(topic,) if topic else (), relations=chain)
        return Plan(text, (step,))


class PredictedPathPlanner:
    """A blind plan: one step per relation of the relation path a fitted
    :class:`~grounding.plans.RelationChainPredictor` predicts from the question's text and topic
    entity (a :class:`~grounding.query.BlindQuestion`: the planner never sees a gold chain).

    The steps read as :class:`TemplatePlanner`'s (step ``q1`` anchored at the topic, step
    ``qk`` at the answers of ``q(k-1)``), with the *predicted* relations in place of the gold
    ones; ``flat=True`` gives the one-step ablation instead (the whole question, anchored at the
    topic, following the whole predicted path). The predicted path is the predictor's most
    probable one (top-1): a plan is one DAG, as in PankRAG, so competing paths do not meet
    inside it (:meth:`predicted` gives the path).

    Args:
        predictor: a fitted relation-path predictor (training questions only).
        relation_labels: a label per relation name, as for :class:`TemplatePlanner`.
        texts: optional display text per entity name.
        flat: one step with the whole path (the "without DAG" ablation) instead of one per
            relation.

    Raises:
        TypeError: ``predictor`` has no ``predict`` (at construction) or the question is not a
            :class:`~grounding.query.BlindQuestion` (at :meth:`plan`).
        PlanError: no relation path is predicted from the question's topic.

    References:
        - Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally
          Aware Query Resolution and Dependency-Aware Reranking Mechanism", 2025
          (arXiv:2506.11106): Sec. 2.2 (a plan of sub-questions, here one per predicted
          relation).
        - Luo, Li, Haffari & Pan, "Reasoning on Graphs: Faithful and Interpretable Large
          Language Model Reasoning", 2024 (relation paths planned from the question).

    Example:
        >>> import numpy as np
        >>> from types import SimpleNamespace as Q
        >>> from grounding.plans import RelationChainPredictor
        >>> from grounding.query import BlindQuestion
        >>> vocab = ["capital", "country"]
        >>> def encode(texts):
        ...     return np.array([[t.count(w) + 0.1 for w in vocab] for t in texts])
        >>> labels = {"capital": "capital", "country": "country"}
        >>> pred = RelationChainPredictor(encode, labels).fit(
        ...     [Q(text="the capital of the country of A", chain=("country", "capital")),
        ...      Q(text="the country of B", chain=("country",))])
        >>> plan = PredictedPathPlanner(pred, labels).plan(
        ...     BlindQuestion("What is the capital of the country of C?", "C"))
        >>> [(s.text, s.relations) for s in plan.steps]
        [('What is the country of C?', ('country',)), ('What is the capital of {q1}?', ('capital',))]
    """

    name = "predicted-path"

    def __init__(
        self,
        predictor: Any,
        relation_labels: Mapping[str, str],
        texts: Mapping[str, str] | None = None,
        *,
        flat: bool = False,
    ):
        if not callable(getattr(predictor, "predict", None)):
            raise TypeError(f"predictor must be a fitted chain predictor, got {predictor!r:.100}")
        if not isinstance(flat, bool):
            raise TypeError(f"flat must be a bool, got {flat!r:.100}")
        self.predictor, self.flat = predictor, flat
        self._template = TemplatePlanner(relation_labels, texts)
        if flat:
            self.name = "predicted-path-flat"

    def predicted(self, question: BlindQuestion) -> tuple[str, ...]:
        """The most probable relation path predicted for ``question``.

        Raises:
            TypeError: ``question`` is not a :class:`~grounding.query.BlindQuestion`.
            PlanError: no path is predicted from its topic.
        """
        if not isinstance(question, BlindQuestion):
            raise TypeError(
                "PredictedPathPlanner plans BlindQuestion objects (grounding.query.blind(q)), "
                f"got {type(question).__name__}"
            )
        (top,) = self.predictor.predict([question], k=1)
        if not top:
            raise PlanError(
                f"no relation path is predicted from the topic {question.topic!r} (no relation "
                "the predictor proposes leaves it in the graph)"
            )
        return _chain(top[0][0], f"the predicted chain of {_example(None, question)}")

    def plan(self, question: BlindQuestion) -> Plan:
        path = self.predicted(question)
        if self.flat:
            step = SubQuestion(
                "q1", _escape(question.text), anchors=(question.topic,), relations=path
            )
            return Plan(question.text, (step,))
        return Plan(question.text, self._template.chain_steps(question.topic, path))


# --------------------------------------------------------------------------- free text

_HEAD = r"(?:[a-z][a-z'-]* ){0,2}[a-z][a-z'-]*"  # one to three lower-case words
_NAME = (
    r"(?:#\d+|[A-Z0-9][\w'.&-]*(?: (?:(?:of|the|and|de|in|for|on|a|an|to|&) )*[A-Z0-9][\w'.&-]*)*)"
)
_RELATIVE = re.compile(
    rf"\b(?:the|a|an) (?P<head>{_HEAD}) (?P<rel>where|that|which|who|whose|when|containing|having|"
    rf"(?:in|on|at|for|by|from|of) which|{_NAME} (?:is|was|are|were)) (?P<rest>[^?]+)$"
)
_OF = re.compile(rf"\bthe (?P<head>{_HEAD}) of (?P<name>{_NAME})")
_POSSESSIVE = re.compile(rf"(?P<name>{_NAME}) ?'s (?P<head>{_HEAD})")
_STOP_HEADS = {"one", "some", "all", "most", "many", "part", "name", "type", "kind"}
_FILLER = {"who", "what", "which", "where", "when", "is", "was", "are", "were", "the", "did", "do"}


class HeuristicPlanner:
    """An offline planner for free text: embedded descriptions become earlier steps.

    Repeatedly, the right-most (innermost) embedded description is cut out of the question,
    asked as its own step, and replaced by its answer's slot ``#k``:

    - a relative clause to the end of the question, ``the <head> where|that|which|who|whose
      <clause>`` -> ``What is the <head> <relative> <clause>?``;
    - an ``of``-phrase, ``the <head> of <Name or #k>`` -> ``What is the <head> of <...>?``;
    - a possessive, ``<Name or #k>'s <head>`` -> ``What is the <head> of <...>?``;

    where ``<head>`` is one to three lower-case words and ``<Name>`` a capitalized name. It
    stops when nothing matches, when a cut would leave no question around the slot, or at
    ``max_steps``. Every step is *specific* unless it starts with one of ``abstract_cues``.
    Parallel steps appear when a later cut does not contain an earlier slot.

    Example:
        >>> p = HeuristicPlanner().plan("Who was in charge of the city where August Bloedner died?")
        >>> [s.text for s in p.steps]
        ['What is the city where August Bloedner died?', 'Who was in charge of {q1}?']
    """

    name = "heuristic"

    def __init__(
        self,
        max_steps: int = 4,
        abstract_cues: Sequence[str] = ("what are the main", "what themes", "summarize", "overall"),
    ):
        self.max_steps = check_int(max_steps, "max_steps")
        self.abstract_cues = tuple(c.lower() for c in abstract_cues)

    def decompose(self, question: str) -> list[str]:
        """The sub-question texts, ``#k`` referring to earlier answers (last: the question)."""
        if not isinstance(question, str) or not question.strip():
            raise PlanError("the question is empty")
        text = " ".join(question.strip().split()).rstrip("?").strip()
        subs: list[str] = []
        while len(subs) < self.max_steps - 1:
            cut = self._innermost(text)
            if cut is None:
                break
            start, end, sub = cut
            subs.append(sub)
            text = f"{text[:start]}#{len(subs)}{text[end:]}"
        return [*subs, text + "?"]

    def _innermost(self, text: str) -> tuple[int, int, str] | None:
        found = []
        for m in _RELATIVE.finditer(text):
            rest, end = m["rest"], m.end()
            if not _asks_more(text[: m.start()]) and " " in rest:  # "When did the X who ... die?"
                rest, verb = rest.rsplit(" ", 1)  # the clause ends before the main verb
                end -= len(verb) + 1
            found.append((m.start(), end, f"What is the {m['head']} {m['rel']} {rest}?"))
        for pattern in (_OF, _POSSESSIVE):
            for m in pattern.finditer(text):
                found.append((m.start(), m.end(), f"What is the {m['head']} of {m['name']}?"))
        found = [
            f
            for f in found
            if f[2].split()[3] not in _STOP_HEADS  # "one of", "some of": not a relation
            and _asks_more(text[: f[0]] + text[f[1] :])  # a question stays around it
        ]
        return max(found, key=lambda f: (f[0], -f[1])) if found else None

    def plan(self, question: Any) -> Plan:
        text = question if isinstance(question, str) else question.text
        subs = self.decompose(text)
        flags = [s.lower().startswith(self.abstract_cues) for s in subs]
        return plan_from_decomposition(text, subs, flags, strict=False)  # "#9 Dream" is a title


def _asks_more(rest: str) -> bool:
    """Whether the text left around a cut still asks something (not just "Who is #k")."""
    return any(w not in _FILLER for w in re.findall(r"[a-z0-9]+", rest.lower()))


class HypergraphTemplatePlanner:
    """One step per hop of a templated hypergraph question (exact by construction: it reads the
    role chain the question was generated from). Step ``k`` follows
    :func:`~grounding.hypergraph.hop_relations` of hop ``k`` from step ``k-1``'s answers.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): plan initialization (exact steps in place
            of its LLM's).
    """

    name = "hypergraph-template"

    def __init__(self, hypergraph: KnowledgeHypergraph):
        self.hypergraph = hypergraph

    def plan(self, question: Any) -> Plan:
        roles = getattr(question, "roles", None)
        if roles is None:
            raise ValueError(f"the question has no role chain: {question!r:.200}")
        roles = _role_chain(roles, _example(None, question))
        texts = self.hypergraph.entity_texts
        subject = texts[self.hypergraph.entity_index(question.topic)].replace("{", "{{").replace(
            "}", "}}"
        )  # fmt: skip
        steps = []
        for k, (a, b) in enumerate(roles, 1):
            text = (
                f"What is the {self.hypergraph.role_text(b)} of the statement whose {self.hypergraph.role_text(a)} is "
                f"{subject}?"
            )
            deps = (f"q{k - 1}",) if k > 1 else ()
            steps.append(
                SubQuestion(
                    f"q{k}",
                    text,
                    deps,
                    anchors=(question.topic,) if k == 1 else (),
                    relations=hop_relations(a, b),
                )  # fmt: skip
            )
            subject = "{" + f"q{k}" + "}"
        return Plan(question.text, tuple(steps))
