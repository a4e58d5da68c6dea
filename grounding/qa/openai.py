r"""A candidate model that asks any OpenAI-compatible chat endpoint (vLLM, llama.cpp server,
Ollama, hosted APIs) for candidate answers with their token log-probabilities.

Request scheme: ``POST {base_url}/chat/completions`` with ``"logprobs": true``, a one-line
answer (``"stop": ["\n"]``) and ``"n": n_samples``. Servers differ on ``n``: vLLM and hosted
APIs honour it; Ollama ignores it (one choice back); llama.cpp server rejects ``n != 1`` with
an HTTP error. So a reply with fewer choices than asked is topped up by further requests for
the remainder (at most ``n_samples`` requests in all), and when a request with ``n > 1`` fails
with an HTTP error status it is sent once more without ``n``; if that succeeds the model
stops sending ``n`` and makes one request per sample from then on.

Weights: a completion's log-weight is the sum of its tokens' log-probabilities
(``choices[i].logprobs.content[j].logprob``, the sequence log-probability). A completion that
recurs verbatim is counted once (its probability is already its weight; summing repeats
would square the distribution), and distinct completions naming the same entity merge by
log-sum-exp in :meth:`~grounding.qa.Candidates.from_scores`, which normalises them into the
prior :math:`p_\theta` of Eq. (1). When some completion comes without (valid)
log-probabilities, every sample of the question counts once, repeats included: the prior is
then the answers' sample frequency.

Matching rule (:func:`normalise_answer`): Unicode case folding, ``_`` read as a space, runs of
white space collapsed, surrounding quotes and white space and a final period removed; exact
comparison with the normalised entity names first, then with the normalised ``texts``. A
form shared by several entities goes to the first of them in vocabulary order (names before
texts). Answers that name no entity are kept in ``Candidates.dropped``; when none maps, the
model abstains with that reason.

Standard library only; no key is stored in code: pass ``api_key`` or set the environment
variable named by ``api_key_env`` (``Authorization: Bearer`` is sent only when one is set).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from grounding.chat import (
    EndpointError,
    HTTPStatusError,
    check_base_url,
    message_content,
    post_chat,
)
from grounding.chat import api_key as _api_key
from grounding.qa.candidates import CandidateModelError, Candidates, QuestionLike

__all__ = ["OpenAICompatibleModel", "normalise_answer"]

SYSTEM_PROMPT = (
    "You answer questions about a knowledge graph. Reply with one entity name only: no "
    "explanation, no punctuation, no list."
)


def normalise_answer(text: str) -> str:
    """The matching form of an answer or entity name (see the module docstring).

    Example:
        >>> normalise_answer('  "Amino_Acid,  Peptide or Protein." ')
        'amino acid, peptide or protein'
    """
    x = text.casefold().replace("_", " ")
    x = re.sub(r"\s+", " ", x).strip()
    return x.strip("\"'`“”‘’ ").rstrip(".").strip()


class OpenAICompatibleModel:
    """Candidates and a log-prior from an OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the model name the server expects.
        entities: the graph's entity names (what answers must map to).
        texts: optional display text per entity (matched after the names; e.g. node texts;
            the topic's text is also what the prompt shows).
        timeout: seconds per request (``> 0``).
        temperature: sampling temperature (``>= 0``).
        n_samples: completions per question (``>= 1``).
        max_tokens: tokens per completion (``>= 1``).
        system_prompt: replaces :data:`SYSTEM_PROMPT`.
        api_key: a key; default: the environment variable ``api_key_env``.
        api_key_env: the variable read when ``api_key`` is ``None``.

    Raises:
        ValueError: an argument is out of range (the message names it).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        entities: Sequence[str],
        texts: Sequence[str] | None = None,
        *,
        timeout: float = 30.0,
        temperature: float = 1.0,
        n_samples: int = 8,
        max_tokens: int = 16,
        system_prompt: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
    ):
        url = check_base_url(base_url)
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty str")
        entities = tuple(entities)
        if not entities:
            raise ValueError("entities is empty: answers need a vocabulary to map to")
        if texts is not None and len(texts) != len(entities):
            raise ValueError(f"texts has {len(texts)} entries for {len(entities)} entities")
        if not _finite(timeout) or timeout <= 0:
            raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
        if not _finite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
        for name, v in (("n_samples", n_samples), ("max_tokens", max_tokens)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        self.url = url
        self.model, self.entities = model, entities
        self.timeout, self.temperature = float(timeout), float(temperature)
        self.n_samples, self.max_tokens = n_samples, max_tokens
        self.system_prompt = SYSTEM_PROMPT if system_prompt is None else system_prompt
        self._key = _api_key(api_key, api_key_env)
        self._send_n = True  # cleared when the server rejects "n" (llama.cpp server)
        self._text = dict(zip(entities, texts)) if texts is not None else {}
        self._lookup: dict[str, str] = {}
        for names in (entities, texts or ()):
            for e, t in zip(entities, names):
                self._lookup.setdefault(normalise_answer(t), e)

    def messages(self, question: QuestionLike) -> list[dict]:
        """The chat messages sent for a question: the system prompt, then the question and
        its topic entity (by its text when ``texts`` has one)."""
        topic = self._text.get(question.topic) or question.topic.replace("_", " ")
        user = f"Question: {question.text}\nTopic entity: {topic}\nAnswer:"
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": user},
        ]

    def resolve(self, answer: str) -> str | None:
        """The entity an answer names, or ``None``."""
        return self._lookup.get(normalise_answer(answer))

    def propose(self, question: QuestionLike, k: int) -> Candidates:
        """Sample answers, map them to entities and normalise their weights.

        Raises:
            CandidateModelError: the endpoint timed out, could not be reached, answered an
                HTTP error status or a reply that is not a chat completion.
        """
        body = {
            "model": self.model,
            "messages": self.messages(question),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": ["\n"],
            "logprobs": True,
        }
        choices: list = []
        for _ in range(self.n_samples):  # one request, topped up when n is not honoured
            got = self._request(body, self.n_samples - len(choices))
            if not got:
                break
            choices.extend(got)
            if len(choices) >= self.n_samples:
                break
        raw = [(_content(self.url, i, c), _sequence_logprob(c)) for i, c in enumerate(choices)]
        if not raw:
            return Candidates.abstain(f"{self.url} returned no completion")
        if any(lp is None for _, lp in raw):  # frequency estimate: one sample, one vote
            raw = [(c, 0.0) for c, _ in raw]
        else:  # a verbatim repeat carries no new probability mass: first occurrence only
            first: dict[str, float] = {}
            for c, lp in raw:
                first.setdefault(c, lp)
            raw = list(first.items())
        samples = [(_first_line(c), lp) for c, lp in raw]
        mapped = [(self.resolve(t), t, lp) for t, lp in samples]
        dropped = tuple(t for e, t, _ in mapped if e is None)
        hits = [(e, lp) for e, _, lp in mapped if e is not None]
        if not hits:
            return Candidates.abstain(
                f"none of the model's {len(samples)} answers names a graph entity", dropped
            )
        return Candidates.from_scores(
            [e for e, _ in hits], [lp for _, lp in hits], k=k, dropped=dropped
        )

    def _request(self, body: dict, n: int) -> list:
        """The choices of one request for ``n`` completions (``n`` sent when honoured)."""
        if n > 1 and self._send_n:
            try:
                return self._post(body | {"n": n})
            except _HTTPStatusError:
                reply = self._post(body)  # e.g. llama.cpp: "only one completion choice"
                self._send_n = False
                return reply
        return self._post(body)

    def _post(self, body: dict) -> list:
        try:
            return post_chat(self.url, body, key=self._key, timeout=self.timeout)
        except HTTPStatusError as err:
            raise _HTTPStatusError(str(err)) from None
        except EndpointError as err:
            raise CandidateModelError(str(err)) from None


class _HTTPStatusError(CandidateModelError):
    """The endpoint answered an HTTP error status."""


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _content(url: str, i: int, choice: object) -> str:
    """A choice's message content (the completion as generated)."""
    try:
        return message_content(url, i, choice)
    except EndpointError as err:
        raise CandidateModelError(str(err)) from None


def _first_line(content: str) -> str:
    """The answer a completion gives: its first non-blank line, stripped."""
    lines = content.strip().splitlines()
    return lines[0].strip() if lines else ""


def _sequence_logprob(choice: dict) -> float | None:
    """Sum of the completion's token log-probabilities, or ``None`` when absent/malformed."""
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice, dict) else None
    if not isinstance(content, list) or not content:
        return None
    try:
        values = [float(t["logprob"]) for t in content]
    except (KeyError, TypeError, ValueError):
        return None
    if not all(math.isfinite(v) and v <= 0 for v in values):
        return None
    return float(sum(values))
