"""Grounded question answering: candidate models (the paper's LLM prior), the loop from a
question to a grounded answer or an abstention, and its metrics."""

from grounding.qa import candidates as _candidates
from grounding.qa.candidates import *  # noqa: F403

__all__ = [*_candidates.__all__]
