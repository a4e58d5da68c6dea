"""Checks shared by the QA loops: their configuration (checked when a loop is built, each
error naming the argument) and how one question's failure is reported."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from grounding.graph import Triple
from grounding.llm import EndpointError
from grounding.problem import Realization
from grounding.qa.candidates import CandidateModelError, Candidates
from grounding.solver.config import make_config

__all__ = ["QUESTION_ERRORS", "failure"]

#: The errors that fail one question (its outcome says why) rather than its batch: a candidate
#: model or endpoint failing, a name the graph lacks, data a retriever or ``ground`` refuses.
QUESTION_ERRORS = (CandidateModelError, EndpointError, OSError, LookupError, ValueError)


def failure(stage: str, err: BaseException) -> str:
    """Why a question failed at ``stage``: the stage, the error's type and its message."""
    msg = err.args[0] if isinstance(err, KeyError) and len(err.args) == 1 else str(err)
    return f"{stage} failed ({type(err).__name__}): {msg}"


#: A default ``eps`` that follows the status tolerance: ``eps_s`` when given, else ``kappa``,
#: so that the hard posterior (Eq. (6)) keeps exactly the candidates whose status is supported.
SUPPORT_TOLERANCE = object()


def check_ground_kwargs(
    owner: str, kwargs: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The grounding settings of a QA system, checked once when it is built: a
    :class:`~grounding.GroundingConfig` (``config``) and/or its settings (``defaults`` fill
    settings not given when no config is; an ``eps`` default of :data:`SUPPORT_TOLERANCE`
    becomes ``eps_s``, else ``kappa``), and an optional ``realization``. Returns the
    keywords of :func:`grounding.ground`: ``config`` (and ``realization``). A ``TypeError``
    names unknown settings or a missing ``lam``/``kappa``; a ``ValueError`` or ``TypeError``
    names a bad value."""
    settings = {k: v for k, v in kwargs.items() if k not in ("config", "realization")}
    config = kwargs.get("config")
    if config is None:
        settings = {**(defaults or {}), **settings}
        if settings.get("eps") is SUPPORT_TOLERANCE:
            tol = settings.get("eps_s")
            settings["eps"] = settings.get("kappa") if tol is None else tol
    out: dict[str, Any] = {"config": make_config(config, settings, owner)}
    realization = kwargs.get("realization")
    if realization is not None and not isinstance(realization, Realization):
        raise TypeError(f"realization must be a Realization or None, got {realization!r:.100}")
    if realization is not None:
        out["realization"] = realization
    return out


def check_real(
    name: str,
    value: object,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    open_low: bool = False,
) -> float:
    """A finite real number (not a bool) in ``[low, high]`` (``(low, high]`` with
    ``open_low``); a ``TypeError`` or ``ValueError`` names ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r:.100}")
    v = float(value)
    below = v <= low if open_low else v < low
    if not math.isfinite(v) or below or v > high:
        raise ValueError(f"{name} must be {_range(low, high, open_low)}, got {value!r}")
    return v


def _range(low: float, high: float, open_low: bool) -> str:
    above = f"> {low:g}" if open_low else f">= {low:g}"
    if math.isinf(high):
        return "finite" if math.isinf(low) else f"finite and {above}"
    if math.isinf(low):
        return f"finite and <= {high:g}"
    return f"in {'(' if open_low else '['}{low:g}, {high:g}]"


def check_questions(questions: object) -> list:
    """The batch as a list; a bare string (whose characters would be read as questions) is a
    ``TypeError``."""
    if isinstance(questions, (str, bytes)):
        raise TypeError(
            f"questions must be a sequence of questions, not a string: {questions!r:.100}"
        )
    return list(questions)  # type: ignore[call-overload]


def checked_candidates(got: object) -> Candidates:
    """A candidate model's reply, which must be :class:`Candidates` (``TypeError`` else)."""
    if not isinstance(got, Candidates):
        raise TypeError(f"the candidate model returned {type(got).__name__}, not Candidates")
    return got


def check_bool(name: str, value: object) -> bool:
    """A bool; a ``TypeError`` names ``name`` otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r:.100}")
    return bool(value)


def check_has(name: str, value: object, method: str) -> None:
    """``value`` has a callable ``method``; a ``TypeError`` names ``name`` otherwise."""
    if not callable(getattr(value, method, None)):
        raise TypeError(f"{name} must have a {method}() method, got {value!r:.100}")


def check_triples(negative: object) -> frozenset[Triple]:
    if isinstance(negative, (str, bytes)):
        raise TypeError(
            f"negative must be a set of (head, relation, tail) triples, got {negative!r:.100}"
        )
    out = frozenset(negative)  # type: ignore[arg-type]
    bad = [
        t
        for t in out
        if not (isinstance(t, tuple) and len(t) == 3 and all(isinstance(x, str) for x in t))
    ]
    if bad:
        raise TypeError(
            f"negative must hold (head, relation, tail) triples of str, got {bad[0]!r:.100}"
        )
    return out
