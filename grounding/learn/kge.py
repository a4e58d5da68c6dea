r"""Learning the geometric realization (Sec. 5.1, 9): training a
:class:`~grounding.learn.KGEModel` (:mod:`grounding.learn.embedding`: an entity map
:math:`\eta` with relation maps :math:`T_r` of one family: TransE, RotatE or linear maps),
its filtered evaluation and its checkpoints.

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
from grounding.learn.checkpoint import check_kge_fields, read_archive, write_archive
from grounding.learn.early_stopping import EarlyStopping, check_finite
from grounding.learn.embedding import KINDS, KGEModel, _unit_rows, init_model
from grounding.learn.linkpred import filtered_ranks, mrr_interval, rank_metrics
from grounding.learn.reciprocal import RECIPROCAL_KINDS, ReciprocalModel

__all__ = [
    "TrainConfig",
    "train",
    "TrainResult",
    "evaluate_link_prediction",
    "fit_with_early_stopping",
    "save_checkpoint",
    "load_checkpoint",
]


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
#: (transe: p, margin, lr; rotate: lr, margin); measured test numbers in
#: docs/results/link_prediction.md.
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
        kg: the splits; only ``train`` is fitted, ``valid`` drives early stopping (its ranks
            filtered against train + valid only, so no test triple reaches a choice made on
            validation; :func:`evaluate_link_prediction`).
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
