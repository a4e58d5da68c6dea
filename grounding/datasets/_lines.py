"""Helpers shared by the file loaders: line splitting, short quotes of bad input, name checks."""

from __future__ import annotations

import re

from grounding._names import name_problem

__all__ = ["bad_name", "decode_utf8", "excerpt", "parse_number", "split_lines"]

#: Longest stretch of a malformed record quoted in an error message.
EXCERPT_CHARS = 200

_NUMBER = re.compile(
    r"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|inf|infinity)",
    re.IGNORECASE | re.ASCII,
)


def decode_utf8(raw: bytes, label: str, where: str = "{label}, line {line}") -> str:
    """``raw`` as UTF-8 text (a leading byte-order mark dropped); bytes that are not UTF-8 are a
    ValueError naming ``label``, the line and the byte (``where`` formats the first two)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(
            f"{where.format(label=label, line=line)}: not UTF-8 text (byte {raw[err.start]:#04x})"
        ) from None


def split_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n`` only (a trailing ``\\r`` dropped from each line).

    Unlike :meth:`str.splitlines`, characters such as U+2028 (line separator), U+0085 or a
    form feed stay inside the line: they are data, not line breaks, in these formats.
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)``, cut to about ``limit`` characters (with the full length) when longer."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def bad_name(name: str) -> str | None:
    """Why ``name`` cannot be an entity or relation name read from a file, or ``None``: the
    package's one name rule (:func:`grounding._names.name_problem`)."""
    return name_problem(name)


def parse_number(text: str) -> float:
    """A decimal number written plainly (``0.5``, ``1e-3``, ``nan``), else ValueError.

    Stricter than :func:`float`, which also reads ``0.5_0``, surrounding whitespace and
    non-ASCII digits.
    """
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"not a number: {excerpt(text)}")
    return float(text)
