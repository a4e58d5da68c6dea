"""Helpers shared by the blind predictors and the planners: :mod:`grounding.plans.relation_chains`,
:mod:`grounding.plans.composed_chains`, :mod:`grounding.plans.role_chains` and
:mod:`grounding.plans.planners` (checked relation and role chains, unit-norm embeddings read
through the one encoder check, and the tempered softmax of their top candidates' scores)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grounding.language.encoders import checked_embeddings, unit_rows


def _embed(encode: Callable[[Sequence[str]], Any], texts: Sequence[str]) -> np.ndarray:
    """``[n, d]`` float64 unit rows of ``encode(texts)``, read through the one check of an
    encoder's output (:func:`grounding.language.checked_embeddings`: a ``ValueError`` names the
    encoder and the first offending text when the output is not one finite row per text)."""
    texts = list(texts)
    return unit_rows(checked_embeddings(encode, texts, encode(texts), np.float64))


def _chain(chain: object, where: str, *, empty: bool = False) -> tuple[str, ...]:
    """``chain`` as a tuple of relation names. A ``TypeError`` names ``where`` for a bare
    string (its characters would be read as one-letter relations) or a chain holding anything
    but non-empty strings; a ``ValueError`` for an empty chain, unless ``empty``."""
    if isinstance(chain, (str, bytes)):
        raise TypeError(
            f"{where}: a relation chain must be a sequence of relation names, not a string: "
            f"{chain!r:.100} (write ({chain!r:.100},) for a one-relation chain)"
        )
    try:
        out = tuple(chain)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{where}: a relation chain must be a sequence of relation names, got {chain!r:.100}"
        ) from None
    if not all(isinstance(r, str) and r for r in out):
        raise TypeError(
            f"{where}: a relation chain must hold non-empty relation names (str), got {out!r:.100}"
        )
    if not out and not empty:
        raise ValueError(f"{where}: the relation chain is empty")
    return out


def _role_chain(roles: object, where: str) -> tuple[tuple[str, str], ...]:
    """``roles`` as a non-empty tuple of role pairs ``(entering role, leaving role)``. A
    ``TypeError`` names ``where`` for a bare string, or a pair that is a string or not two
    role names; a ``ValueError`` for an empty chain."""
    if isinstance(roles, (str, bytes)):
        raise TypeError(
            f"{where}: a role chain must be a sequence of role pairs, not a string: {roles!r:.100}"
        )
    try:
        out = tuple(roles)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{where}: a role chain must be a sequence of role pairs, got {roles!r:.100}"
        ) from None
    pairs = []
    for pair in out:
        ok = not isinstance(pair, (str, bytes)) and isinstance(pair, Sequence) and len(pair) == 2
        if not (ok and all(isinstance(r, str) and r for r in pair)):
            raise TypeError(
                f"{where}: each hop of a role chain must be a pair of role names (entering, "
                f"leaving), got {pair!r:.100}"
            )
        pairs.append((pair[0], pair[1]))
    if not pairs:
        raise ValueError(f"{where}: the role chain is empty")
    return tuple(pairs)


def _example(i: int | None, q: object) -> str:
    """How an error names example ``i`` of a batch (or the one question when ``i`` is
    ``None``): its index and text."""
    which = "the question" if i is None else f"question {i}"
    return f"{which} ({getattr(q, 'text', q)!r:.80})"


def _tempered_softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """:math:`\\mathrm{softmax}(s / T)` of the top candidates' scores (relation chains or role
    chains), shifted by the maximum so that no finite score overflows (empty in, empty out)."""
    s = np.asarray(scores, float)
    if not s.size:
        return s
    z = np.exp((s - s.max()) / temperature)
    return z / z.sum()
