r"""A candidate model that asks any OpenAI-compatible chat endpoint (vLLM, llama.cpp server,
Ollama, hosted APIs) for candidate answers with their token log-probabilities.

Request scheme: ``POST {base_url}/chat/completions`` with ``"logprobs": true`` (and
``"top_logprobs": 1``, without which llama-cpp-python's server sends none), a one-line
answer (``"stop": ["\n"]``) and ``"n": n_samples``. Servers differ on ``n``: vLLM and hosted
APIs honour it; Ollama ignores it (one choice back); llama.cpp server rejects ``n != 1`` with
an HTTP error. So a reply with fewer choices than asked is topped up by further requests for
the remainder (at most ``n_samples`` requests in all), and when a request with ``n > 1`` fails
with an HTTP error status it is sent once more without ``n``; if that succeeds the model
stops sending ``n`` and makes one request per sample from then on.

Weights: a completion's log-weight is the sum of its tokens' log-probabilities
(``choices[i].logprobs.content[j].logprob``, the sequence log-probability). A completion that
recurs verbatim is counted once (its probability is already its weight; summing repeats
would square the distribution). When some completion comes without log-probabilities (none
sent, a ``logprobs`` field that is not an object, entries that are not numbers, or ``-inf``),
every sample of the question counts once, repeats included: the prior is then the answers'
sample frequency. A token log-probability above 0 (a probability over 1) or NaN is not a
missing value but a broken one: that choice is set aside, listed with its reason (the choice,
the token and the value) in ``Candidates.dropped``, and the other choices are answered as
usual, so the prior never silently changes kind; when no choice is left, the model abstains
with the reasons. Values up to ``1e-6`` above 0 are rounding and count as 0.

Linking (:mod:`grounding.language.linking`): the first line of each completion is an answer,
linked by an :class:`~grounding.language.AnswerLinker` of ``entities`` and ``texts`` (exact
comparison of :func:`~grounding.language.linking.normalize_answer` forms with the entity
names and texts) and
turned into candidates by :meth:`~grounding.prior.Candidates.from_answers`, which normalizes
them into the prior :math:`p_\theta` of Eq. (1): an answer that names no entity is an
out-of-graph candidate (``Candidates.out_of_graph``, grounded as unsupported); one that
names several entities is split equally over them; answers naming the same entity merge by
log-sum-exp. Only an empty answer is dropped (``Candidates.dropped``); when every answer is
empty the model abstains with that reason.

Refusals: a choice whose message content is ``null`` (OpenAI sends one with a ``refusal``
message; a reasoning model can spend every token before its answer) gives no answer and is
set aside; the other choices of the reply are answered as usual. When no choice has text the
model abstains, quoting the refusals.

The server, model name, key, deadline, reply-size cap and retries are those of the
:class:`~grounding.language.Endpoint` passed in (standard library only; no key in code).

Example:
    >>> from grounding.language import Endpoint
    >>> ep = Endpoint("http://localhost:8000/v1", "qwen2.5-7b-instruct", timeout=30)
    >>> model = OpenAICompatibleModel(ep, entities=["paris", "warsaw"])
    >>> model.linker.link(" Paris. ")
    ('paris',)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from grounding._checks import check_int
from grounding.language import (
    AnswerLinker,
    Endpoint,
    EndpointError,
    HTTPStatusError,
    message_content,
)
from grounding.prior.candidates import CandidateModel, CandidateModelError, Candidates, QuestionLike

__all__ = ["OpenAICompatibleModel"]

#: How far above 0 a token log-probability may be and still count as 0 (rounding).
LOGPROB_TOLERANCE = 1e-6

SYSTEM_PROMPT = (
    "You answer questions about a knowledge graph. Reply with one entity name only: no "
    "explanation, no punctuation, no list."
)


class OpenAICompatibleModel(CandidateModel):
    """Candidates and a log-prior from an OpenAI-compatible chat-completions endpoint.

    Args:
        endpoint: the server and model (:class:`~grounding.language.Endpoint`: base URL, model
            name, key, deadline per request, size cap, retries).
        entities: the graph's entity names (what answers are linked to).
        texts: optional display text per entity (an answer matching an entity's name or its
            text links to it; e.g. node texts; the topic's text is also what the prompt
            shows).
        temperature: sampling temperature (``>= 0``).
        n_samples: completions per question (``>= 1``).
        max_tokens: tokens per completion (``>= 1``).
        system_prompt: replaces :data:`SYSTEM_PROMPT`.

    Raises:
        ValueError: an argument is out of range (the message names it).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        entities: Sequence[str],
        texts: Sequence[str] | None = None,
        *,
        temperature: float = 1.0,
        n_samples: int = 8,
        max_tokens: int = 16,
        system_prompt: str | None = None,
    ):
        if not isinstance(endpoint, Endpoint):
            raise TypeError(
                f"endpoint must be a grounding.language.Endpoint, got {endpoint!r:.100}"
            )
        self.linker = AnswerLinker(entities, texts)  # checks the vocabulary and texts
        entities = self.linker.entities
        if not _finite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
        for name, v in (("n_samples", n_samples), ("max_tokens", max_tokens)):
            check_int(v, name)
        self.endpoint, self.url, self.entities = endpoint, endpoint.url, entities
        self.temperature = float(temperature)
        self.n_samples, self.max_tokens = n_samples, max_tokens
        self.system_prompt = SYSTEM_PROMPT if system_prompt is None else system_prompt
        self._send_n = True  # cleared when the server rejects "n" (llama.cpp server)
        self._text = dict(zip(entities, texts)) if texts is not None else {}

    def messages(self, question: QuestionLike) -> list[dict]:
        """The chat messages sent for a question: the system prompt, then the question and
        its topic entity (by its text when ``texts`` has one)."""
        topic = self._text.get(question.topic) or question.topic.replace("_", " ")
        user = f"Question: {question.text}\nTopic entity: {topic}\nAnswer:"
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": user},
        ]

    def propose(self, question: QuestionLike, k: int) -> Candidates:
        """Sample answers, link them to entities and normalize their weights (module
        docstring: :meth:`~grounding.prior.Candidates.from_answers`).

        Raises:
            CandidateModelError: the endpoint timed out, could not be reached, answered an
                HTTP error status or a reply that is not a chat completion. A refused choice
                and a choice with a broken token log-probability (above 0, or NaN) are no
                error: they are set aside with their reasons (module docstring).
        """
        body = {
            "messages": self.messages(question),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": ["\n"],
            "logprobs": True,
            # llama-cpp-python's server returns log-probabilities only when asked for the top
            # ones too; 1 is valid everywhere (OpenAI allows 0-20) and costs nothing
            "top_logprobs": 1,
        }
        try:
            choices = self._sample(body)
            texts = [_content(self.url, i, c) for i, c in enumerate(choices)]
        except EndpointError as err:
            raise CandidateModelError(str(err)) from None
        if not choices:
            return Candidates.abstain(f"{self.url} returned no completion")
        raw, broken, why_not = [], [], []
        for i, (c, (text, why)) in enumerate(zip(choices, texts)):
            if text is None:  # refused, or no text
                why_not.append(why)
                continue
            lp, bad = _sequence_logprob(i, c)
            if bad:  # a broken log-probability: this choice is set aside, the others kept
                broken.append(f"{_first_line(text)} ({bad})")
                why_not.append(bad)
                continue
            raw.append((text, lp))
        if not raw:  # every completion was refused, came without text or is broken
            why = "; ".join(dict.fromkeys(why_not))
            return Candidates.abstain(f"{self.url}: no usable completion: {why[:600]}", broken)
        if any(lp is None for _, lp in raw):  # frequency estimate: one sample, one vote
            raw = [(c, 0.0) for c, _ in raw]
        else:  # a verbatim repeat carries no new probability mass: first occurrence only
            first: dict[str, float] = {}
            for c, lp in raw:
                first.setdefault(c, lp)
            raw = list(first.items())
        answers = [_first_line(c) for c, _ in raw]
        got = Candidates.from_answers(answers, [lp for _, lp in raw], self.linker, k=k)
        if broken:  # reported beside the candidates, with their reasons
            got = dataclasses.replace(got, dropped=got.dropped + tuple(broken))
        return got

    def _sample(self, body: dict) -> list:
        """``n_samples`` choices: one request, topped up when ``n`` is not honoured."""
        choices: list = []
        for _ in range(self.n_samples):
            got = self._request(body, self.n_samples - len(choices))
            if not got:
                break
            choices.extend(got)
            if len(choices) >= self.n_samples:
                break
        return choices[: self.n_samples]

    def _request(self, body: dict, n: int) -> list:
        """The choices of one request for ``n`` completions (``n`` sent when honoured)."""
        if n > 1 and self._send_n:
            try:
                return self.endpoint.chat(body | {"n": n})
            except HTTPStatusError as err:
                if err.status in (401, 403, 404, 429) or err.status >= 500:
                    raise  # not about "n": the same request without it would fail alike
                reply = self.endpoint.chat(body)  # e.g. llama.cpp: "only one completion choice"
                self._send_n = False
                return reply
        return self.endpoint.chat(body)


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _content(url: str, i: int, choice: object) -> tuple[str | None, str]:
    """Choice ``i``'s text, or ``None`` and why it has none: a refusal (``content: null``
    with a ``refusal`` message, as OpenAI sends) or a null content (e.g. every token spent on
    hidden reasoning). A choice without a message content at all is an EndpointError."""
    message = choice.get("message") if isinstance(choice, dict) else None
    if isinstance(message, dict) and "content" in message and message["content"] is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            return None, f"choice {i} was refused ({refusal.strip()[:200]!r})"
        return (
            None,
            f"choice {i} has null content (finish_reason {choice.get('finish_reason')!r:.40})",
        )  # type: ignore[union-attr]
    return message_content(url, i, choice), ""


def _first_line(content: str) -> str:
    """The answer a completion gives: its first non-blank line, stripped."""
    lines = content.strip().splitlines()
    return lines[0].strip() if lines else ""


def _sequence_logprob(i: int, choice: dict) -> tuple[float | None, str]:
    """The sum of the completion's token log-probabilities, ``None`` when absent or malformed
    (no ``logprobs`` object, entries that are not numbers, ``-inf``), and the reason the
    choice is broken, else ``""``: a value above :data:`LOGPROB_TOLERANCE` (a probability over
    1) or NaN is not a missing value but a broken one."""
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None, ""
    try:
        values = [float(t["logprob"]) for t in content]
    except (KeyError, TypeError, ValueError):
        return None, ""
    for j, v in enumerate(values):
        if math.isnan(v):
            return None, f"choice {i}, token {j} has log-probability nan (not a number)"
        if v > LOGPROB_TOLERANCE:
            return None, (
                f"choice {i}, token {j} has log-probability {v!r} (above 0: a probability over 1)"
            )
    if not all(math.isfinite(v) for v in values):  # -inf: treated as absent
        return None, ""
    return float(sum(min(v, 0.0) for v in values)), ""
