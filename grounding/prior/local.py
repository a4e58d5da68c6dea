r"""A candidate model that runs a small language model in-process
(:class:`~grounding.language.LocalLM`, SmolLM2-135M-Instruct by default): offline,
deterministic, with the model's own token log-probabilities as the prior.

For a question, the model's ``k`` most probable complete answers by beam search are the
candidates, with the answers of an optional ``pool`` (e.g. the names of entities retrieved
around the topic) beside them; each answer's log-weight is :math:`\log p_\theta(a \mid q)`
under the model's chat template (its tokens and the end-of-turn token), so the model itself
ranks every candidate, generated or retrieved. The answers are linked to the graph by an
:class:`~grounding.language.AnswerLinker` with the rules of :mod:`grounding.language.linking`:
an answer that names no entity stays a candidate, out of graph; one that names several
entities is split equally over them; then :meth:`~grounding.prior.Candidates.from_answers` normalizes the prior
:math:`p_\theta` of Eq. (1) over what remains.

The model is deterministic, so its proposals are memoized by question text, topic and ``k``
(:meth:`LocalCandidateModel.propose_batch`): a loop that asks the same question again (a blind
and an oracle run, a grid of settings fitted on validation questions) runs the model once;
:meth:`LocalCandidateModel.answers` gives the model's own answers behind a proposal.

Example:
    >>> from grounding.language import LocalLM  # doctest: +SKIP
    >>> model = LocalCandidateModel(LocalLM.load(), AnswerLinker(["paris"]))  # doctest: +SKIP
    >>> model.propose(question, k=5).entities  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grounding._checks import check_int
from grounding.language import AnswerLinker, LocalLM, normalize_answer
from grounding.prior.candidates import CandidateModel, Candidates, QuestionLike

__all__ = ["LocalCandidateModel"]

_MEMO = 65536  # memoized proposals kept


class LocalCandidateModel(CandidateModel):
    """Candidates from an in-process language model (see the module docstring).

    Args:
        lm: the language model (:class:`~grounding.language.LocalLM`).
        linker: links the model's answers to graph entities.
        pool: ``question -> answer texts`` scored beside the model's own answers (``None``:
            the model's answers only). It sees what the model sees; give it nothing gold.
    """

    def __init__(
        self,
        lm: LocalLM,
        linker: AnswerLinker,
        pool: Callable[[QuestionLike], Sequence[str]] | None = None,
    ):
        if not isinstance(lm, LocalLM):
            raise TypeError(f"lm must be a grounding.language.LocalLM, got {type(lm).__name__}")
        if not isinstance(linker, AnswerLinker):
            raise TypeError(f"linker must be an AnswerLinker, got {type(linker).__name__}")
        if pool is not None and not callable(pool):
            raise TypeError(f"pool must be callable or None, got {type(pool).__name__}")
        self.lm, self.linker, self.pool = lm, linker, pool
        self._proposed: dict[tuple, tuple[Candidates, list[tuple[str, float]]]] = {}

    def propose(self, question: QuestionLike, k: int) -> Candidates:
        """The question's candidates (module docstring); an abstention when the model
        completes no answer within its token budget."""
        return self.propose_batch([question], k)[0]

    def propose_batch(self, questions: Sequence[QuestionLike], k: int) -> list[Candidates]:
        """:meth:`propose` of many questions, the model run on those not asked before
        together (memoized by text, topic and ``k``)."""
        check_int(k, "k")
        if isinstance(questions, (str, bytes)):
            raise TypeError(f"questions must be a sequence of questions, not {questions!r:.100}")
        keys = [(q.text, q.topic, k) for q in questions]
        todo = list(dict.fromkeys(key for key in keys if key not in self._proposed))
        if len(self._proposed) + len(todo) > _MEMO:
            self._proposed.clear()
            todo = list(dict.fromkeys(keys))
        if todo:
            asked = {key: q for key, q in zip(keys, questions)}
            self._proposed.update(zip(todo, self._run([asked[key] for key in todo], k)))
        return [self._proposed[key][0] for key in keys]

    def answers(self, question: QuestionLike, k: int) -> list[tuple[str, float]]:
        """The model's own answers behind :meth:`propose` ``(question, k)``: texts and
        log-probabilities, best first (the pool's answers are not among them)."""
        self.propose_batch([question], k)
        return self._proposed[(question.text, question.topic, k)][1]

    def cache_clear(self) -> None:
        """Forget the memoized proposals."""
        self._proposed.clear()

    def _run(
        self, questions: Sequence[QuestionLike], k: int
    ) -> list[tuple[Candidates, list[tuple[str, float]]]]:
        texts = [q.text for q in questions]
        beams = self.lm.propose_batch(texts, k)
        extra: list[list[str]] = []
        for q, got in zip(questions, beams):
            seen = {normalize_answer(t) for t, _ in got}
            mine = []
            for t in self.pool(q) if self.pool is not None else ():
                form = normalize_answer(str(t))
                if form and form not in seen:
                    seen.add(form)
                    mine.append(str(t))
            extra.append(mine)
        scored = self.lm.score_batch(texts, extra)
        out = []
        for got, ex, sc in zip(beams, extra, scored):
            if not got and not ex:
                why = f"the model completed no answer within {self.lm.max_answer_tokens} tokens"
                out.append((Candidates.abstain(why), got))
                continue
            answers = [t for t, _ in got] + ex
            weights = [x for _, x in got] + [float(x) for x in sc]
            out.append((Candidates.from_answers(answers, weights, self.linker), got))
        return out
