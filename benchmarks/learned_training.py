"""Training throughput of the learned triple retrievers (question-epochs per second), the
former training path against the prepared, bucketed one, side by side in one run.

Run: ``python benchmarks/learned_training.py [--dataset codex-m] [--per-hop 40]
[--valid-per-hop 10] [--epochs 3] [--seeds 2] [--max-facts 1500] [--gate structural]``.
Last line: ``question_epochs_per_second_before=<b> after=<a> ratio=<r>``.

Both sides train ``--seeds`` retrievers of one architecture (as the experiment trains
seeds), on the same questions (``--per-hop`` training and ``--valid-per-hop`` validation
questions of each hop count), for ``--epochs`` epochs with validation after each
(``patience`` above the epoch count, so neither stops early):

- before: the training loop as it was (reconstructed here, line for line, from the public
  pieces): every ``fit`` builds every question's candidate subgraph and features, pads each
  batch of 4 random questions to powers of two of its own largest question (its own compiled
  step per shape, compiled again for every retriever), and validates by padding batches of 8
  on the host and ranking there;
- after: :meth:`TripleRetriever.prepare` once for all seeds (timed, and counted), then
  :meth:`TripleRetriever.fit` on the prepared questions: batches of one bucket shape gathered
  on the device, one compiled step per shape shared by every seed.

Question-epochs = trained questions (those with a path in their candidates) x epochs x seeds;
reported per second of everything each side did (building, compiling, training, validating),
and in the steady state (epochs after a seed's first, no building or compiling). The two
sides' parameters differ (their batches differ); their first epochs' losses are printed.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from grounding.datasets import kgqa_benchmark
from grounding.learn.early_stopping import EarlyStopping
from grounding.retrieval import GNNConfig, RetrieverTrainConfig, TripleRetriever
from grounding.retrieval.learned.gnn import logits, make_batch
from grounding.retrieval.metrics import recall_at_k


def _pow2(n: int, floor: int = 1) -> int:
    return max(floor, 1 << max(n - 1, 0).bit_length())


def rank_before(model: TripleRetriever, score, subs, qs, batch_size: int = 8) -> list:
    """The former ``TripleRetriever.rank``: host-padded batches of 8, host ranking."""
    out = []
    rows = min(batch_size, _pow2(len(subs)))
    for lo in range(0, len(subs), batch_size):
        part = subs[lo : lo + batch_size]
        batch = make_batch(part, qs[lo : lo + batch_size], model.entity_text, n_rows=rows)
        s = np.asarray(score(model.params, batch))
        out.extend(sub.facts[np.lexsort((sub.facts, -s[i, : sub.n_facts]))]
                   for i, sub in enumerate(part))  # fmt: skip
    return out


def fit_before(model: TripleRetriever, train, valid, config: RetrieverTrainConfig) -> dict:
    """The former ``TripleRetriever.fit`` (per-call subgraphs, per-batch power-of-two shapes,
    a step compiled per call), timed per epoch."""
    t0 = time.perf_counter()
    tq, vq = model.embed(train), model.embed(valid)
    tsubs = [model.subgraph(x, q) for x, q in zip(train, tq)]
    keep = [i for i, s in enumerate(tsubs) if s.has_path]
    vsubs = [model.subgraph(x, q) for x, q in zip(valid, vq)]
    vgold = [s.facts[s.labels > 0] for s in vsubs]
    opt = optax.adam(config.lr)
    state = opt.init(model.params)
    cfg, rel = model.config, model.relation_text
    score = jax.jit(lambda p, b: logits(p, cfg, b, rel))

    def loss_fn(p, b):
        z = logits(p, cfg, b, rel)
        z = jnp.where(b.fact_mask, z, 0.0)
        bce = optax.sigmoid_binary_cross_entropy(z, b.labels) * b.fact_mask
        per_q = jnp.sum(bce, 1) / jnp.maximum(jnp.sum(b.fact_mask, 1), 1)
        real = jnp.any(b.fact_mask, 1)
        return jnp.sum(per_q * real) / jnp.maximum(jnp.sum(real), 1)

    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    rng = np.random.default_rng(config.seed)
    stop = EarlyStopping(config.patience)
    epochs, losses_out = [], []
    for epoch in range(config.epochs):
        te = time.perf_counter()
        order = rng.permutation(keep)
        losses = []
        for lo in range(0, len(order), config.batch_size):
            idx = order[lo : lo + config.batch_size]
            b = make_batch([tsubs[i] for i in idx], tq[idx], model.entity_text,
                           n_rows=config.batch_size)  # fmt: skip
            model.params, state, loss = step(model.params, state, b)
            losses.append(float(loss))
        losses_out.append(float(np.mean(losses)))
        ranked = rank_before(model, score, vsubs, vq)
        rec = [recall_at_k(r, g, config.eval_k) for r, g in zip(ranked, vgold) if len(g)]
        stop.update(epoch, float(np.mean(rec)) if rec else 0.0, model.params)
        epochs.append(time.perf_counter() - te)
    return dict(seconds=time.perf_counter() - t0, epochs=epochs, n_train=len(keep),
                loss=losses_out)  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="codex-m", help="codex-m or umls (default codex-m)")
    ap.add_argument("--per-hop", type=int, default=40, help="training questions per hop (40)")
    ap.add_argument("--valid-per-hop", type=int, default=10, help="validation per hop (10)")
    ap.add_argument("--epochs", type=int, default=3, help="epochs per seed (default 3)")
    ap.add_argument("--seeds", type=int, default=2, help="retrievers trained (default 2)")
    ap.add_argument("--max-facts", type=int, default=1500, help="candidate cap (default 1500)")
    ap.add_argument("--gate", default="structural", help="structural, mean, semantic or none")
    args = ap.parse_args(argv)

    bench = kgqa_benchmark(args.dataset, questions_per_hop=500 if args.dataset == "codex-m"
                           else 300, seed=0)  # fmt: skip
    train = [q.query() for h in (1, 2, 3) for q in bench.split("train", h)[: args.per_hop]]
    valid = [q.query() for h in (1, 2, 3) for q in bench.split("valid", h)[: args.valid_per_hop]]
    labels = [bench.relation_labels[r] for r in bench.graph.relations]
    layers = 0 if args.gate == "none" else 2
    base = TripleRetriever(bench.graph, GNNConfig(gate=args.gate, layers=layers),
                           relation_texts=labels, n_anchors=20, max_facts=args.max_facts)  # fmt: skip

    def fresh(seed: int) -> TripleRetriever:
        return TripleRetriever(bench.graph, base.config, encoder=base.encoder,
                               relation_texts=labels, n_anchors=20, max_facts=args.max_facts,
                               seed=seed, facts=base.facts)  # fmt: skip

    cfg = [RetrieverTrainConfig(epochs=args.epochs, patience=args.epochs + 1, seed=s)
           for s in range(args.seeds)]  # fmt: skip
    # the two sides alternate seed by seed (a busy machine slows both alike)
    before, after = [], []
    t = time.perf_counter()
    tp, vp = base.prepare(train), base.prepare(valid)
    prepare_s = time.perf_counter() - t
    for s in range(args.seeds):
        before.append(fit_before(fresh(s), train, valid, cfg[s]))
        t = time.perf_counter()
        log = fresh(s).fit(tp, vp, cfg[s])
        after.append(dict(seconds=time.perf_counter() - t, epochs=log.epoch_seconds,
                          n_train=log.n_train, loss=log.loss))  # fmt: skip
    n = before[0]["n_train"]
    assert all(r["n_train"] == n for r in before + after), "the two sides train other questions"
    qe = n * args.epochs * args.seeds
    tb = sum(r["seconds"] for r in before)
    ta = prepare_s + sum(r["seconds"] for r in after)
    steady_b = np.mean([e for r in before for e in r["epochs"][1:]]) / n
    steady_a = np.mean([e for r in after for e in r["epochs"][1:]]) / n
    print(f"{args.dataset}: {n} training questions with a path ({len(train)} asked), "
          f"{len(valid)} validation, gate {args.gate}, cap {args.max_facts} facts, "
          f"{args.epochs} epochs x {args.seeds} seeds, {jax.devices()[0].platform}")  # fmt: skip
    print(f"before: {tb:7.1f} s in all = {qe / tb:6.2f} question-epochs/s; steady state "
          f"{1e3 * steady_b:6.1f} ms per question-epoch")  # fmt: skip
    print(f"after:  {ta:7.1f} s in all (prepare {prepare_s:.1f} s once) = {qe / ta:6.2f} "
          f"question-epochs/s; steady state {1e3 * steady_a:6.1f} ms per question-epoch")  # fmt: skip
    print("first-epoch loss, seed 0: before {:.4f} after {:.4f}".format(
        before[0]["loss"][0], after[0]["loss"][0]))  # fmt: skip
    print(f"steady_state_ratio={steady_b / steady_a:.2f}")
    print(f"question_epochs_per_second_before={qe / tb:.3f} after={qe / ta:.3f} "
          f"ratio={tb / ta:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
