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
its retriever: the system sees the question text and topic only, asked in the benchmark's
held-out wordings (the same questions; the retrievers trained on the single-template texts);
relation paths come from the grounded QA experiment's chain reader
(:class:`grounding.plans.ChainReader`, fitted on the training questions, which are worded in
the training wordings only, its weights chosen on validation); each retriever's top 100 facts are the evidence;
one ``lambda`` fitted on blind validation outcomes with PCR's evidence, the validation
answers read off the train and valid triples. Hits@1 of soft grounding, with paired
intervals. The loop that grounds the question's gold chain stays as the row "oracle (gold
chain)".

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

import numpy as np

from experiments._io import float64, parse_args, plt, save_figure, write_csv, write_json
from experiments._setup import (
    FULL_ONLY,
    HOPS,
    KS,
    MAIN,
    VARIANTS,
    Scale,
    blind_queries,
    build,
    ceilings,
    compare_recall,
    deep_models,
    downstream,
    log_comparisons,
    oversmoothing,
    per_question,
    scale,
    seed_mean,
    setting,
    shared_candidates,
    summarize,
    train_variants,
)
from grounding import programs
from grounding.retrieval import TripleRetriever


def node_to_fact_ranking(facts, topics: Sequence[int], nodes: np.ndarray) -> np.ndarray:
    """Facts among the topics and the ranked nodes, ordered by the worse rank of their two
    endpoints (topics rank first; ties by fact index)."""
    rank = np.full(facts.n_entities, np.iinfo(np.int64).max)
    rank[np.asarray(nodes, np.int64)] = np.arange(len(nodes))
    rank[np.asarray(topics, np.int64)] = -1
    worse = np.maximum(rank[facts.head], rank[facts.tail])
    inside = np.flatnonzero(worse < np.iinfo(np.int64).max)
    return inside[np.lexsort((inside, worse[inside]))]


#: How the figure names the retrievers and the GNN's gates.
NAMES = {"subgraphrag": "SubgraphRAG", "gated": "GNN, structural gate",
         "ungated": "GNN, mean aggregation (no gate)", "pcr": "path-constrained retrieval (PCR)",
         "soft_pcr": "soft PCR", "structural": "structural gate", "semantic": "similarity gate",
         "mean": "mean aggregation (no gate)"}  # fmt: skip


def figure(recall: dict, smooth: dict, ceiling: dict):
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    ax = axes[0]
    for name, table in recall.items():
        y = [table["all"][f"triple@{k}"][0] for k in KS]
        e = [table["all"][f"triple@{k}"][1] for k in KS]
        ax.errorbar(KS, y, yerr=e, marker="o", capsize=3, label=NAMES.get(name, name))
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
        ax.bar(x + (j - 1) * 0.27, y, 0.27, label=NAMES.get(name, name))
    ax.set(xticks=x, xlabel="hops", ylabel="recall@100 / candidate ceiling", ylim=(0, 1.05),
           title="CoDEx-M: share of the reachable targets in the top 100")  # fmt: skip
    ax.set_xticklabels([str(h) for h in HOPS])
    ax.legend(fontsize=8)
    ax = axes[2]
    for gate, e in smooth.items():
        ax.plot(range(len(e)), e, marker="o", label=NAMES.get(gate, gate))
        ax.set_xticks(range(len(e)))
    ax.set(xlabel="layer", ylabel="normalized Dirichlet energy", yscale="log",
           title="Oversmoothing: entity states per layer")  # fmt: skip
    ax.legend(fontsize=8)
    fig.suptitle("Learned triple retrievers on one shared candidate set: SubgraphRAG vs the "
                 "structurally gated GNN", fontsize=13)  # fmt: skip
    return fig


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
        programs.release_programs()
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
