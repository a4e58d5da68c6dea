"""Brute-force references shared by several test files."""

from __future__ import annotations


def follow(triples, frontier, rel):
    """Brute force: one step of a chain over name triples (``r^-1`` reads ``r`` backwards)."""
    if rel.endswith("^-1"):
        base = rel[:-3]
        return {h for h, r, t in triples if r == base and t in frontier}
    return {t for h, r, t in triples if r == rel and h in frontier}
