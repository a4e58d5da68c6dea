"""Tiny llama GGUF files written with the ``gguf`` package: a real file of the format (a few
kilobytes, random weights, a byte-level vocabulary), to test how the in-process model reads
and refuses model files without the 98 MB one. Options plant one defect each."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _byte_level() -> list[str]:
    """GPT-2's byte-to-character table: the 256 base tokens of a byte-level BPE."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_tiny_gguf(
    path: Path,
    *,
    arch: str = "llama",
    template: str = CHATML,
    context: int = 512,
    drop: str | None = None,
    reshape: str | None = None,
    nan_in: str | None = None,
    seed: int = 0,
) -> Path:
    """A 1-layer llama (width 8, 2 heads, 1 key/value head) at ``path``; ``drop`` leaves out
    a tensor, ``reshape`` writes one with a transposed shape, ``nan_in`` puts a NaN in one."""
    import gguf

    d, ff, nh, nkv = 8, 16, 2, 1
    tokens = [*_byte_level(), "ab", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(1)
    w.add_context_length(context)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ff)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([1] * (len(tokens) - 3) + [3, 3, 3])
    w.add_token_merges(["a b"])
    w.add_eos_token_id(len(tokens) - 1)
    w.add_chat_template(template)
    rng = np.random.default_rng(seed)
    hd = d // nh
    shapes = {"token_embd.weight": (len(tokens), d), "output_norm.weight": (d,)}
    for name, shape in [("attn_norm", (d,)), ("attn_q", (d, d)), ("attn_k", (nkv * hd, d)),
                        ("attn_v", (nkv * hd, d)), ("attn_output", (d, d)), ("ffn_norm", (d,)),
                        ("ffn_gate", (ff, d)), ("ffn_up", (ff, d)), ("ffn_down", (d, ff))]:  # fmt: skip
        shapes[f"blk.0.{name}.weight"] = shape
    for name, shape in shapes.items():
        if name == drop:
            continue
        x = (rng.normal(size=shape) * 0.3 if len(shape) > 1 else np.ones(shape)).astype(np.float32)
        if name == reshape:
            x = np.ascontiguousarray(x.T) if x.ndim == 2 else np.ones(2 * shape[0], np.float32)
        if name == nan_in:
            x.flat[0] = np.nan
        w.add_tensor(name, x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
