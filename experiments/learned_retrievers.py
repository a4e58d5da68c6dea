"""Learned triple retrievers on real knowledge graphs: SubgraphRAG against the structurally gated
GNN retriever, its ablations, path-constrained retrieval, and what each does downstream.

For CoDEx-M and UMLS, the templated multi-hop questions of
:func:`grounding.datasets.kgqa_benchmark` train and test
:class:`grounding.retrieval.TripleRetriever`. Training, validation and test questions are
taken hop by hop (the same number of 1-, 2- and 3-hop questions; full runs: every training
and validation question of the benchmark, 400 + 50 per hop on CoDEx-M and 240 + 30 on UMLS,
and 50 test questions per hop on CoDEx-M, all 30 on UMLS).

**One candidate set for every variant.** Each question's candidate facts are built once
(2 hops from the topic plus 1 hop from 20 anchor facts, at most ``max_facts``;
:meth:`TripleRetriever.prepare`) and every variant is trained and tested on them, so a gap
between variants is a gap between scorers, not between candidate sets. Variants:
``subgraphrag`` (SubgraphRAG's scorer: no GNN; its inputs never read the anchors),
``gated`` (structural gate, L = 2, tags see the anchors), ``ungated`` (mean aggregation),
``semantic`` (similarity gate), ``no_anchor_tags`` (structural gate, tags blind to the
anchors) and, in full runs, depths L = 1, 3, 4 and ``subgraphrag_pair`` (SubgraphRAG with its
exact labels, one fact per entity pair). Training: SubgraphRAG's loss, Adam ``1e-3``, batch 4,
early stopping on validation triple recall@100 with patience 10 (SubgraphRAG's), at most 200
epochs, so the stopping rule ends every full-run model (quick runs: patience 2, at most 4
epochs). Full runs: three seeds for every variant; each model's training state is written
after every epoch under ``<out>/learned_retrievers_state/`` and a rerun resumes from it.

**Scores.** One target set per question: the facts on a shortest topic–answer path of the
whole evidence graph (SubgraphRAG's supervision without a candidate cut). Shortest-path
triple recall@K and answer recall@K for K in (50, 100, 200, 400), per hop; the *ceiling*:
the share of a question's target facts among its candidates (the recall@K of a perfect
scorer for K at least the candidate count), and *recall/ceiling*: mean recall@100 over mean
ceiling, per hop; mean and s.d. over seeds; paired bootstrap 95 % intervals over test
questions (seed-averaged per question) for each comparison the docs make. Path-constrained
retrieval (hard and soft, depth 2) ranks nodes; its facts are ranked by the worse rank of
their two endpoints. Also: oversmoothing (normalized Dirichlet energy of the entity states
per layer; full runs: L = 4 models of the three gates; quick runs: the trained L = 2 gated
and ungated models), transfer (trained on one graph, tested on the other), speed
(question-epochs/s, ms per epoch, epochs to the stopping rule).

**Downstream, blind.** :class:`grounding.qa.BlindQA` with each learned retriever (seed 0) as
its retriever: the system sees the question text and topic only; relation paths come from a
:class:`grounding.plans.RelationPathPredictor` fitted on the training questions; each
retriever's top 100 facts are the evidence; one ``lambda`` fitted on blind validation
outcomes with PCR's evidence. Hits@1 of soft grounding, with paired intervals. The former
loop, which grounds the question's gold chain, stays as the row "oracle (gold chain)".

Final line: ``recall100_subgraphrag=<x> recall100_gated=<y> recall100_ungated=<z>
recall100_pcr=<w> ceiling100_gated=<g> ceiling100_subgraphrag=<s> blind_hits1_gated=<b>
blind_hits1_subgraphrag=<c>`` (CoDEx-M, all hops: shortest-path triple recall@100; recall@100
over the shared candidate ceiling; blind soft-grounding Hits@1).
"""

from __future__ import annotations

import dataclasses
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from experiments._io import float64, parse_args, plt, save_figure, write_csv, write_json
from experiments._stats import paired_bootstrap
from experiments.grounded_qa import (
    KAPPA,
    SETTINGS,
    Setting,
    blind_paths,
    build,
    fit_blind_lambda,
    fit_lambda,
    score,
)
from grounding.qa import BlindQA, GroundedQA
from grounding.query import Query, blind
from grounding.retrieval import (
    GNNConfig,
    RetrieverTrainConfig,
    TripleRetriever,
    answer_recall_at_k,
)
from grounding.retrieval.learned import gold_facts
from grounding.retrieval.learned.gnn import dirichlet_energy, entity_states
from grounding.retrieval.metrics import recall_at_k

KS = (50, 100, 200, 400)
HOPS = (1, 2, 3)
ANCHORS = 20  # anchor facts of the shared candidate set
VARIANTS = {  # name: (gate, layers, anchor tags, labels)
    "subgraphrag": ("none", 0, False, "all"),
    "gated": ("structural", 2, True, "all"),
    "ungated": ("mean", 2, True, "all"),
    "semantic": ("semantic", 2, True, "all"),
    "no_anchor_tags": ("structural", 2, False, "all"),
}
FULL_ONLY = {
    "subgraphrag_pair": ("none", 0, False, "pair"),
    **{f"gated_L{L}": ("structural", L, True, "all") for L in (1, 3, 4)},
}
MAIN = ("subgraphrag", "gated", "ungated")
#: (a, b) pairs whose triple recall@100 difference gets a paired interval
COMPARISONS = (
    ("gated", "subgraphrag"),
    ("ungated", "subgraphrag"),
    ("gated", "ungated"),
    ("gated", "semantic"),
    ("gated", "no_anchor_tags"),
    ("subgraphrag_pair", "subgraphrag"),
    ("gated_L1", "gated"),
    ("gated_L3", "gated"),
    ("gated_L4", "gated"),
)


@dataclasses.dataclass(frozen=True)
class Scale:
    """A run's size: questions per hop (``None``: every question of the split), the training
    schedule, seeds, the candidate cap, and which variants run."""

    train_per_hop: int | None
    valid_per_hop: int | None
    test_per_hop: int
    epochs: int
    patience: int
    seeds: tuple[int, ...]
    max_facts: int
    full_variants: bool
    ablations: bool = True  # semantic and no_anchor_tags on CoDEx-M (else MAIN only)
    deep_oversmoothing: bool = False  # train L = 4 models of three gates for the diagnostic
    checkpoints: bool = False
    downstream: tuple[str, ...] = MAIN  # the learned retrievers grounded downstream


def scale(full: bool) -> Scale:
    if full:
        return Scale(None, None, 50, 200, 10, (0, 1, 2), 1500, True, True, True, True)
    return Scale(12, 4, 6, 3, 2, (0,), 256, False, False, downstream=("subgraphrag", "gated"))


def setting(dataset: str) -> Setting:
    """The grounded-QA experiment's quick setting, in both modes (its answerer serves the
    downstream rows and is shared with that experiment within one process; its benchmark
    holds 400 + 50 + 50 CoDEx-M and 240 + 30 + 30 UMLS questions per hop)."""
    return SETTINGS[False][dataset]


def by_hop(bench, split: str, per_hop: int | None) -> list:
    """The first ``per_hop`` questions of each hop count of a split (all: ``None``)."""
    return [q for h in HOPS for q in bench.split(split, h)[:per_hop]]


def make(bench, variant: tuple, sc: Scale, seed: int, name: str, base=None) -> TripleRetriever:
    gate, layers, anchor_tags, _ = variant
    labels = [bench.relation_labels[r] for r in bench.graph.relations]
    return TripleRetriever(bench.graph, GNNConfig(gate=gate, layers=layers), relation_texts=labels,
                           n_anchors=ANCHORS, max_facts=sc.max_facts, anchor_tags=anchor_tags,
                           name=name, seed=seed, facts=base.facts if base else None,
                           encoder=base.encoder if base else None)  # fmt: skip


def node_to_fact_ranking(facts, topics: Sequence[int], nodes: np.ndarray) -> np.ndarray:
    """Facts among the topics and the ranked nodes, ordered by the worse rank of their two
    endpoints (topics rank first; ties by fact index)."""
    rank = np.full(facts.n_entities, np.iinfo(np.int64).max)
    rank[np.asarray(nodes, np.int64)] = np.arange(len(nodes))
    rank[np.asarray(topics, np.int64)] = -1
    worse = np.maximum(rank[facts.head], rank[facts.tail])
    inside = np.flatnonzero(worse < np.iinfo(np.int64).max)
    return inside[np.lexsort((inside, worse[inside]))]


def targets(bench, facts, questions):
    """Per question: topic ids, gold facts of the whole graph, answers reachable from the topic."""
    g = bench.graph
    out = []
    for q in questions:
        topic = g.entity_index(q.topic)
        answers = np.array([g.entity_index(a) for a in q.answers if g.has_entity(a)], np.int64)
        dist = g.distances([topic])[0]
        answers = answers[dist[answers] >= 0]
        out.append(([topic], gold_facts(facts, [topic], answers), answers))
    return out


def per_question(rankings, facts, tgt) -> dict[str, np.ndarray]:
    """``[Q]`` triple and answer recall@K of each question (``nan`` where undefined)."""
    out: dict[str, list] = {f"{m}@{k}": [] for m in ("triple", "answer") for k in KS}
    for ranked, (_, gold, answers) in zip(rankings, tgt):
        for k in KS:
            out[f"triple@{k}"].append(recall_at_k(ranked, gold, k) if len(gold) else np.nan)
            out[f"answer@{k}"].append(
                answer_recall_at_k(facts.head[ranked], facts.tail[ranked], answers, k)
                if len(answers) else np.nan)  # fmt: skip
    return {m: np.asarray(v, float) for m, v in out.items()}


def ceilings(prepared, tgt) -> np.ndarray:
    """``[Q]`` share of each question's target facts among its candidates (``nan``: none)."""
    return np.array([np.isin(gold, sub.facts).mean() if len(gold) else np.nan
                     for sub, (_, gold, _) in zip(prepared.subgraphs, tgt)])  # fmt: skip


def summarize(per_seed: list[dict], hops: np.ndarray) -> dict:
    """``{hop: {metric: (mean, sd over seeds)}}`` of per-question metrics, hops and "all"."""
    out = {}
    for h in (*HOPS, "all"):
        sel = hops == h if h != "all" else np.ones(len(hops), bool)
        out[str(h)] = {m: (float(np.mean([np.nanmean(s[m][sel]) for s in per_seed])),
                           float(np.std([np.nanmean(s[m][sel]) for s in per_seed])))
                       for m in per_seed[0]}  # fmt: skip
    return out


def seed_mean(per_seed: list[dict], metric: str) -> np.ndarray:
    return np.mean([s[metric] for s in per_seed], axis=0)


def interval(a: np.ndarray, b: np.ndarray) -> dict:
    """Paired bootstrap of ``a - b`` over the questions where both are defined, with the
    reading "resolved" (the 95 % interval excludes 0) or not."""
    ok = ~(np.isnan(a) | np.isnan(b))
    return paired_bootstrap(a[ok], b[ok])


def oversmoothing(models: dict, prepared) -> dict:
    """Normalized Dirichlet energy per layer, mean over questions, per gate."""
    out = {}
    subs, qs = list(prepared.subgraphs), prepared.q
    for gate, model in models.items():
        energies = []
        for lo in range(0, len(subs), 8):
            b = model.batch(subs[lo : lo + 8], qs[lo : lo + 8])
            z = entity_states(model.params, model.config, b, model.relation_text)
            for i in range(len(subs[lo : lo + 8])):
                energies.append([float(dirichlet_energy(z[layer, i], b.head[i], b.tail[i], b.fact_mask[i]))
                                 for layer in range(z.shape[0])])  # fmt: skip
        out[gate] = np.mean(energies, axis=0).tolist()
    return out


def figure(recall: dict, smooth: dict, ceiling: dict):
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    ax = axes[0]
    for name, table in recall.items():
        y = [table["all"][f"triple@{k}"][0] for k in KS]
        e = [table["all"][f"triple@{k}"][1] for k in KS]
        ax.errorbar(KS, y, yerr=e, marker="o", capsize=3, label=name)
    ax.axhline(ceiling["all"], color="k", ls=":", label="candidate ceiling")
    ax.set(xscale="log", xlabel="K (facts kept)", ylabel="shortest-path triple recall@K",
           title="CoDEx-M, all hops (mean ± s.d. over seeds)")  # fmt: skip
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.minorticks_off()
    ax.legend(fontsize=8)
    ax = axes[1]
    x = np.arange(len(HOPS))
    names = [n for n in recall if n in MAIN]
    for j, name in enumerate(names):
        y = [recall[name][str(h)]["triple@100"][0] / ceiling[str(h)] for h in HOPS]
        ax.bar(x + (j - 1) * 0.27, y, 0.27, label=name)
    ax.set(xticks=x, xlabel="hops", ylabel="recall@100 / candidate ceiling", ylim=(0, 1.05),
           title="CoDEx-M: share of the reachable targets in the top 100")  # fmt: skip
    ax.set_xticklabels([str(h) for h in HOPS])
    ax.legend(fontsize=8)
    ax = axes[2]
    for gate, e in smooth.items():
        ax.plot(range(len(e)), e, marker="o", label=gate)
        ax.set_xticks(range(len(e)))
    ax.set(xlabel="layer", ylabel="normalized Dirichlet energy", yscale="log",
           title="Oversmoothing: entity states per layer")  # fmt: skip
    ax.legend(fontsize=8)
    fig.suptitle("Learned triple retrievers on one shared candidate set: SubgraphRAG vs the "
                 "structurally gated GNN", fontsize=13)  # fmt: skip
    return fig


def train_variants(bench, sc, prep, variants, state_dir, log) -> tuple[dict, dict, dict]:
    """Every variant and seed on the shared prepared questions: per-seed per-question test
    metrics, training logs and the seed-0 models."""
    runs, logs, models = {}, {}, {}
    for name, variant in variants.items():
        labels = variant[3]
        for seed in sc.seeds:
            model = make(bench, variant, sc, seed, name, prep["base"])
            ckpt = (state_dir / f"{bench.name}-{name}-seed{seed}.npz") if state_dir else None
            cfg = RetrieverTrainConfig(epochs=sc.epochs, patience=sc.patience, seed=seed,
                                       labels=labels)  # fmt: skip
            tl = model.fit(prep[f"train_{labels}"], prep["valid"], cfg, checkpoint=ckpt)
            t = time.perf_counter()
            ranked = model.rank(prep["test"])
            ms = 1000 * (time.perf_counter() - t) / len(prep["test"])
            runs.setdefault(name, []).append(per_question(ranked, prep["facts"], prep["tgt"]))
            epochs_here = len(tl.loss) - tl.resumed_epochs
            logs.setdefault(name, []).append(dict(
                seed=seed, epochs=len(tl.loss), best_epoch=tl.best_epoch, stopped=tl.stopped,
                resumed_epochs=tl.resumed_epochs, n_train=tl.n_train, n_skipped=tl.n_skipped,
                seconds=tl.seconds, train_seconds=tl.train_seconds,
                question_epochs_per_second=tl.question_epochs_per_second,
                ms_per_epoch=1000 * float(np.mean(tl.epoch_seconds[1:] or tl.epoch_seconds))
                if epochs_here else float("nan"),
                ms_per_question_scored=ms))  # fmt: skip
            if seed == sc.seeds[0]:
                models[name] = model
        r = np.nanmean(seed_mean(runs[name], "triple@100"))
        last = logs[name][-1]
        log(f"{bench.name} {name}: triple@100={r:.3f} epochs={last['epochs']} "
            f"(best {last['best_epoch']}, stopped={last['stopped']}) "
            f"{last['question_epochs_per_second']:.1f} question-epochs/s")  # fmt: skip
    return runs, logs, models


def downstream(bench, answerer, pcr, models, test, valid, log) -> dict:
    """Blind (BlindQA with predicted paths) and oracle (gold chain) soft-grounding Hits@1 per
    retriever on the test questions, with paired intervals."""
    out: dict = {}
    paths, predictor = blind_paths(bench, log)
    out["blind_paths"] = paths
    probe = BlindQA(answerer, predictor, lambda d: pcr[d], lam=1.0, kappa=KAPPA)
    lam_blind = fit_blind_lambda(probe.answer_batch([blind(q) for q in valid]), valid)
    lam_oracle = fit_lambda(GroundedQA(answerer, lambda q: pcr[q.hops], lam=1.0, kappa=KAPPA)
                            .answer_batch(valid))  # fmt: skip
    out["lam_blind"], out["lam_oracle"] = lam_blind, lam_oracle
    retrievers = dict(models, pcr=None)
    hits: dict = {}
    for name, model in retrievers.items():
        r_blind = (lambda d: pcr[d]) if model is None else model
        r_oracle = (lambda q: pcr[q.hops]) if model is None else model
        qa = BlindQA(answerer, predictor, r_blind, k_nodes=100, lam=lam_blind, kappa=KAPPA)
        b = [score(o, "soft", q.answers)["hit"]
             for o, q in zip(qa.answer_batch([blind(q) for q in test]), test)]  # fmt: skip
        oqa = GroundedQA(answerer, r_oracle, k_nodes=100, lam=lam_oracle, kappa=KAPPA)
        outs = oqa.answer_batch(test)
        o = [x.answer is not None and x.answer in q.answers for x, q in zip(outs, test)]
        hits[name] = dict(blind=np.asarray(b, float), oracle=np.asarray(o, float))
        out[name] = dict(
            blind_hits1=float(np.mean(b)),
            oracle_hits1=float(np.mean(o)),
            oracle_abstained=float(np.mean([x.answer is None for x in outs])),
            blind_vs_oracle=interval(hits[name]["blind"], hits[name]["oracle"]),
        )
    if "gated" in hits and "subgraphrag" in hits:
        out["gated_vs_subgraphrag"] = {
            m: interval(hits["gated"][m], hits["subgraphrag"][m]) for m in ("blind", "oracle")
        }
    log(f"{bench.name} downstream soft Hits@1 blind / oracle (gold chain): " + " ".join(
        f"{n}={out[n]['blind_hits1']:.3f}/{out[n]['oracle_hits1']:.3f}" for n in retrievers))  # fmt: skip
    return out


def blind_queries(questions) -> list[Query]:
    """What a system sees of each question in use: its text and topic entity."""
    return [Query(q.text, anchor=q.topic) for q in questions]


def shared_candidates(bench, sc: Scale, variants: dict) -> tuple[dict, list, list, list]:
    """A run's training, validation and test questions (hop by hop) and their one candidate
    set, built once for every variant and seed: ``prep`` holds the base retriever and its
    facts, the prepared validation, blind test and training questions (also with
    SubgraphRAG's pair labels when a variant asks for them) and the test targets."""
    train = by_hop(bench, "train", sc.train_per_hop)
    valid = by_hop(bench, "valid", sc.valid_per_hop)
    test = by_hop(bench, "test", sc.test_per_hop)
    base = make(bench, VARIANTS["subgraphrag"], sc, 0, "base")
    prep = dict(base=base, facts=base.facts, valid=base.prepare([q.query() for q in valid]),
                test=base.prepare(blind_queries(test)),
                train_all=base.prepare([q.query() for q in train]))  # fmt: skip
    if any(v[3] == "pair" for v in variants.values()):
        t = prep["train_all"]
        prep["train_pair"] = base.prepare_subgraphs(t.subgraphs, t.q, t.ids, "pair")
    prep["tgt"] = targets(bench, base.facts, test)
    return prep, train, valid, test


def compare_recall(recall: dict[str, np.ndarray], hops: np.ndarray) -> dict:
    """Paired intervals of triple recall@100 (``[Q]`` per variant, seed-averaged) for each of
    :data:`COMPARISONS` whose two sides are in ``recall``: over all hops and per hop."""
    out = {}
    for a, b in COMPARISONS:
        if a in recall and b in recall:
            A, B = recall[a], recall[b]
            out[f"{a}-{b}"] = {"all": interval(A, B)} | {
                str(h): interval(A[hops == h], B[hops == h]) for h in HOPS}  # fmt: skip
    return out


def log_comparisons(dataset: str, comparisons: dict, log) -> None:
    for key, c in comparisons.items():
        a = c["all"]
        log(f"{dataset} triple@100 {key}: {a['diff']:+.3f} (95 % {a['ci'][0]:+.3f} to "
            f"{a['ci'][1]:+.3f}{'' if a['resolved'] else ', not resolved at this size'})")  # fmt: skip


def deep_models(bench, sc: Scale, prep: dict, trained: dict | None = None) -> dict:
    """The L = 4 models of the three gates (seed 0) for the oversmoothing diagnostic; the
    structural one is ``trained["gated_L4"]`` where that variant was already trained with seed 0
    (the same model: same configuration, seed, data and training settings)."""
    out = {}
    if trained and "gated_L4" in trained and sc.seeds[0] == 0:
        out["structural"] = trained["gated_L4"]
    for gate in ("structural", "semantic", "mean"):
        if gate in out:
            continue
        out[gate] = make(bench, (gate, 4, True, "all"), sc, 0, f"{gate}_L4", prep["base"])
        out[gate].fit(prep["train_all"], prep["valid"],
                      RetrieverTrainConfig(epochs=sc.epochs, patience=sc.patience))  # fmt: skip
    return out


def run_dataset(dataset: str, sc: Scale, state_dir: Path | None, log) -> tuple[dict, dict, dict]:
    t = time.perf_counter()
    bench, answerer, (pcr, soft), _ = build(setting(dataset))
    log(f"{dataset}: benchmark and answerer in {time.perf_counter() - t:.1f} s (shared with "
        "the grounded-QA experiment in one process)")  # fmt: skip
    variants = dict(VARIANTS, **(FULL_ONLY if sc.full_variants else {}))
    if dataset != "codex-m" or not sc.ablations:
        variants = {n: variants[n] for n in MAIN}
    t = time.perf_counter()
    prep, train, valid, test = shared_candidates(bench, sc, variants)
    base, tgt = prep["base"], prep["tgt"]
    prepare_s = time.perf_counter() - t
    hops = np.array([q.hops for q in test])
    ceil = ceilings(prep["test"], tgt)
    log(f"{dataset}: {len(train)} training / {len(valid)} validation / {len(test)} test questions "
        f"prepared in {prepare_s:.1f} s; candidate ceiling "
        + " ".join(f"{h}-hop={np.nanmean(ceil[hops == h]):.3f}" for h in HOPS))  # fmt: skip
    t_train = time.perf_counter()
    runs, logs, models = train_variants(bench, sc, prep, variants, state_dir, log)
    for name, idx in (("pcr", 0), ("soft_pcr", 1)):
        retr = (pcr, soft)[idx][2]
        ranked = [node_to_fact_ranking(base.facts, topics, retr.retrieve(q.query(), 400).index)
                  for q, (topics, _, _) in zip(test, tgt)]  # fmt: skip
        runs[name] = [per_question(ranked, base.facts, tgt)]
    results = {n: summarize(r, hops) for n, r in runs.items()}
    ceiling = {str(h): float(np.nanmean(ceil[hops == h])) for h in HOPS}
    ceiling["all"] = float(np.nanmean(ceil))
    # without anchors the candidates are the topic's 2 hops only (SubgraphRAG's own set)
    own = TripleRetriever(bench.graph, encoder=base.encoder, n_anchors=0, max_facts=sc.max_facts,
                          facts=base.facts, relation_texts=[bench.relation_labels[r] for r in
                                                            bench.graph.relations])  # fmt: skip
    own_ceil = ceilings(own.prepare(blind_queries(test)), tgt)
    ratio = {n: {h: results[n][h]["triple@100"][0] / ceiling[h] for h in ceiling}
             for n in runs}  # fmt: skip
    comparisons = compare_recall({n: seed_mean(r, "triple@100") for n, r in runs.items()}, hops)
    log_comparisons(dataset, comparisons, log)
    seconds = dict(prepare=prepare_s, train=time.perf_counter() - t_train)
    t = time.perf_counter()
    down = downstream(bench, answerer, pcr, {n: models[n] for n in sc.downstream}, test, valid,
                      log)  # fmt: skip
    seconds["downstream"] = time.perf_counter() - t
    report = dict(
        n_train=len(train), n_valid=len(valid), n_test=len(test), seconds=seconds,
        ceiling=ceiling,
        ceiling_topic_only={str(h): float(np.nanmean(own_ceil[hops == h])) for h in HOPS}
        | {"all": float(np.nanmean(own_ceil))},
        recall_over_ceiling=ratio, recall=results, comparisons=comparisons, training=logs,
        downstream=down,
        candidate_cap_binds=float(np.mean(prep["test"].n_facts >= sc.max_facts)),
        per_question={n: {m: seed_mean(r, m).tolist() for m in ("triple@100", "answer@100")}
                      for n, r in runs.items()} | {"ceiling": ceil.tolist(),
                                                   "hops": hops.tolist()},
    )  # fmt: skip
    return report, models, prep


@float64
def main(argv: Sequence[str] | None = None, sc: Scale | None = None) -> list[Path]:
    """Run the experiment (``sc``: another scale than ``--quick`` / ``--full`` give)."""
    args = parse_args(argv, __doc__.splitlines()[0])
    sc = sc if sc is not None else scale(args.full)
    if getattr(args, "seeds", None) is not None:
        sc = dataclasses.replace(sc, seeds=tuple(range(args.seeds)))
    t0 = time.perf_counter()

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    state_dir = None
    if sc.checkpoints:
        state_dir = args.out / "learned_retrievers_state"
        state_dir.mkdir(parents=True, exist_ok=True)
    report: dict = dict(full=args.full, scale=dataclasses.asdict(sc), datasets={})
    rows, trained, preps = [], {}, {}
    for dataset in ("codex-m", "umls"):
        rep, models, prep = run_dataset(dataset, sc, state_dir, log)
        report["datasets"][dataset] = rep
        trained[dataset], preps[dataset] = models, prep
        for n, table in rep["recall"].items():
            for h, ms in table.items():
                rows += [(dataset, n, h, m, v[0], v[1]) for m, v in ms.items()]
        jax.clear_caches()
    # transfer: parameters trained on one graph's questions, applied to the other's
    transfer = {}
    for src, dst in (("codex-m", "umls"), ("umls", "codex-m")):
        p = preps[dst]
        for name in ("subgraphrag", "gated"):
            moved = trained[dst][name]
            own = moved.params
            moved.params = trained[src][name].params
            ranked = moved.rank(p["test"])
            moved.params = own
            transfer[f"{src}->{dst}:{name}"] = float(
                np.nanmean(per_question(ranked, p["facts"], p["tgt"])["triple@100"]))  # fmt: skip
    report["transfer"] = transfer
    log("transfer triple@100: " + " ".join(f"{k}={v:.3f}" for k, v in transfer.items()))
    # oversmoothing on CoDEx-M test questions
    p = preps["codex-m"]
    if sc.deep_oversmoothing:
        bench = build(setting("codex-m"))[0]
        deep = deep_models(bench, sc, p, trained["codex-m"])
        report["oversmoothing_layers"] = 4
    else:
        deep = {"structural": trained["codex-m"]["gated"], "mean": trained["codex-m"]["ungated"]}
        report["oversmoothing_layers"] = 2
    report["oversmoothing"] = oversmoothing(deep, p["test"])
    log("dirichlet energy per layer: " + " ".join(
        f"{g}={[round(x, 3) for x in e]}" for g, e in report["oversmoothing"].items()))  # fmt: skip
    codex = report["datasets"]["codex-m"]
    report["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["seconds"] = time.perf_counter() - t0
    log(f"learned_retrievers: {report['seconds']:.0f} s")
    paths = [write_json(args.out / "learned_retrievers.json", report)]
    paths.append(write_csv(args.out / "learned_retrievers.csv",
                           ("dataset", "method", "hops", "metric", "mean", "sd"), rows))  # fmt: skip
    shown = {n: codex["recall"][n] for n in (*MAIN, "pcr", "soft_pcr")}
    paths += save_figure(figure(shown, report["oversmoothing"], codex["ceiling"]),
                         args.out / "learned_retrievers.png", quick=not args.full)  # fmt: skip
    r = {n: codex["recall"][n]["all"]["triple@100"][0] for n in (*MAIN, "pcr")}
    c = codex["recall_over_ceiling"]
    d = codex["downstream"]
    print(
        f"recall100_subgraphrag={r['subgraphrag']:.4f} recall100_gated={r['gated']:.4f} "
        f"recall100_ungated={r['ungated']:.4f} recall100_pcr={r['pcr']:.4f} "
        f"ceiling100_gated={c['gated']['all']:.4f} "
        f"ceiling100_subgraphrag={c['subgraphrag']['all']:.4f} "
        f"blind_hits1_gated={d['gated']['blind_hits1']:.4f} "
        f"blind_hits1_subgraphrag={d['subgraphrag']['blind_hits1']:.4f}"
    )
    return paths


if __name__ == "__main__":
    main()
