"""Approximate nearest-neighbour search (:mod:`grounding.retrieval.ann`): bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
from _retrieval import _chain

from grounding.retrieval import (
    PCR,
)


def test_ann_index_rejects_bad_arguments():
    pytest.importorskip("faiss")
    from grounding.retrieval import ANNIndex

    emb = np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="float"):
        ANNIndex(emb.astype(int))
    with pytest.raises(ValueError, match="nlist must lie in"):
        ANNIndex(emb, nlist=101)
    with pytest.raises(ValueError, match="nprobe must be an int >= 1"):
        ANNIndex(emb, nlist=2, nprobe=1.5)
    with pytest.raises(ValueError, match="train_size=1 < nlist=2"):
        ANNIndex(emb, nlist=2, train_size=1)
    ann = ANNIndex(emb)
    assert (ann.nlist, ann.nprobe) == (2, 1)  # 100 // 39 cells, nlist // 8 probed (at least 1)
    with pytest.raises(ValueError, match="nprobe must lie in"):
        ann.nprobe = 3
    g, index = _chain()
    with pytest.raises(ValueError, match="the ANNIndex covers"):
        PCR(index, search=ann)
