"""Grounded question answering: candidate models (the paper's LLM prior), the loop from a
question to a grounded answer or an abstention, and its metrics."""

from grounding.qa import answerer as _answerer
from grounding.qa import candidates as _candidates
from grounding.qa import loop as _loop
from grounding.qa import metrics as _metrics
from grounding.qa import openai as _openai
from grounding.qa import pankrag as _pankrag
from grounding.qa import proh as _proh
from grounding.qa.answerer import *  # noqa: F403
from grounding.qa.candidates import *  # noqa: F403
from grounding.qa.loop import *  # noqa: F403
from grounding.qa.metrics import *  # noqa: F403
from grounding.qa.openai import *  # noqa: F403
from grounding.qa.pankrag import *  # noqa: F403
from grounding.qa.proh import *  # noqa: F403

__all__ = [
    *_candidates.__all__,
    *_answerer.__all__,
    *_loop.__all__,
    *_metrics.__all__,
    *_openai.__all__,
    *_pankrag.__all__,
    *_proh.__all__,
]
