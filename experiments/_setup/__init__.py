"""What several experiments (and benchmarks) build and score alike: the question-answering
settings, benchmarks and trained answerers, the scores of a QA outcome, the
blind relation-path predictors, and the learned triple retrievers' schedule.

- :func:`build` (memoized): the templated benchmark of a :class:`Setting`, its TransE answerer
  and its retrievers; used by ``grounded_qa``, ``pankrag``, ``learned_retrievers`` and
  ``benchmarks/learned_full_schedule.py``, so one process trains each answerer once.
- :func:`score`: the Hits@1, F1 and confidence of one outcome of any system (``grounded_qa``,
  ``learned_retrievers``); :func:`evaluate`: the per-method summary of outcomes. Lambda is
  fitted by the library's :func:`grounding.qa.fit_lambda` in every experiment.
- :func:`blind_paths`: the relation-path predictors of the blind systems (the chain reader
  and the rows beside it).
- :class:`Scale`, :func:`shared_candidates`, :func:`train_variants`, :func:`downstream`, ...:
  the learned retrievers' candidate sets, training, metrics and downstream grounding, shared by
  ``learned_retrievers`` and ``benchmarks/learned_full_schedule.py``.

No experiment imports another experiment: what two of them share lives here, cut by idea
into :mod:`experiments._setup.qa` and :mod:`experiments._setup.learned` (every name is
re-exported here).
"""

from experiments._setup import learned as _learned
from experiments._setup import qa as _qa
from experiments._setup.learned import *  # noqa: F403  (names listed in each module's __all__)
from experiments._setup.qa import *  # noqa: F403

__all__ = [*_qa.__all__, *_learned.__all__]
