"""The two-phase LLM planner (re-exported by :mod:`grounding.plans.planners`)."""

from __future__ import annotations

from typing import Any, Literal

from grounding._checks import check_int
from grounding.language import Endpoint, json_content
from grounding.plans._base import PlanError, _escape
from grounding.plans.dag import Plan, SubQuestion, plan_from_decomposition

__all__ = ["LLMPlanner", "DECOMPOSE_PROMPT", "REWRITE_PROMPT"]

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
        endpoint: the server and model (:class:`~grounding.language.Endpoint`).
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
            raise TypeError(
                f"endpoint must be a grounding.language.Endpoint, got {endpoint!r:.100}"
            )
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
            grounding.language.EndpointError: the endpoint failed (never a silent fallback).
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
