"""The one name rule of the package: what an entity or relation name may be and how it is
spelled, wherever a name enters (graph constructors, file loaders, answer linking, the names a
question or a problem gives).

A name is a non-empty string without leading or trailing whitespace and without a control or
format character (Unicode categories Cc and Cf: NUL, tab, line breaks, zero-width spaces and
joiners, direction marks, the byte-order mark), so that it round-trips through a TSV file and
two names that print alike are one name. Its one spelling is Unicode NFC (:func:`nfc`): "café"
written with a combining accent and with the precomposed letter is one name.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["checked_names", "first_bad_name", "name_problem", "nfc"]

_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def nfc(name: str) -> str:
    """``name`` in Unicode NFC, the one spelling of a name (an ASCII name is itself; anything
    but a string is returned as is, for :func:`name_problem` to report).

    Example:
        >>> nfc("cafe\\u0301") == "caf\\u00e9"
        True
    """
    if not isinstance(name, str) or name.isascii():
        return name
    return unicodedata.normalize("NFC", name)


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be an entity or relation name (see the module docstring), with the
    column of an offending character, or ``None``.

    Example:
        >>> name_problem("new york"), name_problem("New York "), name_problem("a\\u200bb")
        (None, 'has leading or trailing whitespace', 'holds the format character U+200B (ZERO WIDTH SPACE) at column 2')
    """
    if not isinstance(name, str):
        return f"is not a string ({type(name).__name__})"
    if not name:
        return "is empty"
    if name != name.strip():
        return "has leading or trailing whitespace"
    if name.isascii():
        bad = _ASCII_CONTROL.search(name)
        return None if bad is None else _character(bad.group(), bad.start())
    for i, ch in enumerate(name):
        if unicodedata.category(ch) in ("Cc", "Cf"):
            return _character(ch, i)
    return None


def _character(ch: str, i: int) -> str:
    if ch == "\ufeff":
        return f"holds a byte-order mark (U+FEFF) at column {i + 1}"
    if unicodedata.category(ch) == "Cc":
        return f"holds the control character {ch!r} at column {i + 1}"
    name = unicodedata.name(ch, "unnamed")
    return f"holds the format character U+{ord(ch):04X} ({name}) at column {i + 1}"


@functools.lru_cache(maxsize=16)
def first_bad_name(names: tuple) -> int | None:
    """Index of the first name of ``names`` the rule refuses, or ``None``; cached, because
    derived graphs share their vocabulary tuple."""
    return next((i for i, n in enumerate(names) if name_problem(n)), None)


def checked_names(kind: str, names: object) -> tuple[str, ...]:
    """``names`` in their one spelling (:func:`nfc`); a ``ValueError`` names the first that
    the rule refuses: its ``kind`` (``"entity"``, ``"relation"``), index and problem."""
    names = tuple(map(nfc, names))  # type: ignore[call-overload]
    i = first_bad_name(names)
    if i is not None:
        raise ValueError(f"{kind} name {i} ({names[i]!r:.100}) {name_problem(names[i])}")
    return names
