"""The llama forward pass of :class:`grounding.language.LocalLM` in JAX, and the reading of a
GGUF file (weights dequantized by ``gguf``, the tokenizer rebuilt by ``tokenizers``): pure
functions over a key/value cache, every shape bucketed by the caller, each compiled through the package's one
bounded registry of programs (:func:`grounding.programs.run_program`: counted, capped, and
dropped by :func:`grounding.programs.release_programs` with the solver's)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import math
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from grounding.programs import run_program


def need(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise ImportError(
            f"LocalLM needs the {module!r} package: pip install 'grounding[llm]'"
        ) from None


@dataclasses.dataclass(frozen=True)
class Config:
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    rope_base: float
    eps: float
    vocab: int

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


class Weights(NamedTuple):
    """What a GGUF file gives :class:`~grounding.language.LocalLM`, read once per file."""

    cfg: Config
    params: dict
    tokenizer: Any
    template: str
    eos: int
    context: int  # the longest sequence the model was trained on (llama.context_length)
    sha256: str
    size: int


#: The tensors of a llama block (per layer ``blk.<i>.<name>.weight``).
_BLOCK = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
          "ffn_up", "ffn_down")  # fmt: skip


def read_gguf(path: str | Path) -> Weights:
    """The weights, tokenizer and chat template of a llama GGUF file: read and checked once
    for each version of the file (a file replaced on disk, by its size, modification time or
    inode, is read again; its sha256 is kept with the weights).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: naming the file and what is wrong: not a GGUF file (empty, another
            format), truncated or corrupt, another architecture, a missing field or tensor,
            a tensor whose shape contradicts the header, non-finite weights, or another
            tokenizer.
    """
    path = Path(path)
    st = path.stat()
    return _read(str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=2)
def _read(path: str, size: int, mtime_ns: int, inode: int) -> Weights:
    gguf = need("gguf")
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file (no GGUF magic in its first 4 bytes)")
        fh.seek(0)
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    try:
        reader = gguf.GGUFReader(path)
    except Exception as err:  # noqa: BLE001 (whatever numpy or gguf raise on a broken file)
        raise ValueError(
            f"{path}: truncated or corrupt GGUF file ({type(err).__name__}: {err})"
        ) from None
    arch = _field(reader, "general.architecture", path)
    if arch != "llama":
        raise ValueError(f"{path}: architecture {arch!r}; LocalLM runs llama-architecture models")
    cfg = Config(
        n_layers=int(_field(reader, "llama.block_count", path)),
        d_model=int(_field(reader, "llama.embedding_length", path)),
        n_heads=int(_field(reader, "llama.attention.head_count", path)),
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv", path)),
        rope_base=float(_field(reader, "llama.rope.freq_base", path)),
        eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon", path)),
        vocab=len(_field(reader, "tokenizer.ggml.tokens", path)),
    )
    ff = int(_field(reader, "llama.feed_forward_length", path))
    context = int(_field(reader, "llama.context_length", path))
    if not (cfg.n_layers > 0 and cfg.n_heads > 0 and cfg.n_kv_heads > 0 and context > 0
            and cfg.d_model % cfg.n_heads == 0 and cfg.n_heads % cfg.n_kv_heads == 0):  # fmt: skip
        raise ValueError(f"{path}: inconsistent header ({cfg}, context {context})")
    tensors = _tensors(reader, path, cfg, ff, gguf)

    def stack(name: str) -> jnp.ndarray:
        return jnp.asarray(
            np.stack([tensors[f"blk.{i}.{name}.weight"] for i in range(cfg.n_layers)])
        )

    embed = tensors["token_embd.weight"]
    params = {
        "embed": jnp.asarray(embed),
        "out": jnp.asarray(tensors.get("output.weight", embed)),  # tied when absent
        "norm": jnp.asarray(tensors["output_norm.weight"]),
        "layers": {name: stack(name) for name in _BLOCK},
    }
    template = _field(reader, "tokenizer.chat_template", path)
    eos = int(_field(reader, "tokenizer.ggml.eos_token_id", path))
    return Weights(cfg, params, _tokenizer(reader, path), template, eos, context, digest, size)


def _field(reader, key: str, path: str):
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"{path}: the GGUF file has no {key!r} field")
    try:
        return field.contents()
    except Exception as err:  # noqa: BLE001 (a field whose bytes do not parse)
        raise ValueError(f"{path}: field {key!r} is unreadable ({err})") from None


def _tensors(reader, path: str, cfg: Config, ff: int, gguf) -> dict[str, np.ndarray]:
    """Every tensor the forward pass reads, dequantized, each checked against the header's
    shape (``[out, in]`` as the forward pass multiplies) and for finite values."""
    d, kv = cfg.d_model, cfg.n_kv_heads * cfg.head_dim
    want = {"token_embd.weight": (cfg.vocab, d), "output_norm.weight": (d,)}
    shapes = dict(attn_norm=(d,), attn_q=(d, d), attn_k=(kv, d), attn_v=(kv, d),
                  attn_output=(d, d), ffn_norm=(d,), ffn_gate=(ff, d), ffn_up=(ff, d),
                  ffn_down=(d, ff))  # fmt: skip
    for i in range(cfg.n_layers):
        want.update({f"blk.{i}.{name}.weight": shapes[name] for name in _BLOCK})
    found = {t.name: t for t in reader.tensors}
    if "output.weight" in found:
        want["output.weight"] = (cfg.vocab, d)
    out = {}
    for name, shape in want.items():
        t = found.get(name)
        if t is None:
            raise ValueError(f"{path}: the GGUF file has no tensor {name!r}")
        got = tuple(int(x) for x in reversed(t.shape))
        if got != shape:
            raise ValueError(
                f"{path}: tensor {name!r} has shape {list(got)} where the header implies "
                f"{list(shape)}"
            )
        try:
            x = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), np.float32)
        except Exception as err:  # noqa: BLE001
            raise ValueError(f"{path}: tensor {name!r} is unreadable ({err})") from None
        if x.shape != shape:
            raise ValueError(f"{path}: tensor {name!r} holds {list(x.shape)}, not {list(shape)}")
        if not np.isfinite(x).all():
            raise ValueError(f"{path}: tensor {name!r} holds non-finite weights (NaN or inf)")
        out[name] = x
    return out


def _tokenizer(reader, path: str):
    tokenizers = need("tokenizers")
    if _field(reader, "tokenizer.ggml.model", path) != "gpt2":
        raise ValueError(f"{path}: LocalLM reads byte-level BPE (gpt2) tokenizers only")
    tokens = _field(reader, "tokenizer.ggml.tokens", path)
    types = np.asarray(_field(reader, "tokenizer.ggml.token_type", path))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges", path)]
    try:
        bpe = tokenizers.models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    except Exception as err:  # noqa: BLE001
        raise ValueError(f"{path}: the tokenizer does not build ({err})") from None
    tok = tokenizers.Tokenizer(bpe)
    # SmolLM's pre-tokenizer (llama.cpp's "smollm"): single digits, then GPT-2's byte level.
    pre = tokenizers.pre_tokenizers
    tok.pre_tokenizer = pre.Sequence(
        [pre.Digits(individual_digits=True), pre.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = tokenizers.decoders.ByteLevel()
    control = [tokens[i] for i in np.flatnonzero(types == 3)]  # GGUF token type 3: control
    tok.add_special_tokens([tokenizers.AddedToken(t, special=True) for t in control])
    return tok


def _rms(x, w, eps):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x, pos, base):
    """Rotary embedding on adjacent pairs ``(x_{2i}, x_{2i+1})`` (GGUF's layout of q and k)."""
    hd = x.shape[-1]
    inv = base ** (-jnp.arange(0, hd, 2, dtype=jnp.float32) / hd)
    ang = pos[..., None, None].astype(jnp.float32) * inv  # [B, T, 1, hd/2]
    cos, sin = jnp.cos(ang), jnp.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return jnp.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1).reshape(x.shape)


def forward(*args: object, cfg: Config) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """:func:`_forward` of ``args``, compiled once per configuration and shapes in the bounded
    registry."""
    make = lambda: functools.partial(_forward, cfg=cfg)  # noqa: E731
    return run_program(("local model", "forward", cfg), make, *args)


def _forward(
    params: dict,
    cache_k: jax.Array,
    cache_v: jax.Array,
    cache_ok: jax.Array,
    tokens: np.ndarray,
    ok: np.ndarray,
    start: int,
    cfg: Config,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Run ``tokens`` [B, T] (``ok`` marks real tokens) written at cache slots
    ``start .. start + T``; return log-softmax [B, T, V] and the updated cache.

    A query at slot ``s`` attends to every valid slot ``<= s``; positions are counted over
    valid slots only, so padding never shifts the rotary phase."""
    B, T = tokens.shape
    S = cache_ok.shape[1]
    hd, nh, nkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    cache_ok = jax.lax.dynamic_update_slice(cache_ok, ok, (0, start))
    pos_all = jnp.cumsum(cache_ok, axis=1) - 1  # position of each valid slot
    pos = jax.lax.dynamic_slice(pos_all, (0, start), (B, T))
    slot_q = start + jnp.arange(T)
    slot_k = jnp.arange(S)[None, None, :]
    # a query attends to every valid slot up to its own; a padding query to itself too, so
    # that its (unused) state stays finite: a NaN there would reach real queries as 0 * NaN
    itself = slot_k == slot_q[None, :, None]
    attend = (cache_ok[:, None, :] | itself) & (slot_k <= slot_q[None, :, None])
    mask = jnp.where(attend, jnp.float32(0.0), jnp.float32(-jnp.inf))[:, None, None]
    x = params["embed"][tokens]

    def layer(x, inputs):
        w, ck, cv = inputs
        h = _rms(x, w["attn_norm"], cfg.eps)
        q = (h @ w["attn_q"].T).reshape(B, T, nh, hd)
        k = (h @ w["attn_k"].T).reshape(B, T, nkv, hd)
        v = (h @ w["attn_v"].T).reshape(B, T, nkv, hd)
        q, k = _rope(q, pos, cfg.rope_base), _rope(k, pos, cfg.rope_base)
        ck = jax.lax.dynamic_update_slice(ck, k, (0, start, 0, 0))
        cv = jax.lax.dynamic_update_slice(cv, v, (0, start, 0, 0))
        g = nh // nkv  # query heads per key/value head (grouped-query attention)
        qg = q.reshape(B, T, nkv, g, hd).transpose(0, 2, 3, 1, 4)  # [B, kv, g, T, hd]
        s = jnp.einsum("bkgtd,bskd->bkgts", qg, ck) / math.sqrt(hd) + mask
        a = jnp.einsum("bkgts,bskd->bkgtd", jax.nn.softmax(s, axis=-1), cv)
        x = x + a.transpose(0, 3, 1, 2, 4).reshape(B, T, nh * hd) @ w["attn_output"].T
        h = _rms(x, w["ffn_norm"], cfg.eps)
        x = x + (jax.nn.silu(h @ w["ffn_gate"].T) * (h @ w["ffn_up"].T)) @ w["ffn_down"].T
        return x, (k, v)

    # the layers emit only the new keys and values; the cache is written once, after the scan
    # (emitting whole per-layer caches from the scan copies the cache once per layer)
    x, (new_k, new_v) = jax.lax.scan(layer, x, (params["layers"], cache_k, cache_v))
    cache_k = jax.lax.dynamic_update_slice(cache_k, new_k, (0, 0, start, 0, 0))
    cache_v = jax.lax.dynamic_update_slice(cache_v, new_v, (0, 0, start, 0, 0))
    logits = _rms(x, params["norm"], cfg.eps) @ params["out"].T
    return jax.nn.log_softmax(logits, axis=-1), cache_k, cache_v, cache_ok


def grow(
    cache_k: jax.Array, cache_v: jax.Array, cache_ok: jax.Array, slots: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The cache with its slot axis padded (invalid slots) to ``slots``."""
    make = lambda: functools.partial(_grow, slots=slots)  # noqa: E731
    return run_program(("local model", "grow", slots), make, cache_k, cache_v, cache_ok)


def _grow(
    cache_k: jax.Array, cache_v: jax.Array, cache_ok: jax.Array, slots: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    pad = slots - cache_ok.shape[1]
    grow = [(0, 0)] * cache_k.ndim
    grow[2] = (0, pad)
    return jnp.pad(cache_k, grow), jnp.pad(cache_v, grow), jnp.pad(cache_ok, ((0, 0), (0, pad)))


def take_rows(
    cache_k: jax.Array, cache_v: jax.Array, cache_ok: jax.Array, rows: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The cache rows ``rows`` (a beam's rows follow their parents)."""
    return run_program(("local model", "take rows"), lambda: _take_rows,
                       cache_k, cache_v, cache_ok, rows)  # fmt: skip


def _take_rows(
    cache_k: jax.Array, cache_v: jax.Array, cache_ok: jax.Array, rows: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    return cache_k[:, rows], cache_v[:, rows], cache_ok[rows]
