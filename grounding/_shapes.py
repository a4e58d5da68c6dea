"""Shape buckets: the one padding rule of every compiled program in the package.

A size ``n`` is padded to the next power of two (at least ``floor``), so that inputs of similar
size share one compiled program (the solver's candidates, edges, nodes and batch rows, the
alignment kernels' sequence lengths, the learned retrievers' subgraphs, the compacted evidence
vocabularies).
"""

from __future__ import annotations

__all__ = ["bucket"]


def bucket(n: int, floor: int = 8) -> int:
    """The padded size of ``n``: the next power of two ``>= n``, at least ``floor``.

    Example:
        >>> bucket(0), bucket(8), bucket(9), bucket(3, floor=1), bucket(100, floor=64)
        (8, 8, 16, 4, 128)
    """
    return max(floor, 1 << max(int(n) - 1, 0).bit_length())
