r"""Words: the one tokenizer of the package and the lexical scorer built on it.

- :func:`tokenize`: lower-case alphanumeric word tokens; every encoder, the entity and answer
  linker and BM25 cut text with it.
- :class:`BM25`: Okapi BM25 as a sparse ``[docs, vocab]`` weight matrix (one mat-vec a query),
  :math:`s(d, q) = \sum_{t \in q} \mathrm{idf}(t)\,\frac{f_{t,d}(k_1+1)}{f_{t,d} + k_1(1 - b +
  b\,|d|/\mathrm{avgdl})}`, :math:`\mathrm{idf}(t) = \log(1 + (N - n_t + 0.5)/(n_t + 0.5))`.
"""

from __future__ import annotations

import math
import numbers
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["tokenize", "check_texts", "BM25"]

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric word tokens; anything else (``_``, punctuation, accents) splits.

    Example:
        >>> tokenize("Amino_acid -> Protein (2x)!")
        ['amino', 'acid', 'protein', '2x']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _TOKEN.findall(text.lower())


def check_texts(texts: Sequence[str], what: str = "texts") -> list[str]:
    """``texts`` as a list of str; a bare string or bytes (whose characters would be read as
    texts) or an entry that is not a str is a ``TypeError`` naming ``what``."""
    if isinstance(texts, str | bytes):
        raise TypeError(f"{what} must be a sequence of str, not a single {type(texts).__name__}")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{what}[{i}] must be a str, got {type(t).__name__}")
    return texts


def no_tokens(i: int, text: str) -> ValueError:
    """The error for text ``i`` without a :func:`tokenize` token: it cannot be embedded."""
    return ValueError(f"texts[{i}] has no tokens ({text!r:.60}, no a-z/0-9); it cannot be embedded")


class BM25:
    """Okapi BM25 over a corpus, as a sparse ``[n_docs, vocab]`` matrix of term weights.

    Args:
        corpus: the documents (tokenized with :func:`tokenize`; token-less ones score 0).
        k1: term-frequency saturation (>= 0).
        b: length normalization, in ``[0, 1]``.

    References:
        Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009.

    Example:
        >>> bm = BM25(["red cell", "red red cloud", "blue sky"])
        >>> s = bm.scores("red cloud")
        >>> int(s.argmax()), float(s[2])
        (1, 0.0)
    """

    def __init__(self, corpus: Sequence[str], k1: float = 1.5, b: float = 0.75):
        corpus = check_texts(corpus, "corpus")
        if not corpus:
            raise ValueError("BM25 needs a non-empty corpus")
        if not (isinstance(k1, numbers.Real) and math.isfinite(k1) and k1 >= 0):
            raise ValueError(f"k1 must be a finite number >= 0, got {k1!r}")
        if not (isinstance(b, numbers.Real) and 0 <= b <= 1):
            raise ValueError(f"b must lie in [0, 1], got {b!r}")
        self.k1, self.b = float(k1), float(b)
        self.vocab: dict[str, int] = {}
        rows, cols, tfs, lengths = [], [], [], []
        for d, doc in enumerate(corpus):
            toks = tokenize(doc)
            lengths.append(len(toks))
            for term, tf in Counter(toks).items():
                rows.append(d)
                cols.append(self.vocab.setdefault(term, len(self.vocab)))
                tfs.append(tf)
        n = self.n_docs = len(corpus)
        self.doc_len = np.array(lengths, dtype=np.float64)
        self.avgdl = float(self.doc_len.mean())
        rows, cols, tf = np.array(rows, int), np.array(cols, int), np.array(tfs, np.float64)
        df = np.bincount(cols, minlength=len(self.vocab)).astype(np.float64)
        self.idf = np.log((n - df + 0.5) / (df + 0.5) + 1.0)
        norm = self.k1 * (1.0 - self.b + self.b * self.doc_len[rows] / max(self.avgdl, 1e-300))
        w = self.idf[cols] * tf * (self.k1 + 1.0) / (tf + norm)
        self.weights = sp.csr_matrix((w, (rows, cols)), shape=(n, len(self.vocab)))

    def _query_matrix(self, queries: list[str]) -> sp.csr_matrix:
        """``[vocab, Q]`` counts of each query's in-vocabulary tokens."""
        rows, cols = [], []
        for j, q in enumerate(queries):
            toks = tokenize(q)
            if not toks:
                raise ValueError(f"query has no tokens: {q!r}")
            for t in toks:
                if t in self.vocab:
                    rows.append(self.vocab[t])
                    cols.append(j)
        data = np.ones(len(rows))
        return sp.csr_matrix((data, (rows, cols)), shape=(len(self.vocab), len(queries)))

    def scores(self, query: str) -> np.ndarray:
        """``[n_docs]`` float64 BM25 scores (a repeated query token counts each time)."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        return self.scores_batch([query])[0]

    def scores_batch(self, queries: Sequence[str]) -> np.ndarray:
        """``[Q, n_docs]`` float64 BM25 scores of several queries."""
        q = self._query_matrix(check_texts(queries, "queries"))
        return np.asarray((self.weights @ q).toarray().T, dtype=np.float64)
