r"""1-vs-all training with reciprocal relations: TransE and ComplEx at the published CoDEx setting.

The CoDEx link-prediction table (Safavi & Koutra, EMNLP 2020) was produced with LibKGE's
*reciprocal relations* model (Lacroix, Usunier & Obozinski, ICML 2018; Ruffinelli, Broscheit
& Gemulla, ICLR 2020): every relation :math:`r` gets a second embedding :math:`r^{-1}`, the
training triple :math:`(h, r, t)` yields the two queries :math:`(h, r, ?)` (target
:math:`t`) and :math:`(t, r^{-1}, ?)` (target :math:`h`), and a head query is answered as the
tail query of the reciprocal relation. Each query's scores over the candidate entities go
through a softmax cross-entropy (*1-vs-all*), either over every entity or over the targets and
``n_shared_negatives`` entities sampled once per batch (LibKGE's "batch" negatives).

Scores (higher is better; the energy of Eq. (8) is their negative):

- ``"transe"``: :math:`s = -\lVert e_h + w_r - e_t\rVert_2` (no sphere constraint);
- ``"complex"``: :math:`s = \mathrm{Re}\langle e_h \circ w_r, \bar e_t\rangle`, entities and
  relations in :math:`\mathbb{C}^{d/2}` stored as ``[real | imaginary]`` halves (Trouillon et
  al., ICML 2016): a bilinear compatibility used as an energy, Eq. (8)'s bilinear reading
  (:class:`grounding.geometry.BilinearEnergy` with block-diagonal :math:`W_r`).

Regularization: the weighted N3 penalty of Lacroix et al. on the embeddings a batch touches.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from grounding._checks import check_int
from grounding.datasets.kg import KGSplits
from grounding.learn.kge import TrainResult, fit_with_early_stopping
from grounding.learn.reciprocal import RECIPROCAL_KINDS, ReciprocalModel

__all__ = ["OneVsAllConfig", "train_one_vs_all", "one_vs_all_loss"]


@dataclasses.dataclass(frozen=True)
class OneVsAllConfig:
    """Hyperparameters of 1-vs-all training (hashable: the compiled epoch's static key).

    ``n_shared_negatives = 0`` scores every entity; otherwise the batch's targets and that
    many uniformly sampled entities. ``n3`` weighs the N3 penalty; ``label_smoothing`` mixes
    the one-hot target with the uniform distribution over the scored entities.
    """

    dim: int = 256
    epochs: int = 100
    batch_size: int = 1024
    lr: float = 0.1
    n_shared_negatives: int = 0
    n3: float = 0.0
    label_smoothing: float = 0.0
    init_scale: float = 1e-3
    optimizer: str = "adagrad"
    dropout: float = 0.0
    eval_every: int = 5
    patience: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("dim", "epochs", "batch_size", "eval_every", "patience"):
            check_int(getattr(self, name), name)
        if isinstance(self.n_shared_negatives, bool) or self.n_shared_negatives < 0:
            raise ValueError(f"n_shared_negatives must be >= 0, got {self.n_shared_negatives!r}")
        for name in ("lr", "init_scale"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be finite and > 0, got {v!r}")
        if not (np.isfinite(self.n3) and self.n3 >= 0):
            raise ValueError(f"n3 must be finite and >= 0, got {self.n3!r}")
        if self.optimizer not in ("adagrad", "adam"):
            raise ValueError(f"optimizer must be 'adagrad' or 'adam', got {self.optimizer!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout!r}")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing must lie in [0, 1), got {self.label_smoothing!r}")


def _optimizer(cfg: OneVsAllConfig) -> optax.GradientTransformation:
    """Adam, or Adagrad as in PyTorch (accumulator starting at 0: small embeddings move)."""
    if cfg.optimizer == "adam":
        return optax.adam(cfg.lr)
    return optax.adagrad(cfg.lr, initial_accumulator_value=0.0, eps=1e-10)


def _queries(train: np.ndarray, n_relations: int) -> np.ndarray:
    """``[2m, 3]`` (anchor, relation row, target): every triple forwards and reciprocally."""
    h, r, t = train[:, 0], train[:, 1], train[:, 2]
    return np.concatenate([np.stack([h, r, t], 1), np.stack([t, r + n_relations, h], 1)])


def one_vs_all_loss(
    model: ReciprocalModel,
    batch: jax.Array,
    candidates: jax.Array | None,
    cfg: OneVsAllConfig,
    key: jax.Array | None = None,
):
    """Mean cross-entropy of the targets among ``candidates`` (``None``: every entity), plus
    the N3 penalty of the touched embeddings. With ``key`` and ``cfg.dropout > 0`` the
    query's anchor and relation embeddings are dropped out (inverted dropout).

    References:
        - Lacroix, Usunier & Obozinski, "Canonical Tensor Decomposition for Knowledge Base
          Completion", 2018 (N3 penalty).
        - Ruffinelli, Broscheit & Gemulla, "You CAN Teach an Old Dog New Tricks! On Training
          Knowledge Graph Embeddings", 2020.
    """
    anchor, rows, target = batch[:, 0], batch[:, 1], batch[:, 2]
    penalized = model
    if key is not None and cfg.dropout:
        model = _dropout(model, anchor, rows, key, cfg.dropout)
    if candidates is None:
        logits = model.scores(anchor, rows)
        gold = target
    else:  # the targets' own columns first, then the shared negatives
        pool = jnp.concatenate([target, candidates])
        logits = model.scores(anchor, rows, pool)
        gold = jnp.arange(target.shape[0])
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, gold[:, None], axis=-1)[:, 0]
    if cfg.label_smoothing:
        nll = (1 - cfg.label_smoothing) * nll - cfg.label_smoothing * jnp.mean(logp, axis=-1)
    loss = jnp.mean(nll)
    if cfg.n3:
        m = penalized
        touched = (m.entity[anchor], m.relation[rows], m.entity[target])
        loss = loss + cfg.n3 * sum(jnp.mean(jnp.sum(jnp.abs(x) ** 3, -1)) for x in touched)
    return loss


def _dropout(model: ReciprocalModel, anchor, rows, key, rate: float) -> ReciprocalModel:
    """The model with the batch's anchor and relation rows masked (scaled by 1 / (1 - rate))."""
    k_e, k_r = jax.random.split(key)
    keep_e = jax.random.bernoulli(k_e, 1 - rate, (anchor.shape[0], model.entity.shape[1]))
    keep_r = jax.random.bernoulli(k_r, 1 - rate, (rows.shape[0], model.relation.shape[1]))
    ent = model.entity.at[anchor].set(model.entity[anchor] * keep_e / (1 - rate))
    rel = model.relation.at[rows].set(model.relation[rows] * keep_r / (1 - rate))
    return dataclasses.replace(model, entity=ent, relation=rel)


@partial(jax.jit, static_argnums=(4, 5))
def _epoch(model, opt_state, batches, key, cfg: OneVsAllConfig, n_entities: int):
    opt = _optimizer(cfg)
    keys = jax.random.split(key, batches.shape[0])

    def step(carry, xs):
        model, opt_state = carry
        batch, k = xs
        k_neg, k_drop = jax.random.split(k)
        cands = None
        if cfg.n_shared_negatives:
            cands = jax.random.randint(k_neg, (cfg.n_shared_negatives,), 0, n_entities)
        loss, grads = jax.value_and_grad(one_vs_all_loss)(model, batch, cands, cfg, k_drop)
        updates, opt_state = opt.update(grads, opt_state, model)
        return (optax.apply_updates(model, updates), opt_state), loss

    (model, opt_state), losses = jax.lax.scan(step, (model, opt_state), (batches, keys))
    return model, opt_state, jnp.mean(losses)


def train_one_vs_all(
    kg: KGSplits,
    kind: str = "complex",
    config: OneVsAllConfig | None = None,
    *,
    checkpoint: str | Path | None = None,
    progress: bool = True,
) -> TrainResult:
    """Fit a :class:`ReciprocalModel` on ``kg.train`` (1-vs-all, Adagrad), early-stopping on
    validation MRR (filtered, both directions), keeping the best model.

    Raises:
        ValueError: for an unknown kind, an odd ``dim`` with complex, an empty train split.
        FloatingPointError: naming the epoch, when the loss or the parameters become
            non-finite.

    References:
        - Lacroix, Usunier & Obozinski, "Canonical Tensor Decomposition for Knowledge Base
          Completion", 2018.
        - Ruffinelli, Broscheit & Gemulla, "You CAN Teach an Old Dog New Tricks! On Training
          Knowledge Graph Embeddings", 2020.
        - Trouillon, Welbl, Riedel, Gaussier & Bouchard, "Complex Embeddings for Simple Link
          Prediction", 2016 (complex).
    """
    if kind not in RECIPROCAL_KINDS:
        raise ValueError(f"kind must be one of {RECIPROCAL_KINDS}, got {kind!r}")
    cfg = OneVsAllConfig() if config is None else config
    if kind == "complex" and cfg.dim % 2:
        raise ValueError(f"complex needs an even dim (real | imaginary halves), got {cfg.dim}")
    if len(kg.train) == 0:
        raise ValueError("kg.train is empty")
    k_e, k_r, key = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    shape_r = (2 * kg.n_relations, cfg.dim)
    model = ReciprocalModel(
        kind,
        cfg.init_scale * jax.random.normal(k_e, (kg.n_entities, cfg.dim)),
        cfg.init_scale * jax.random.normal(k_r, shape_r),
    )
    opt_state = _optimizer(cfg).init(model)

    def epoch(model, opt_state, batches, key):
        return _epoch(model, opt_state, batches, key, cfg, kg.n_entities)

    queries = _queries(kg.train, kg.n_relations)
    desc = f"{kind} 1-vs-all on {kg.name}"
    return fit_with_early_stopping(
        kg, model, opt_state, queries, epoch, cfg, desc, checkpoint, progress, key
    )
