r"""Learned triple scorers in JAX: SubgraphRAG's MLP and the structurally gated GNN.

One question is a padded :class:`Batch` row (its :class:`~grounding.retrieval.learned.features.
QuestionSubgraph` with text embeddings); :func:`logits` scores every candidate fact.

* **Scoring head** (SubgraphRAG): ``Linear -> ReLU -> Linear`` on
  :math:`[q \| x_h \| r \| x_t \| \mathrm{DDE}_h \| \mathrm{DDE}_t]` (``x``: entity text
  embeddings, an entity without text gets one shared learned vector), plus the refined states
  :math:`[z^{(L)}_h \| z^{(L)}_t]` when a GNN runs. The first layer is linear in the
  concatenation, so it is applied per entity and gathered per fact (same function, fewer
  FLOPs).
* **Message passing** (``L`` layers, GraphSAGE-style, every fact in both directions):
  :math:`z^{(0)}_v = \mathrm{ReLU}(W_0 [x_v \| \mathrm{DDE}_v])`,

  .. math::
      z^{(l+1)}_v = \mathrm{ReLU}\Big(W_s z^{(l)}_v + \frac{1}{\deg v}
      \sum_{(u, r, v)} g^{(l)}_{uv} \big(W_m z^{(l)}_u + P_{r, \pm}\big) + b\Big)

  with the gate :math:`g^{(l)}_{uv}`: ``"structural"`` —
  :math:`\sigma(\mathrm{MLP}^{(l)}([s_u \| s_v]))` of the structural tags ``s`` only (blind
  to content by construction); ``"mean"`` — 1 (ungated mean aggregation);
  ``"semantic"`` — :math:`\sigma(a^{(l)\top} (z_u \odot z_v) / \sqrt d + c^{(l)})`, similarity
  gating on the current states; ``"none"`` — no GNN (SubgraphRAG).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import check_int
from grounding._shapes import bucket
from grounding.retrieval.learned.features import N_DDE, N_TAGS, QuestionSubgraph

__all__ = [
    "GNNConfig",
    "Batch",
    "make_batch",
    "init_params",
    "logits",
    "gate_values",
    "entity_states",
    "dirichlet_energy",
    "GATES",
]

Gate = Literal["none", "mean", "structural", "semantic"]
GATES = ("none", "mean", "structural", "semantic")


@dataclasses.dataclass(frozen=True)
class GNNConfig:
    """Architecture of a triple scorer.

    Attributes:
        gate: ``"none"`` (no GNN: SubgraphRAG), ``"mean"`` (ungated), ``"structural"`` (the
            gate reads structural tags only) or ``"semantic"`` (the gate reads the states).
        layers: message-passing layers ``L`` (ignored for ``"none"``).
        hidden: width of the states and of the scoring head.
        gate_hidden: width of the structural gate's MLP.

    References:
        - Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
          Knowledge-Graph-Based Retrieval-Augmented Generation", 2025 (``gate="none"``).
        - An unpublished project write-up on the structurally gated GNN retriever (untitled;
          no code released), n.d.: the structural gate.
    """

    gate: Gate = "structural"
    layers: int = 2
    hidden: int = 128
    gate_hidden: int = 16

    def __post_init__(self) -> None:
        if self.gate not in GATES:
            raise ValueError(f"gate must be one of {GATES}, got {self.gate!r}")
        for name in ("layers", "hidden", "gate_hidden"):
            check_int(getattr(self, name), name, 0 if name == "layers" else 1)
        if self.gate != "none" and self.layers == 0:
            raise ValueError(f"gate {self.gate!r} needs layers >= 1 (layers=0 is gate='none')")

    @property
    def n_layers(self) -> int:
        return 0 if self.gate == "none" else self.layers


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Batch:
    """Padded questions (leading axis ``B``; ``N`` entities, ``M`` facts per row).

    Attributes:
        q: ``[B, D]`` question embeddings.
        x: ``[B, N, D]`` entity text embeddings; ``has_text``: ``[B, N]`` (else the shared
            learned vector).
        dde, tags: ``[B, N, N_DDE]``, ``[B, N, N_TAGS]``.
        entity_mask: ``[B, N]`` real entities.
        head, relation, tail: ``[B, M]`` local heads/tails, global relation ids.
        fact_mask: ``[B, M]`` real facts. labels: ``[B, M]``.
    """

    q: jax.Array
    x: jax.Array
    has_text: jax.Array
    dde: jax.Array
    tags: jax.Array
    entity_mask: jax.Array
    head: jax.Array
    relation: jax.Array
    tail: jax.Array
    fact_mask: jax.Array
    labels: jax.Array


def make_batch(
    subgraphs: Sequence[QuestionSubgraph],
    q: np.ndarray,
    entity_text: np.ndarray,
    has_text: np.ndarray | None = None,
    n_rows: int | None = None,
) -> Batch:
    """Stack questions into one padded :class:`Batch`: ``q`` ``[B, D]`` their embeddings,
    ``entity_text`` ``[n_entities, D]`` the graph's entity embeddings (indexed by each
    subgraph's ``entities``), ``has_text`` ``[n_entities]`` (default: all). ``n_rows``: pad
    the batch to that many rows with empty questions (no entities, no facts: every output
    of theirs is masked, and the training loss leaves them out), so that a last, smaller
    batch reuses the compiled program of the full ones (default: ``B`` rows)."""
    if len(subgraphs) == 0:
        raise ValueError("no questions to batch")
    q = np.asarray(q, np.float32)
    if q.shape != (len(subgraphs), entity_text.shape[1]):
        raise ValueError(
            f"q must be [{len(subgraphs)}, {entity_text.shape[1]}], got {list(q.shape)}"
        )
    B = len(subgraphs) if n_rows is None else n_rows
    if B < len(subgraphs):
        raise ValueError(f"n_rows={n_rows} is below the {len(subgraphs)} questions")
    q = np.pad(q, ((0, B - len(subgraphs)), (0, 0)))
    N = bucket(max(s.n_entities for s in subgraphs), floor=64)  # few shapes, few programs
    M = bucket(max(s.n_facts for s in subgraphs), floor=64)
    D = entity_text.shape[1]
    x = np.zeros((B, N, D), np.float32)
    ht = np.zeros((B, N), bool)
    dd = np.zeros((B, N, N_DDE), np.float32)
    tg = np.zeros((B, N, N_TAGS), np.float32)
    em = np.zeros((B, N), bool)
    h = np.zeros((B, M), np.int32)
    r = np.zeros((B, M), np.int32)
    t = np.zeros((B, M), np.int32)
    fm = np.zeros((B, M), bool)
    lab = np.zeros((B, M), np.float32)
    for i, s in enumerate(subgraphs):
        n, m = s.n_entities, s.n_facts
        x[i, :n] = entity_text[s.entities]
        ht[i, :n] = True if has_text is None else has_text[s.entities]
        dd[i, :n], tg[i, :n], em[i, :n] = s.dde, s.tags, True
        h[i, :m], r[i, :m], t[i, :m], fm[i, :m], lab[i, :m] = (
            s.head,
            s.relation,
            s.tail,
            True,
            s.labels,
        )
    return Batch(*(jnp.asarray(a) for a in (q, x, ht, dd, tg, em, h, r, t, fm, lab)))


def _dense(key, n_in: int, n_out: int) -> dict:
    w = jax.random.normal(key, (n_in, n_out), jnp.float32) * np.float32(np.sqrt(2.0 / n_in))  # He
    return {"w": w, "b": jnp.zeros(n_out, jnp.float32)}


def init_params(key: jax.Array, config: GNNConfig, text_dim: int, n_relations: int) -> dict:
    """Parameters of the scorer (a pytree of float32 arrays) for ``text_dim``-dimensional
    text embeddings and ``n_relations`` relation types."""
    H, L = config.hidden, config.n_layers
    keys = iter(jax.random.split(key, 8 + 4 * L))
    ent_in = text_dim + N_DDE + (H if L else 0)  # one entity's block of the head's input
    params = {
        "no_text": jax.random.normal(next(keys), (text_dim,), jnp.float32) * np.float32(0.1),
        "head_q": _dense(next(keys), text_dim, H),
        "head_r": {"w": _dense(next(keys), text_dim, H)["w"]},
        "head_h": {"w": _dense(next(keys), ent_in, H)["w"]},
        "head_t": {"w": _dense(next(keys), ent_in, H)["w"]},
        "out": _dense(next(keys), H, 1),
    }
    if L:
        params["in"] = _dense(next(keys), text_dim + N_DDE, H)
        params["layers"] = []
        for _ in range(L):
            layer = {
                "self": _dense(next(keys), H, H),
                "msg": {"w": _dense(next(keys), H, H)["w"]},
                "rel": {"w": _dense(next(keys), text_dim, 2 * H)["w"] * np.float32(0.1)},
            }
            kg = next(keys)
            if config.gate == "structural":
                k1, k2 = jax.random.split(kg)
                layer["gate"] = {
                    "l1": _dense(k1, 2 * N_TAGS, config.gate_hidden),
                    "l2": _dense(k2, config.gate_hidden, 1),
                }
            elif config.gate == "semantic":
                layer["gate"] = {
                    "a": jax.random.normal(kg, (H,), jnp.float32) * np.float32(0.1),
                    "c": jnp.zeros((), jnp.float32),
                }
            params["layers"].append(layer)
    return params


def _apply(p: dict, x: jax.Array) -> jax.Array:
    return x @ p["w"] + p["b"] if "b" in p else x @ p["w"]


def _text_part(params, flat: Batch, weights: Sequence[jax.Array]) -> list[jax.Array]:
    """``[x_v W]`` for each ``[D, k]`` block ``W`` of ``weights``, ``x_v`` an entity's text
    embedding or the shared learned vector: one matmul for every block, and the shared
    vector projected once (so no gradient flows through a ``[BN, D]`` array of texts)."""
    W = jnp.concatenate(list(weights), 1)
    y = jnp.where(flat.has_text[:, None], flat.x @ W, params["no_text"] @ W)
    return jnp.split(y, np.cumsum([w.shape[1] for w in weights])[:-1].tolist(), axis=1)


def _gate(config: GNNConfig, layer: dict, z_src, z_dst, s_src, s_dst) -> jax.Array:
    """``[E]`` gate per directed message; the structural gate sees the tags only."""
    if config.gate == "structural":
        hid = jax.nn.relu(_apply(layer["gate"]["l1"], jnp.concatenate([s_src, s_dst], -1)))
        return jax.nn.sigmoid(_apply(layer["gate"]["l2"], hid))[:, 0]
    if config.gate == "semantic":
        sim = jnp.sum(z_src * z_dst * layer["gate"]["a"], -1) / jnp.sqrt(z_src.shape[-1])
        return jax.nn.sigmoid(sim + layer["gate"]["c"])
    return jnp.ones(z_src.shape[0], z_src.dtype)


def _flatten(batch: Batch) -> tuple[Batch, jax.Array]:
    """The batch as one disjoint graph (row ``b``'s entities offset by ``b N``: message passing
    is one segment sum, no batched scatter) and each fact's row."""
    B, N = batch.entity_mask.shape
    M = batch.head.shape[1]
    off = (jnp.arange(B, dtype=batch.head.dtype) * N)[:, None]
    flat = Batch(
        q=batch.q,
        x=batch.x.reshape(B * N, -1),
        has_text=batch.has_text.reshape(-1),
        dde=batch.dde.reshape(B * N, -1),
        tags=batch.tags.reshape(B * N, -1),
        entity_mask=batch.entity_mask.reshape(-1),
        head=(batch.head + off).reshape(-1),
        relation=batch.relation.reshape(-1),
        tail=(batch.tail + off).reshape(-1),
        fact_mask=batch.fact_mask.reshape(-1),
        labels=batch.labels.reshape(-1),
    )
    return flat, jnp.repeat(jnp.arange(B), M)


def _messages(flat: Batch):
    """Directed messages: every fact forwards (direction 0), then every fact backwards (1)."""
    src = jnp.concatenate([flat.head, flat.tail])
    dst = jnp.concatenate([flat.tail, flat.head])
    rel = jnp.concatenate([flat.relation, flat.relation])
    direction = jnp.concatenate([jnp.zeros_like(flat.head), jnp.ones_like(flat.head)])
    live = jnp.concatenate([flat.fact_mask, flat.fact_mask])
    return src, dst, rel, direction, live


def _states(
    params, config: GNNConfig, flat: Batch, rel_text, x_in: jax.Array | None = None
) -> list[jax.Array]:
    """``[z^(0), ..., z^(L)]`` of a flattened batch (``[B N, H]`` each); ``x_in``: the text
    part of the input layer, when already computed."""
    W = params["in"]["w"]
    D = flat.x.shape[-1]
    if x_in is None:
        (x_in,) = _text_part(params, flat, [W[:D]])
    z = jax.nn.relu(x_in + flat.dde @ W[D:] + params["in"]["b"])
    z = z * flat.entity_mask[:, None]
    src, dst, rel, direction, live = _messages(flat)
    N, H = z.shape
    deg = jax.ops.segment_sum(live.astype(z.dtype), dst, num_segments=N)
    out = [z]
    for layer in params["layers"]:
        rel_proj = (rel_text @ layer["rel"]["w"]).reshape(-1, 2, H)  # P_{r,+}, P_{r,-}
        g = _gate(config, layer, z[src], z[dst], flat.tags[src], flat.tags[dst]) * live
        zw = z @ layer["msg"]["w"]  # W_m z_u once per entity, gathered per message
        msg = g[:, None] * (zw[src] + rel_proj[rel, direction])
        agg = jax.ops.segment_sum(msg, dst, num_segments=N) / jnp.maximum(deg, 1.0)[:, None]
        z = jax.nn.relu(_apply(layer["self"], z) + agg) * flat.entity_mask[:, None]
        out.append(z)
    return out


def logits(params: dict, config: GNNConfig, batch: Batch, rel_text: jax.Array) -> jax.Array:
    """``[B, M]`` logit of every candidate fact (padding: ``-inf``); ``rel_text``:
    ``[n_relations, D]`` relation text embeddings.

    References:
        - Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
          Knowledge-Graph-Based Retrieval-Augmented Generation", 2025: the scoring head.
        - An unpublished project write-up on the structurally gated GNN retriever (untitled;
          no code released), n.d.: the gated GNN.
    """
    flat, _ = _flatten(batch)
    D = flat.x.shape[-1]
    Wh, Wt = params["head_h"]["w"], params["head_t"]["w"]
    # the head's first layer is linear in [x_h | DDE_h | z_h | ...]: applied once per entity,
    # its text blocks (and the input layer's) in one matmul
    blocks = [Wh[:D], Wt[:D]] + ([params["in"]["w"][:D]] if config.n_layers else [])
    xh, xt, *x_in = _text_part(params, flat, blocks)
    rest = [flat.dde]
    if config.n_layers:
        rest.append(_states(params, config, flat, rel_text, x_in[0])[-1])
    rest = jnp.concatenate(rest, -1)
    ph = xh + rest @ Wh[D:]
    pt = xt + rest @ Wt[D:]
    pr = rel_text @ params["head_r"]["w"]
    B, M = batch.fact_mask.shape
    pq = _apply(params["head_q"], flat.q)[:, None, :]  # one per question, broadcast
    hidden = (ph[flat.head] + pr[flat.relation] + pt[flat.tail]).reshape(B, M, -1)
    hidden = jax.nn.relu(hidden + pq)
    out = _apply(params["out"], hidden)[..., 0]
    return jnp.where(batch.fact_mask, out, -jnp.inf)


def entity_states(params: dict, config: GNNConfig, batch: Batch, rel_text: jax.Array) -> jax.Array:
    """``[L + 1, B, N, H]`` entity states after each layer (for oversmoothing diagnostics)."""
    if not config.n_layers:
        raise ValueError("gate='none' has no entity states (no GNN)")
    flat, _ = _flatten(batch)
    z = jnp.stack(_states(params, config, flat, rel_text))
    return z.reshape(z.shape[0], *batch.entity_mask.shape, -1)


def gate_values(
    params: dict, config: GNNConfig, batch: Batch, rel_text: jax.Array, layer: int = 0
) -> jax.Array:
    """``[B, 2M]`` gate of every directed message at ``layer`` (forward copies first)."""
    if not config.n_layers:
        raise ValueError("gate='none' has no gates (no GNN)")
    flat, _ = _flatten(batch)
    z = _states(params, config, flat, rel_text)[layer]
    src, dst, _, _, live = _messages(flat)
    g = _gate(config, params["layers"][layer], z[src], z[dst], flat.tags[src], flat.tags[dst])
    B, M = batch.fact_mask.shape
    return (g * live).reshape(2, B, M).transpose(1, 0, 2).reshape(B, 2 * M)


def dirichlet_energy(z: jax.Array, head: jax.Array, tail: jax.Array, mask: jax.Array) -> jax.Array:
    r"""Normalized Dirichlet energy of one question's states (Eq. (23)'s pairwise form over the
    facts): :math:`\sum_{(u,v)} \|z_u - z_v\|^2 / \sum_v \|z_v\|^2`; 0 means every fact joins
    two equal states (oversmoothed).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (23).
    """
    diff = jnp.sum((z[head] - z[tail]) ** 2, -1) * mask
    return jnp.sum(diff) / jnp.maximum(jnp.sum(z**2), 1e-12)
