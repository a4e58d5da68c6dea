r"""Learning the geometric realization (Sec. 5.1, 9): entity embeddings and relation maps.

A :class:`KGEModel` is an entity map :math:`\eta` (``[n, d]``) with relation maps :math:`T_r`
of one family, the relation maps of :mod:`grounding.geometry`:

- ``"transe"``: translation :math:`T_r x = x + t_r` (Bordes et al., 2013), entities kept on
  the unit sphere;
- ``"rotate"``: rotation of coordinate pairs, i.e. complex multiplication by
  :math:`e^{i\theta_r}` (Sun et al., 2019), with RotatE's distance (sum of complex moduli);
- ``"linear"``: :math:`T_r x = W_r x`.

The energy of a triple is its typed residual, Eq. (8) with :math:`w_e = 1`:
:math:`E(u, r, v) = d_{\mathcal M}(T_r \eta_u, \eta_v)`. Fitting minimizes the typed residual
regularizer over the observed edges, Eq. (24)'s
:math:`\sum_{(u,r,v)\in\mathcal E_R} \|\eta_v - T_r\eta_u\|`, *contrasted* with corrupted
triples (negative sampling): Eq. (24) alone is minimized by the collapse
:math:`\eta \equiv` const, :math:`T_r = I`, which is why every embedding method adds
negatives. Two losses, with margin :math:`\gamma` and :math:`K` negatives per positive:

- ``"margin"``: :math:`[\gamma + E(\text{pos}) - E(\text{neg})]_+` (TransE);
- ``"softplus"``: :math:`\log(1 + e^{E(\text{pos}) - \gamma}) + \sum_k p_k \log(1 + e^{\gamma -
  E(\text{neg}_k)})`, with :math:`p` uniform or RotatE's self-adversarial
  :math:`p = \mathrm{softmax}(-\alpha E(\text{neg}))` (no gradient through :math:`p`).

Training is deterministic given ``seed`` (the batch order comes from a seeded numpy
generator, negatives from ``jax.random``), shows a progress bar, evaluates filtered MRR on the
validation split every ``eval_every`` epochs, stops early after ``patience`` evaluations
without improvement, keeps the best model, and writes it atomically as a checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from grounding._checks import check_int
from grounding.datasets.kg import KGSplits
from grounding.geometry import Linear, RelationMap, Rotation, Translation, get_metric
from grounding.learn.checkpoint import check_kge_fields, read_archive, write_archive
from grounding.learn.early_stopping import EarlyStopping, check_finite
from grounding.learn.linkpred import filtered_ranks, mrr_interval, rank_metrics
from grounding.learn.reciprocal import RECIPROCAL_KINDS, ReciprocalModel

__all__ = [
    "KGEModel",
    "TrainConfig",
    "init_model",
    "train",
    "TrainResult",
    "evaluate_link_prediction",
    "fit_with_early_stopping",
    "save_checkpoint",
    "load_checkpoint",
]

KINDS = ("transe", "rotate", "linear")
_MAP_CLASS = {"transe": Translation, "rotate": Rotation, "linear": Linear}


# ----------------------------------------------------------------------------- the model
@partial(
    jax.tree_util.register_dataclass, data_fields=["entity", "relation"], meta_fields=["kind", "p"]
)
@dataclasses.dataclass(frozen=True)
class KGEModel:
    """Entity embeddings ``entity [n, d]`` and relation parameters of one map family (a pytree).

    ``relation``: ``[R, d]`` translations (transe), ``[R, d // 2]`` angles (rotate) or
    ``[R, d, d]`` matrices (linear). ``p``: the norm of :math:`d_{\\mathcal M}` (1 or 2;
    ignored by rotate, which uses the sum of complex moduli).

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (8), Sec. 9.4.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013 (transe).
        - Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in
          Complex Space", 2019 (rotate).
    """

    kind: str
    entity: jax.Array
    relation: jax.Array
    p: int = 2

    @property
    def relation_map(self) -> RelationMap:
        """The learned maps :math:`T_r` as a :mod:`grounding.geometry` map (usable wherever the
        core takes relation maps: Eq. (8) residuals, Eq. (24), grounding realizations)."""
        return _MAP_CLASS[self.kind](self.relation)

    def geometry_map(self) -> RelationMap:
        """Same as :attr:`relation_map` (kept for compatibility: there is one map family)."""
        return self.relation_map

    @property
    def metric_name(self) -> str:
        """:math:`d_{\\mathcal M}` by name, for :func:`grounding.geometry.get_metric`."""
        if self.kind == "rotate":
            return "complex_l1"
        return "manhattan" if self.p == 1 else "euclidean"

    def metric(self, x: jax.Array, y: jax.Array) -> jax.Array:
        """:math:`d_{\\mathcal M}` over the last axis (a metric in every case): the ``p``-norm,
        or for rotate the sum over complex coordinates of :math:`|z|`."""
        return get_metric(self.metric_name)(x, y)

    def energy(self, triples: jax.Array) -> jax.Array:
        """Eq. (8) with :math:`w = 1`: ``[..., 3]`` id triples -> ``[...]`` energies."""
        h, r, t = triples[..., 0], triples[..., 1], triples[..., 2]
        return self.metric(self.relation_map.apply(r, self.entity[h]), self.entity[t])

    def candidate_energies(self, side: str, anchor: jax.Array, r: jax.Array) -> jax.Array:
        """``[B, n]`` energies of every entity as the tail (``side="tail"``, anchor = head)
        or as the head (``side="head"``, anchor = tail) of relation ``r``."""
        return _candidates(self, side, anchor, r)


@partial(jax.jit, static_argnums=1)
def _candidates(model: KGEModel, side: str, anchor, r):
    E = model.entity
    if side == "tail":  # d(T_r eta_h, eta_e) for every e
        x = model.relation_map.apply(r, E[anchor])
        return model.metric(x[:, None, :], E[None, :, :])
    TE = model.relation_map.apply(r[:, None], jnp.broadcast_to(E, (r.shape[0], *E.shape)))
    return model.metric(TE, E[anchor][:, None, :])  # d(T_r eta_e, eta_t) for every e


def init_model(
    kind: str, n_entities: int, n_relations: int, dim: int, seed: int = 0, p: int = 2
) -> KGEModel:
    """Random initial model: Xavier-uniform entities (unit-normalized for transe), translations
    likewise, angles uniform in :math:`[-\\pi, \\pi)`, linear maps :math:`I + ` small noise."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "rotate" and dim % 2:
        raise ValueError(f"rotate needs an even dim, got {dim}")
    for name, v in (("n_entities", n_entities), ("n_relations", n_relations), ("dim", dim)):
        check_int(v, name)
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p!r}")
    k_e, k_r = jax.random.split(jax.random.PRNGKey(seed))
    bound = float(np.sqrt(6.0 / (n_entities + dim)))
    entity = jax.random.uniform(k_e, (n_entities, dim), minval=-bound, maxval=bound)
    if kind == "transe":
        entity = _unit_rows(entity)
        relation = jax.random.uniform(k_r, (n_relations, dim), minval=-bound, maxval=bound)
    elif kind == "rotate":
        relation = jax.random.uniform(k_r, (n_relations, dim // 2), minval=-np.pi, maxval=np.pi)
    else:
        noise = 0.01 * jax.random.normal(k_r, (n_relations, dim, dim))
        relation = jnp.eye(dim) + noise
    return KGEModel(kind, entity, relation, p)


def _unit_rows(x: jax.Array) -> jax.Array:
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


# ----------------------------------------------------------------------------- training
@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters (hashable: part of the compiled epoch's static key).

    ``epochs`` is the maximum; ``eval_every`` and ``patience`` (in evaluations) govern early
    stopping on validation MRR. ``adversarial_temperature = 0`` means uniform negatives.
    """

    dim: int = 100
    epochs: int = 300
    batch_size: int = 256
    lr: float = 1e-2
    n_negatives: int = 16
    loss: str = "margin"
    margin: float = 1.0
    adversarial_temperature: float = 0.0
    p: int = 2
    eval_every: int = 10
    patience: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("dim", "epochs", "batch_size", "n_negatives", "eval_every", "patience"):
            check_int(getattr(self, name), name)
        if self.loss not in ("margin", "softplus"):
            raise ValueError(f"loss must be 'margin' or 'softplus', got {self.loss!r}")
        for name, low in (("lr", 0.0), ("margin", None), ("adversarial_temperature", None)):
            v = getattr(self, name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if not (ok and (v > 0 if low is not None else v >= 0)):
                bound = "> 0" if low is not None else ">= 0"
                raise ValueError(f"{name} must be a finite number {bound}, got {v!r}")


#: Defaults per model family, picked by a small manual sweep on UMLS/Nations validation MRR
#: (transe: p, margin, lr; rotate: lr, margin); measured test numbers in docs/results.md.
DEFAULTS = {
    "transe": TrainConfig(dim=128, lr=1e-2, loss="margin", margin=1.0, p=2),
    "rotate": TrainConfig(
        dim=256, lr=3e-3, loss="softplus", margin=6.0, adversarial_temperature=1.0
    ),
    "linear": TrainConfig(
        dim=64, lr=1e-2, loss="softplus", margin=3.0, adversarial_temperature=1.0
    ),
}


def _loss(model: KGEModel, pos, neg, cfg: TrainConfig):
    e_pos, e_neg = model.energy(pos), model.energy(neg)  # [B], [B, K]
    if cfg.loss == "margin":
        return jnp.mean(jax.nn.relu(cfg.margin + e_pos[:, None] - e_neg))
    if cfg.adversarial_temperature > 0:
        w = jax.lax.stop_gradient(jax.nn.softmax(-cfg.adversarial_temperature * e_neg, axis=-1))
    else:
        w = jnp.full_like(e_neg, 1.0 / e_neg.shape[-1])
    pos_term = jax.nn.softplus(e_pos - cfg.margin)
    neg_term = jnp.sum(w * jax.nn.softplus(cfg.margin - e_neg), axis=-1)
    return jnp.mean(pos_term + neg_term)


def _corrupt(key, pos, n_entities: int, k: int):
    """``[B, K, 3]`` negatives: head or tail (probability 1/2 each) replaced uniformly."""
    k_side, k_ent = jax.random.split(key)
    side = jax.random.bernoulli(k_side, 0.5, (pos.shape[0], k))
    ent = jax.random.randint(k_ent, (pos.shape[0], k), 0, n_entities)
    h = jnp.where(side, ent, pos[:, None, 0])
    t = jnp.where(side, pos[:, None, 2], ent)
    return jnp.stack([h, jnp.broadcast_to(pos[:, None, 1], h.shape), t], axis=-1)


@partial(jax.jit, static_argnums=(4, 5))
def _epoch(model, opt_state, batches, key, cfg: TrainConfig, n_entities: int):
    opt = optax.adam(cfg.lr)

    def step(carry, xs):
        model, opt_state = carry
        batch, k = xs
        neg = _corrupt(k, batch, n_entities, cfg.n_negatives)
        loss, grads = jax.value_and_grad(_loss)(model, batch, neg, cfg)
        updates, opt_state = opt.update(grads, opt_state, model)
        model = optax.apply_updates(model, updates)
        if model.kind == "transe":  # Bordes et al.: entities on the unit sphere
            model = dataclasses.replace(model, entity=_unit_rows(model.entity))
        return (model, opt_state), loss

    keys = jax.random.split(key, batches.shape[0])
    (model, opt_state), losses = jax.lax.scan(step, (model, opt_state), (batches, keys))
    return model, opt_state, jnp.mean(losses)


_KGE_FORMAT = "grounding KGE, version 2"  # version 1: arrays entity/relation/header


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """The best model (by validation MRR), its epoch, and the history of the run."""

    model: KGEModel
    best_epoch: int
    best_valid_mrr: float
    history: list[dict]
    epochs_run: int
    seconds: float


def evaluate_link_prediction(
    model: KGEModel,
    kg: KGSplits,
    split: str = "test",
    batch_size: int = 256,
    interval: bool = False,
) -> dict[str, Any]:
    """Filtered MRR / Hits@1,3,10 of ``split``, both directions, realistic ties. The filter
    holds the splits up to ``split``: train and valid for ``"valid"`` (so the test triples
    reach no choice made on validation, model selection included), every split for
    ``"test"`` (LibKGE's ``filter_splits``). With ``interval``, ``"mrr_ci"`` adds the 95 %
    bootstrap interval of the MRR over the split's triples (:func:`mrr_interval`).

    References:
        Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
            Multi-relational Data", 2013 (filtered protocol).
    """

    def scorer(side, anchor, r):
        return np.asarray(model.candidate_energies(side, jnp.asarray(anchor), jnp.asarray(r)))

    known = kg.all_triples() if split == "test" else np.concatenate([kg.train, kg.valid])
    ranks = filtered_ranks(
        scorer, kg.split(split), known, kg.n_entities, kg.n_relations, batch_size
    )
    metrics: dict[str, Any] = dict(rank_metrics(ranks))
    if interval:
        metrics["mrr_ci"] = list(mrr_interval(ranks))
    return metrics


def train(
    kg: KGSplits,
    kind: str = "transe",
    config: TrainConfig | None = None,
    *,
    checkpoint: str | Path | None = None,
    progress: bool = True,
) -> TrainResult:
    """Fit a :class:`KGEModel` on ``kg.train`` with early stopping on ``kg.valid`` MRR.

    Args:
        kg: the splits; only ``train`` is fitted, ``valid`` drives early stopping (filtered
            against train + valid + test, the standard protocol).
        kind: ``"transe"``, ``"rotate"`` or ``"linear"``.
        config: hyperparameters; default :data:`DEFAULTS` ``[kind]``.
        checkpoint: optional ``.npz`` path, rewritten atomically at each new best.
        progress: show a tqdm bar.

    Returns:
        A :class:`TrainResult` holding the best model.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eqs. (8) and (24).
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013 (margin loss).
        - Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in
          Complex Space", 2019 (self-adversarial negatives).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    cfg = DEFAULTS[kind] if config is None else config
    train_ids = kg.train
    if len(train_ids) == 0:
        raise ValueError("kg.train is empty")
    model = init_model(kind, kg.n_entities, kg.n_relations, cfg.dim, cfg.seed, cfg.p)
    opt_state = optax.adam(cfg.lr).init(model)

    def epoch(model, opt_state, batches, key):
        return _epoch(model, opt_state, batches, key, cfg, kg.n_entities)

    return fit_with_early_stopping(
        kg, model, opt_state, train_ids, epoch, cfg, f"{kind} on {kg.name}", checkpoint, progress
    )


def fit_with_early_stopping(
    kg: KGSplits,
    model: Any,
    opt_state: Any,
    data: np.ndarray,
    epoch_fn: Callable[..., tuple[Any, Any, Any]],
    cfg: Any,
    desc: str,
    checkpoint: str | Path | None = None,
    progress: bool = True,
    key: jax.Array | None = None,
) -> TrainResult:
    """The training loop shared by every embedding family: each epoch shuffles ``data``
    (seeded by ``cfg.seed``) into batches of ``cfg.batch_size`` rows (the last batch wrapped),
    runs ``epoch_fn(model, opt_state, batches, key) -> (model, opt_state, mean loss)``, and
    every ``cfg.eval_every`` epochs evaluates validation MRR, keeping (and checkpointing) the
    best model and stopping after ``cfg.patience`` evaluations without improvement. ``key``
    seeds the epochs' randomness (default ``PRNGKey(cfg.seed + 1)``).

    Raises:
        FloatingPointError: naming the epoch, when the loss or the parameters become
            non-finite.
    """
    rng = np.random.default_rng(cfg.seed)
    key = jax.random.PRNGKey(cfg.seed + 1) if key is None else key
    bs = min(cfg.batch_size, len(data))
    n_batches = -(-len(data) // bs)
    stop, history = EarlyStopping(cfg.patience), []
    start = time.perf_counter()
    bar = tqdm(range(1, cfg.epochs + 1), desc=desc, disable=not progress, leave=False)
    epoch = 0
    for epoch in bar:
        perm = rng.permutation(len(data))
        perm = np.concatenate([perm, perm[: n_batches * bs - len(perm)]])  # wrap the last batch
        batches = jnp.asarray(data[perm].reshape(n_batches, bs, data.shape[1]))
        key, sub = jax.random.split(key)
        model, opt_state, loss = epoch_fn(model, opt_state, batches, sub)
        loss = float(loss)
        check_finite(loss, model, epoch, desc)
        if epoch % cfg.eval_every == 0 or epoch == cfg.epochs:
            mrr = evaluate_link_prediction(model, kg, "valid")["mrr"]
            history.append({"epoch": epoch, "loss": loss, "valid_mrr": mrr})
            bar.set_postfix(loss=f"{loss:.4f}", valid_mrr=f"{mrr:.4f}")
            improved = mrr > stop.best_score
            if stop.update(epoch, mrr, model):
                break
            if improved and checkpoint is not None:
                meta = {"epoch": epoch, "valid_mrr": mrr, "config": dataclasses.asdict(cfg)}
                save_checkpoint(checkpoint, model, meta)
    best = model if stop.best_state is None else stop.best_state
    return TrainResult(
        best, max(stop.best_epoch, 0), stop.best_score if history else -1.0, history, epoch,
        time.perf_counter() - start,
    )  # fmt: skip


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(path: str | Path, model: KGEModel, meta: dict | None = None) -> Path:
    """Write ``model`` (a :class:`KGEModel` or a reciprocal model of
    :mod:`grounding.learn.onevsall`; and JSON-able ``meta``) to an ``.npz`` file atomically, in
    the package's one checkpoint format (:mod:`grounding.learn.checkpoint`)."""
    reciprocal = isinstance(model, ReciprocalModel)
    header = {
        "format": _KGE_FORMAT,
        "kind": model.kind,
        "p": None if reciprocal else model.p,
        "reciprocal": reciprocal,
        "meta": meta or {},
    }
    return write_archive(path, header, [np.asarray(model.entity), np.asarray(model.relation)])


def load_checkpoint(path: str | Path) -> tuple[Any, dict]:
    """Read a checkpoint written by :func:`save_checkpoint`: ``(model, meta)``.

    Raises:
        ValueError: naming ``path`` (and the field), for a file that is not a readable KGE
            checkpoint (:func:`~grounding.learn.checkpoint.read_archive`: sizes checked
            before reading), an unknown model ``kind``, a ``p`` other than 1 or 2, parameters
            that are not finite floats, or relation parameters whose shape does not fit the
            kind and the entity width.
    """
    what = "grounding KGE checkpoint"
    header, arrays = read_archive(path, what)
    if not isinstance(header, dict) or header.get("format") != _KGE_FORMAT or len(arrays) != 2:
        raise ValueError(f"{path}: not a {what} (no {_KGE_FORMAT!r} header)")
    kind, reciprocal, p, meta = check_kge_fields(path, header, arrays, KINDS, RECIPROCAL_KINDS)
    entity, relation = (jnp.asarray(x) for x in arrays)
    if reciprocal:
        return ReciprocalModel(kind, entity, relation), meta
    return KGEModel(kind, entity, relation, p), meta
