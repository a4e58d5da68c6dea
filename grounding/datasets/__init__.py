"""Datasets (leaves: they import only the loaders here and the data types
:mod:`grounding.graph`, :mod:`grounding.evidence`, :mod:`grounding.query`): the Lou Seal
running example's data, real benchmark knowledge graphs (WordNet's synset names and glosses
among them), a TSV loader, and retrieval
benchmarks (PathRAG-6, anchored retrieval on knowledge graphs), and
MuSiQue's and FanOutQA's gold question decompositions (planning), and MetaQA's multi-hop
questions over a movie knowledge base, full or in part."""

from grounding.datasets import fanoutqa as _fanoutqa
from grounding.datasets import kg as _kg
from grounding.datasets import kg_retrieval as _kg_retrieval
from grounding.datasets import kgqa as _kgqa
from grounding.datasets import lou_seal as _lou_seal
from grounding.datasets import metaqa as _metaqa
from grounding.datasets import musique as _musique
from grounding.datasets import pathrag6 as _pathrag6
from grounding.datasets import tsv as _tsv
from grounding.datasets import wd50k as _wd50k
from grounding.datasets import wordnet as _wordnet
from grounding.datasets.fanoutqa import *  # noqa: F403  (names listed once, in each module's __all__)
from grounding.datasets.kg import *  # noqa: F403
from grounding.datasets.kg_retrieval import *  # noqa: F403
from grounding.datasets.kgqa import *  # noqa: F403
from grounding.datasets.lou_seal import *  # noqa: F403
from grounding.datasets.metaqa import *  # noqa: F403
from grounding.datasets.musique import *  # noqa: F403
from grounding.datasets.pathrag6 import *  # noqa: F403
from grounding.datasets.tsv import *  # noqa: F403
from grounding.datasets.wd50k import *  # noqa: F403
from grounding.datasets.wordnet import *  # noqa: F403

__all__ = [
    *_tsv.__all__,
    *_kg.__all__,
    *_lou_seal.__all__,
    *_pathrag6.__all__,
    *_kg_retrieval.__all__,
    *_kgqa.__all__,
    *_musique.__all__,
    *_fanoutqa.__all__,
    *_wd50k.__all__,
    *_wordnet.__all__,
    *_metaqa.__all__,
]
