r"""The model prior of Eq. (1): where candidates come from.

A candidate model plays the LLM of the paper: given a question it proposes a finite candidate
set :math:`\Gamma(q)` with a normalized log-prior :math:`\log p_\theta(\rho\mid q)`, which
:func:`grounding.ground` then re-weights by the evidence.

- :class:`Candidates` (candidates with their prior, or an abstention with its reason; built
  from a model's answer texts by :meth:`Candidates.from_answers` and the linking rule of
  :mod:`grounding.language`) and the :class:`CandidateModel` protocol (``propose`` and
  ``propose_batch``; :class:`Blinded` shows a model a question's text and topic only)
  (:mod:`~grounding.prior.candidates`);
- :class:`KGEAnswerer`: an offline prior from trained knowledge-graph embeddings, composing
  the question's relation chain (:mod:`~grounding.prior.answerer`);
- :class:`OpenAICompatibleModel`: any OpenAI-compatible chat endpoint, with its token
  log-probabilities (:mod:`~grounding.prior.remote`);
- :class:`LocalCandidateModel`: a small language model in-process (:mod:`~grounding.prior.local`).
"""

from grounding.prior.answerer import KGEAnswerer
from grounding.prior.candidates import (
    Blinded,
    CandidateModel,
    CandidateModelError,
    Candidates,
    QuestionLike,
    propose_batch,
)
from grounding.prior.local import LocalCandidateModel
from grounding.prior.remote import OpenAICompatibleModel

__all__ = [
    "Candidates",
    "CandidateModel",
    "CandidateModelError",
    "QuestionLike",
    "Blinded",
    "propose_batch",
    "KGEAnswerer",
    "OpenAICompatibleModel",
    "LocalCandidateModel",
]
