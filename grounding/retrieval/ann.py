r"""Approximate inner-product search over node vectors, for :class:`~grounding.retrieval.PCR`
with ``search="ann"`` (optional extra: ``pip install 'grounding[ann]'``, which installs faiss).

:class:`ANNIndex` is an inverted-file index (faiss ``IndexIVFFlat``): k-means splits the unit
node vectors into ``nlist`` cells; a query scans only the ``nprobe`` cells whose centroids have
the largest inner product with it. The vectors are stored uncompressed, so every returned score
is an exact cosine; what is approximate is *which* vectors get scanned, and recall@k is the
share of the exact top-k that falls in the scanned cells. On clustered vectors (text
embeddings) a few cells hold a query's neighbors; on isotropic random vectors they are spread
over all cells and recall is about the scanned share ``nprobe / nlist`` (no partition helps
there: ``benchmarks/retrieval.py --million`` measures both the recall and the time).

The search is restricted to an allowed node set (PCR's reachable set :math:`C(A)`) by a faiss
``IDSelectorBitmap``: scanned vectors outside the set are skipped, so every result is
admissible and no over-fetching is needed.
"""

from __future__ import annotations

import numpy as np

from grounding._checks import check_int

__all__ = ["ANNIndex"]

_MIN_PER_CELL = 39  # faiss's k-means wants at least this many training vectors per centroid


def _faiss():
    try:
        import faiss
    except ImportError as e:
        raise ImportError(
            "approximate search (PCR(search='ann'), ANNIndex) needs faiss: "
            "pip install 'grounding[ann]'"
        ) from e
    return faiss


class ANNIndex:
    """IVF-Flat inner-product index over ``[N, dim]`` unit vectors (see the module docstring).

    Args:
        embeddings: ``[N, dim]`` node vectors (a :class:`TextIndex`'s ``embeddings``; indexed
            and searched in float32).
        nlist: number of k-means cells (default ``round(sqrt(N))``, at most ``N // 39`` so
            that k-means has enough vectors per cell; ``1`` is an exhaustive scan).
        nprobe: cells scanned per query (default ``nlist // 8``, at least 1); settable.
        train_size: vectors sampled for k-means (default ``min(N, 64 * nlist)``).
        seed: seed of the training sample and of k-means.

    Raises:
        ImportError: faiss is not installed (names the ``ann`` extra).
        ValueError: embeddings that are not a non-empty 2-D float array, or a bad
            ``nlist``/``nprobe``/``train_size``.
    """

    def __init__(
        self,
        embeddings: np.ndarray,
        *,
        nlist: int | None = None,
        nprobe: int | None = None,
        train_size: int | None = None,
        seed: int = 0,
    ):
        faiss = _faiss()
        emb = np.asarray(embeddings)
        if not np.issubdtype(emb.dtype, np.floating) or emb.ndim != 2 or not emb.size:
            raise ValueError(
                f"ANNIndex: embeddings must be a non-empty float [N, dim] array, got "
                f"{emb.dtype} {list(emb.shape)}"
            )
        emb = emb.astype(np.float32, copy=False)  # faiss searches in float32
        n, dim = emb.shape
        if nlist is None:
            nlist = max(1, min(round(np.sqrt(n)), n // _MIN_PER_CELL))
        _check_count(nlist, "nlist", n)
        if train_size is None:
            train_size = min(n, 64 * nlist)
        _check_count(train_size, "train_size", n)
        if train_size < nlist:
            raise ValueError(f"ANNIndex: train_size={train_size} < nlist={nlist}")
        self.n_nodes, self.dim, self.nlist = n, dim, int(nlist)
        self.nprobe = max(1, self.nlist // 8) if nprobe is None else nprobe
        self.index = faiss.IndexIVFFlat(
            faiss.IndexFlatIP(dim), dim, self.nlist, faiss.METRIC_INNER_PRODUCT
        )
        self.index.cp.seed = int(seed)
        rng = np.random.default_rng(seed)
        sample = np.sort(rng.choice(n, int(train_size), replace=False))
        self.index.train(np.ascontiguousarray(emb[sample]))
        self.index.add(np.ascontiguousarray(emb))

    @property
    def nprobe(self) -> int:
        """Cells scanned per query (``1..nlist``)."""
        return self._nprobe

    @nprobe.setter
    def nprobe(self, value: int) -> None:
        _check_count(value, "nprobe", self.nlist)
        self._nprobe = int(value)

    def search(
        self, qv: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Approximate top-``k`` by inner product for each query vector ``[G, dim]``,
        restricted to the sorted node indices ``allowed`` (``None``: all nodes).

        Returns one ``(indices, scores)`` pair per query, best first (ties: lower index
        first); fewer than ``k`` pairs when the scanned cells hold fewer allowed nodes.
        """
        faiss = _faiss()
        q = np.ascontiguousarray(np.asarray(qv, np.float32).reshape(-1, self.dim))
        sel = None  # the selector and its bitmap are referenced here until the search returns
        if allowed is not None:
            mask = np.zeros(self.n_nodes, bool)
            mask[allowed] = True
            bits = np.packbits(mask, bitorder="little")  # node i: bit i % 8 of byte i // 8
            sel = faiss.IDSelectorBitmap(self.n_nodes, faiss.swig_ptr(bits))
        params = faiss.SearchParametersIVF(sel=sel, nprobe=self.nprobe)
        scores, ids = self.index.search(q, k, params=params)
        out = []
        for s, i in zip(scores, ids):
            found = i >= 0  # faiss pads with -1 when fewer than k were scanned
            s, i = s[found], i[found].astype(np.int64)
            order = np.lexsort((i, -s))
            out.append((i[order], s[order]))
        return out


def _check_count(value: int, name: str, upper: int) -> None:
    check_int(value, f"ANNIndex: {name}")
    if not value <= upper:
        raise ValueError(f"ANNIndex: {name} must lie in [1, {upper}], got {value}")
