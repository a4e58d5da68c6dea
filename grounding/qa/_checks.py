"""Checks shared by the QA systems: their arguments, checked when a system is built, each error
naming the argument."""

from __future__ import annotations

import math

import numpy as np

from grounding.graph import Triple
from grounding.prior import Candidates
from grounding.problem import Realization
from grounding.solver import GroundingConfig
from grounding.solver.config import make_config

__all__ = ["check_config"]


def check_config(
    owner: str, config: object, realization: object = None
) -> tuple[GroundingConfig, Realization | None]:
    """A system's grounding settings, checked once when it is built: a
    :class:`~grounding.GroundingConfig` (one rebuilt from leaves, e.g. by ``tree_map``, is
    checked as a new one: a value out of range is a ``ValueError`` naming ``owner``, the
    argument and the field) and an optional :class:`~grounding.Realization` (a ``TypeError``
    names ``owner`` and the argument otherwise)."""
    if not isinstance(config, GroundingConfig):
        raise TypeError(
            f"{owner}: config must be a GroundingConfig (e.g. GroundingConfig(lam=4.0, "
            f"kappa=1.0)), got {config!r:.100}"
        )
    try:  # a config rebuilt from leaves (tree_map, an optimizer step) is checked here too
        config = make_config(config, {}, owner)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{owner}: config: {err}") from None
    if realization is not None and not isinstance(realization, Realization):
        raise TypeError(f"realization must be a Realization or None, got {realization!r:.100}")
    return config, realization


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
    """The batch as a list, read once where the batch enters (a generator or any other
    one-shot iterable gives the same questions as a list); a bare string (whose characters
    would be read as questions) or anything that is not iterable is a ``TypeError``."""
    if isinstance(questions, (str, bytes)):
        raise TypeError(
            f"questions must be a sequence of questions, not a string: {questions!r:.100}"
        )
    try:
        return list(questions)  # type: ignore[call-overload]
    except TypeError as err:
        if hasattr(questions, "__iter__"):
            raise
        raise TypeError(
            f"questions must be an iterable of questions (a list, a tuple, a generator), got "
            f"{type(questions).__name__}: wrap one question in a list"
        ) from err


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
