"""Shape buckets: the one padding rule of every compiled program in the package.

A size ``n`` is padded to the next power of two (at least ``floor``), so that inputs of similar
size share one compiled program (the solver's candidates, anchors, chain widths, edges, nodes
and batch rows, the alignment kernels' sequence lengths, the learned retrievers' subgraphs, the
compacted evidence vocabularies). With ``steps > 1`` each power of two is split into ``steps``
equal buckets (for large sizes, where doubling would double the work): the padding is then at
most a ``1 / steps`` share of the size, and a range of sizes still meets finitely many shapes
(``steps`` per doubling).
"""

from __future__ import annotations

__all__ = ["bucket"]


def bucket(n: int, floor: int = 8, steps: int = 1) -> int:
    """The padded size of ``n``: the next power of two ``>= n``, at least ``floor``; with
    ``steps`` (a power of two), the next multiple of ``2^k / steps`` where ``2^k`` is that power
    of two.

    Example:
        >>> bucket(0), bucket(8), bucket(9), bucket(3, floor=1), bucket(100, floor=64)
        (8, 8, 16, 4, 128)
        >>> bucket(70_000, steps=8), bucket(65_536, steps=8), bucket(65_537, steps=8)
        (73728, 65536, 73728)
    """
    top = max(floor, 1 << max(int(n) - 1, 0).bit_length())
    grain = max(top // (2 * steps), 1) if steps > 1 else top
    return max(floor, -(-int(n) // grain) * grain)
