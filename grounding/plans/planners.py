r"""Question planners: a question in, a :class:`~grounding.plans.Plan` (sub-question DAG) out.

Three planners behind one protocol (``plan(question) -> Plan``), after *PankRAG: Enhancing
Graph Retrieval via Globally Aware Query Resolution and Dependency-Aware Reranking Mechanism*
(Li, Liu, Shan, Huang, Gong and Li):

- :class:`TemplatePlanner`: for templated knowledge-graph questions (a topic entity and a
  relation chain, :class:`~grounding.datasets.KGQuestion`): one step per relation, each
  following its relation from the previous step's answers. Exact by construction: it reads
  the chain the question was generated from; it does not parse the text.
- :class:`FlatPlanner`: no decomposition, the whole question as one step (an ablation).
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
from typing import Any, Literal, Protocol

from grounding._checks import check_int
from grounding.graph import INVERSE_SUFFIX
from grounding.hypergraph import KnowledgeHypergraph, hop_relations, parse_role
from grounding.llm import Endpoint, json_content
from grounding.plans.dag import Plan, SubQuestion, plan_from_decomposition

__all__ = [
    "Planner",
    "PlanError",
    "TemplatePlanner",
    "FlatPlanner",
    "HeuristicPlanner",
    "LLMPlanner",
    "HypergraphTemplatePlanner",
    "DECOMPOSE_PROMPT",
    "REWRITE_PROMPT",
]


class PlanError(ValueError):
    """A planner could not produce a valid plan (the message says why)."""


class Planner(Protocol):
    """Anything that plans: ``plan(question) -> Plan``."""

    name: str

    def plan(self, question: Any) -> Plan: ...


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


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
        chain = tuple(getattr(question, "chain", ()) or ())
        topic = getattr(question, "topic", None)
        if not chain or not topic:
            raise PlanError(
                "the template planner needs a question with a topic entity and a relation "
                f"chain, got {question!r}"
            )
        steps = []
        subject = _escape(self.texts.get(topic, topic))
        for k, rel in enumerate(chain, 1):
            label = _escape(self._label(rel))
            if rel.endswith(INVERSE_SUFFIX):
                text = f"What is the entity whose {label} is {subject}?"
            else:
                text = f"What is the {label} of {subject}?"
            deps = (f"q{k - 1}",) if k > 1 else ()
            anchors = (topic,) if k == 1 else ()
            steps.append(SubQuestion(f"q{k}", text, deps, anchors=anchors, relations=(rel,)))
            subject = "{" + f"q{k}" + "}"
        return Plan(question.text, tuple(steps))


class FlatPlanner:
    """No decomposition: the whole question as one step (the "without DAG" ablation), anchored
    at its topic entity and following its whole relation chain when it has one."""

    name = "flat"

    def plan(self, question: Any) -> Plan:
        text = question if isinstance(question, str) else question.text
        if not isinstance(text, str) or not text.strip():
            raise PlanError("the question is empty")
        topic = getattr(question, "topic", None)
        chain = tuple(getattr(question, "chain", ()) or ())
        step = SubQuestion("q1", _escape(text), anchors=(topic,) if topic else (), relations=chain)
        return Plan(text, (step,))


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


# --------------------------------------------------------------------------- LLM

DECOMPOSE_PROMPT = """\
Plan how to answer the question below from a knowledge graph, bottom up.
1. Split it into the smallest sub-questions that each ask for one fact, starting from what
   the question names explicitly.
2. A sub-question that needs the answer of an earlier one refers to it as #k (k = that
   sub-question's number, counting from 1); this is a progress relation. Sub-questions that
   do not need each other's answers are parallel: list them without references.
3. The last sub-question answers the original question.
4. Mark a sub-question "abstract" when it asks for a broad theme or summary rather than a
   specific fact.
Reply with JSON only, no prose:
{"steps": [{"question": "...", "abstract": false}, ...]}

Question: """

REWRITE_PROMPT = """\
Here is a question and a plan of sub-questions for it (#k is the answer of sub-question k).
Working top down, from the last sub-question to the first, rewrite each sub-question so that
it is unambiguous on its own once its #k references are filled in: resolve pronouns and
vague phrases from the original question. Keep exactly the same #k references, the same
number of sub-questions and their order.
Reply with JSON only, no prose:
{"steps": [{"question": "..."}, ...]}

Question: """


class LLMPlanner:
    """A two-phase planner on any OpenAI-compatible chat endpoint (see the module docstring).

    Args:
        endpoint: the server and model (:class:`~grounding.llm.Endpoint`).
        fallback: ``"error"`` (raise :class:`PlanError` on an invalid reply) or ``"flat"``
            (a one-step plan of the whole question, reason in :attr:`Plan.fallback`).
        rewrite: run the second (top-down rewriting) phase.
        temperature: sampling temperature (default 0); ``max_tokens``: tokens per reply.

    Raises:
        ValueError: an argument is out of range.

    References:
        Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally Aware
            Query Resolution and Dependency-Aware Reranking Mechanism", 2025 (arXiv:2506.11106):
            Sec. 2.2 (bottom-up decomposition, top-down rewriting).
    """

    name = "llm"
    accepts_context = True  # PRoH passes its plan context (a sketch of nearby statements)

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        fallback: Literal["error", "flat"] = "error",
        rewrite: bool = True,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ):
        if not isinstance(endpoint, Endpoint):
            raise TypeError(f"endpoint must be a grounding.llm.Endpoint, got {endpoint!r:.100}")
        if fallback not in ("error", "flat"):
            raise ValueError(f"fallback must be 'error' or 'flat', got {fallback!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
        if not 0 <= temperature < float("inf"):
            raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
        check_int(max_tokens, "max_tokens")
        self.endpoint, self.url = endpoint, endpoint.url
        self.fallback, self.rewrite = fallback, bool(rewrite)
        self.temperature, self.max_tokens = float(temperature), max_tokens

    def _ask(self, prompt: str) -> dict:
        body = {
            "messages": [
                {"role": "system", "content": "You plan multi-hop question answering."},
                {"role": "user", "content": prompt},
            ],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        choices = self.endpoint.chat(body)
        if not choices:
            raise PlanError(f"{self.url} returned no completion")
        return _reply_json(self.endpoint.text(choices, 0))

    def plan(self, question: Any, context: str | None = None) -> Plan:
        """Plan a question (a string or anything with ``.text``); ``context`` (e.g. PRoH's plan
        context) is shown to the model after the question.

        Raises:
            PlanError: the reply is not a valid plan (``fallback="error"``).
            grounding.llm.EndpointError: the endpoint failed (never a silent fallback).
        """
        text = question if isinstance(question, str) else question.text
        if not isinstance(text, str) or not text.strip():
            raise PlanError("the question is empty")
        try:
            return self._plan(text, context)
        except PlanError as err:
            if self.fallback == "error":
                raise
            step = SubQuestion("q1", _escape(text))
            return Plan(text, (step,), fallback=f"{err}: planned the whole question as one step")

    def _plan(self, text: str, context: str | None = None) -> Plan:
        sketch = (
            f"\nWhat the knowledge graph holds near the question:\n{context}" if context else ""
        )
        steps = _steps(self._ask(DECOMPOSE_PROMPT + text + sketch), "decomposition")
        texts = [s["question"] for s in steps]
        flags = [s.get("abstract", False) for s in steps]
        if not all(isinstance(f, bool) for f in flags):
            raise PlanError(f"'abstract' must be true or false, got {flags!r}")
        plan = _checked(text, texts, flags, "decomposition")
        if not self.rewrite:
            return plan
        listing = "\n".join(f"{k}. {t}" for k, t in enumerate(texts, 1))
        rewritten = [
            s["question"]
            for s in _steps(self._ask(f"{REWRITE_PROMPT}{text}\nPlan:\n{listing}"), "rewrite")
        ]
        if len(rewritten) != len(texts):
            raise PlanError(f"the rewrite has {len(rewritten)} steps for {len(texts)} planned")
        new = _checked(text, rewritten, flags, "rewrite")
        if new.edges() != plan.edges():
            raise PlanError(f"the rewrite changed the dependencies {plan.edges()} to {new.edges()}")
        return new


def _reply_json(content: str) -> dict:
    try:
        reply = json_content(content)
    except ValueError as err:
        raise PlanError(str(err)) from None
    if not isinstance(reply, dict):
        raise PlanError(f"the reply is not a JSON object: {content[:200]!r}")
    return reply


def _steps(reply: dict, phase: str) -> list[dict]:
    steps = reply.get("steps")
    if not isinstance(steps, list) or not steps:
        raise PlanError(f"the {phase} reply has no non-empty 'steps' list")
    for k, s in enumerate(steps, 1):
        if not isinstance(s, dict) or not isinstance(s.get("question"), str):
            raise PlanError(f"{phase} step {k} has no 'question' text: {s!r}")
        if not s["question"].strip():
            raise PlanError(f"{phase} step {k} has an empty question")
    return steps


def _checked(question: str, texts: list[str], flags: list[bool], phase: str) -> Plan:
    try:
        return plan_from_decomposition(question, texts, flags)
    except ValueError as err:
        raise PlanError(f"invalid {phase}: {err}") from None


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

    def _phrase(self, role: str) -> str:
        kind, rel = parse_role(role)
        label = self.hypergraph.label(rel)
        return f"subject of {label}" if kind == 0 else label

    def plan(self, question: Any) -> Plan:
        roles = tuple(getattr(question, "roles", ()) or ())
        if not roles:
            raise ValueError(f"the question has no role chain: {question!r}")
        texts = self.hypergraph.entity_texts
        subject = texts[self.hypergraph.entity_index(question.topic)].replace("{", "{{").replace(
            "}", "}}"
        )  # fmt: skip
        steps = []
        for k, (a, b) in enumerate(roles, 1):
            text = (
                f"What is the {self._phrase(b)} of the statement whose {self._phrase(a)} is "
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
