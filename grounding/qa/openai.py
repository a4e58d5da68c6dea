r"""A candidate model that asks any OpenAI-compatible chat endpoint (vLLM, llama.cpp server,
Ollama, hosted APIs) for candidate answers with their token log-probabilities.

One request per question to ``POST {base_url}/chat/completions`` asks for ``n_samples``
completions (``"n"``), each a short answer, with ``"logprobs": true``. A completion's
log-weight is the sum of its tokens' log-probabilities (the sequence log-probability under the
model); when a server returns no log-probabilities for some completion, every completion of
that reply counts as one sample (weight :math:`1/n`, a frequency estimate). Answers are mapped
to graph entities by normalised exact match (below); repeated entities merge by log-sum-exp
and the result is normalised into the prior :math:`p_\theta` of Eq. (1)
(:meth:`~grounding.qa.Candidates.from_scores`). Answers that name no entity are kept in
``Candidates.dropped``; when none maps, the model abstains with that reason.

Matching rule: lower-cased (Unicode case folding), ``_`` read as a space, runs of white space
collapsed, surrounding white space, quotes and a final period removed; compared with the
entity names first, then with the entity texts (e.g. a graph's node texts). When two
entities share a normalised form, the first in vocabulary order wins.

Standard library only; no key is stored: pass ``api_key`` or set the environment variable
named by ``api_key_env`` (``Authorization: Bearer`` is sent only when one is set).
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence

import numpy as np

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
    x = x.strip("\"'`“”‘’ ").rstrip(".").strip()
    return x


class OpenAICompatibleModel:
    """Candidates and a log-prior from an OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the model name the server expects.
        entities: the graph's entity names (what answers must map to).
        texts: optional display text per entity (matched after the names; e.g. node texts).
        timeout: seconds per request (``> 0``).
        temperature: sampling temperature (``>= 0``).
        n_samples: completions per question (``>= 1``).
        max_tokens: tokens per completion (``>= 1``).
        system_prompt: replaces :data:`SYSTEM_PROMPT`.
        api_key: a key; default: the environment variable ``api_key_env``.
        api_key_env: the variable read when ``api_key`` is ``None``.
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
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty str")
        entities = tuple(entities)
        if not entities:
            raise ValueError("entities is empty: answers need a vocabulary to map to")
        if texts is not None and len(texts) != len(entities):
            raise ValueError(f"texts has {len(texts)} entries for {len(entities)} entities")
        if not (isinstance(timeout, (int, float)) and np.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
        if not (np.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
        for name, v in (("n_samples", n_samples), ("max_tokens", max_tokens)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.entities = model, entities
        self.timeout, self.temperature = float(timeout), float(temperature)
        self.n_samples, self.max_tokens = n_samples, max_tokens
        self.system_prompt = SYSTEM_PROMPT if system_prompt is None else system_prompt
        self._key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._lookup: dict[str, str] = {}
        for names in (entities, texts or ()):
            for e, t in zip(entities, names):
                self._lookup.setdefault(normalise_answer(t), e)

    def messages(self, question: QuestionLike) -> list[dict]:
        """The chat messages sent for a question."""
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": f"Question: {question.text}\nAnswer:"},
        ]

    def resolve(self, answer: str) -> str | None:
        """The entity an answer names, or ``None``."""
        return self._lookup.get(normalise_answer(answer))

    def _post(self, body: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise CandidateModelError(f"{self.url}: HTTP {err.code} {err.reason}") from None
        except TimeoutError:
            raise CandidateModelError(
                f"{self.url}: no reply within the timeout of {self.timeout:g} s"
            ) from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, TimeoutError):
                raise CandidateModelError(
                    f"{self.url}: no reply within the timeout of {self.timeout:g} s"
                ) from None
            raise CandidateModelError(f"{self.url}: cannot connect ({err.reason})") from None
        try:
            reply = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise CandidateModelError(f"{self.url}: reply is not JSON ({err})") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            raise CandidateModelError(f"{self.url}: reply has no 'choices' list")
        return reply

    def propose(self, question: QuestionLike, k: int) -> Candidates:
        """Ask the endpoint; map its answers to entities; normalise their weights."""
        reply = self._post(
            {
                "model": self.model,
                "messages": self.messages(question),
                "n": self.n_samples,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "logprobs": True,
            }
        )
        texts, logps = [], []
        for i, choice in enumerate(reply["choices"]):
            try:
                content = choice["message"]["content"]
            except (KeyError, TypeError):
                raise CandidateModelError(
                    f"{self.url}: choice {i} has no message content"
                ) from None
            if not isinstance(content, str):
                raise CandidateModelError(f"{self.url}: choice {i} content is not text")
            texts.append(content.strip().splitlines()[0] if content.strip() else "")
            logps.append(_sequence_logprob(choice))
        if not texts:
            return Candidates.abstain("the endpoint returned no completion")
        if any(lp is None for lp in logps):  # a frequency estimate: one sample, one vote
            logps = [0.0] * len(texts)
        mapped = [(self.resolve(t), lp) for t, lp in zip(texts, logps)]
        dropped = tuple(t for t, (e, _) in zip(texts, mapped) if e is None)
        hits = [(e, lp) for e, lp in mapped if e is not None]
        if not hits:
            return Candidates.abstain(
                f"none of the model's {len(texts)} answers names a graph entity", dropped
            )
        return Candidates.from_scores(
            [e for e, _ in hits], [lp for _, lp in hits], k=k, dropped=dropped
        )


def _sequence_logprob(choice: dict) -> float | None:
    """Sum of the completion's token log-probabilities, or ``None`` when absent/malformed."""
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice, dict) else None
    if not isinstance(content, list) or not content:
        return None
    try:
        values = [float(t["logprob"]) for t in content]
    except (KeyError, TypeError, ValueError):
        return None
    if not all(np.isfinite(v) and v <= 0 for v in values):
        return None
    return float(sum(values))
