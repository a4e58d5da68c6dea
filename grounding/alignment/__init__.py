r"""Trajectory distances: the product distance (2) and alignment costs (3).

Eq. (2) compares equal-length semantic trajectories step by step. Eq. (3) compares
variable-length ones through a declared family of admissible alignments ``A``:

.. math::  d_A(\rho, \rho') = \inf_{A} \sum_{(i,j) \in A} c(z_i, z'_j) + \mathrm{gap}(A).

Which costs are metrics is tested, not assumed (``tests/core/test_alignment.py``): the product
distance, edit distance (metric ``c``, constant gap ``> 0``) and exact ``W_1`` between
equal-size uniform sets are metrics; discrete Fréchet is a pseudometric (repeating an
element costs nothing); DTW violates the triangle inequality; entropic OT has
``d(x, x) > 0``.

Submodules: :mod:`grounding.alignment.sequences` holds the ground costs, the product
distance (2) and the grid dynamic programmes of (3) (DTW, soft-DTW, edit distance,
discrete Fréchet); :mod:`grounding.alignment.transport` holds optimal transport over
claim sets (Sinkhorn, entropic OT, exact OT); ``grounding.alignment._common`` holds the
input checks and the bucket padding both share. Every public name is re-exported here.
"""

from grounding.alignment import sequences as _sequences
from grounding.alignment import transport as _transport
from grounding.alignment.sequences import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.alignment.transport import *  # noqa: F403

__all__ = [*_sequences.__all__, *_transport.__all__]
