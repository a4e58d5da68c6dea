"""Datasets: the Lou Seal running example, real benchmark knowledge graphs, a TSV loader, and
retrieval benchmarks (PathRAG-6, its reconstruction, anchored retrieval on knowledge graphs)."""

from grounding.datasets import kg as _kg
from grounding.datasets import kgqa as _kgqa
from grounding.datasets import lou_seal as _lou_seal
from grounding.datasets import pathrag6 as _pathrag6
from grounding.datasets import pathrag6_reconstruction as _pathrag6_reconstruction
from grounding.datasets import tsv as _tsv
from grounding.datasets.kg import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.datasets.kgqa import *  # noqa: F403
from grounding.datasets.lou_seal import *  # noqa: F403
from grounding.datasets.pathrag6 import *  # noqa: F403
from grounding.datasets.pathrag6_reconstruction import *  # noqa: F403
from grounding.datasets.tsv import *  # noqa: F403

__all__ = [
    *_tsv.__all__,
    *_kg.__all__,
    *_lou_seal.__all__,
    *_pathrag6.__all__,
    *_pathrag6_reconstruction.__all__,
    *_kgqa.__all__,
]
