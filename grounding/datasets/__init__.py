"""Datasets: the Lou Seal running example of the paper and a general TSV triple loader."""

from grounding.datasets import lou_seal as _lou_seal
from grounding.datasets.lou_seal import *  # noqa: F403  (the names are listed once, in lou_seal.__all__)

__all__ = list(_lou_seal.__all__)
