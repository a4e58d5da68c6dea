"""Learned triple retrievers on real knowledge graphs: SubgraphRAG against the structurally gated
GNN retriever, its ablations, path-constrained retrieval, and what each does downstream.

For CoDEx-M and UMLS, the templated multi-hop questions of
:func:`grounding.datasets.kgqa_benchmark` (train / valid / test splits) train and test
:class:`grounding.retrieval.TripleRetriever` in these variants: ``subgraphrag`` (no GNN, no
anchors), ``gated`` (anchors, structural gate, L = 2), ``ungated`` (mean aggregation),
``semantic`` (similarity gate), ``no_gnn`` (anchors, no GNN), ``no_anchors`` (structural gate
without anchors) and, in full runs, depths L = 1, 3, 4. Every method is scored against one
target set per question: the facts on a shortest topic-answer path of the whole evidence graph
(SubgraphRAG's supervision without a candidate cut); shortest-path triple recall@K and answer
recall@K for K in (50, 100, 200, 400) as SubgraphRAG's evaluation defines them, by hop count;
mean and s.d. over seeds (full runs: three seeds for SubgraphRAG, gated and ungated, one for
the other ablations; 300 training questions, 8 epochs, 50 test questions per hop). Path-constrained retrieval (hard and soft, depth 2 like the
candidate subgraphs) ranks nodes; its facts are ranked by the worse rank of their two
endpoints (topic first). Also: the oversmoothing diagnostic (normalized Dirichlet energy of
the entity states per layer, structural vs semantic vs ungated, L = 4), transfer (trained on
one graph, tested on the other), downstream grounding (each retriever's top-100 facts as the
evidence state of :func:`grounding.ground` with the trained answerer's prior; Hits@1 and
abstention), and speed (training epochs/s, retrieval ms/question batched).

Final line: ``recall100_subgraphrag=<x> recall100_gated=<y> recall100_ungated=<z>
recall100_pcr=<w>`` (CoDEx-M, all hops, shortest-path triple recall@100).
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
from experiments.grounded_qa import KAPPA, SETTINGS, Setting, build, fit_lambda
from grounding.qa import GroundedQA
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
VARIANTS = {  # name: (gate, layers, anchors)
    "subgraphrag": ("none", 0, 0),
    "gated": ("structural", 2, 20),
    "ungated": ("mean", 2, 20),
    "semantic": ("semantic", 2, 20),
    "no_gnn": ("none", 0, 20),
    "no_anchors": ("structural", 2, 0),
}
DEPTHS = {f"gated_L{L}": ("structural", L, 20) for L in (1, 3, 4)}
MAIN = ("subgraphrag", "gated", "ungated")


@dataclasses.dataclass(frozen=True)
class Scale:
    n_train: int
    n_valid: int
    n_test_per_hop: int
    epochs: int
    seeds: tuple[int, ...]
    max_facts: int
    depths: bool
    ablations: bool = True  # semantic, no_gnn and no_anchors on CoDEx-M (else MAIN only)


def scale(full: bool) -> Scale:
    if full:
        return Scale(300, 60, 50, 8, (0, 1, 2), 1500, True)
    return Scale(80, 20, 8, 2, (0,), 600, False)


def setting(dataset: str) -> Setting:
    """The grounded-QA experiment's quick setting, in both modes: the answerer (trained on the
    evidence for a few epochs) only serves the downstream table, and is shared with that
    experiment within one process."""
    return SETTINGS[False][dataset]


def make(bench, variant: tuple, sc: Scale, seed: int, name: str, facts=None) -> TripleRetriever:
    gate, layers, anchors = variant
    labels = [bench.relation_labels[r] for r in bench.graph.relations]
    return TripleRetriever(bench.graph, GNNConfig(gate=gate, layers=layers), relation_texts=labels,
                           n_anchors=anchors, max_facts=sc.max_facts, name=name, seed=seed,
                           facts=facts)  # fmt: skip


def rank_questions(model: TripleRetriever, questions) -> tuple[list[np.ndarray], float]:
    """Ranked facts per question and milliseconds per question (batched scoring)."""
    queries = [q.query() for q in questions]
    t = time.perf_counter()
    ranked = model.rank(model.subgraphs(queries), model.embed(queries))
    return ranked, 1000 * (time.perf_counter() - t) / len(queries)


def test_split(bench, sc: Scale) -> list:
    return [q for h in HOPS for q in bench.split("test", h)[: sc.n_test_per_hop]]


def node_to_fact_ranking(facts, topics: Sequence[int], nodes: np.ndarray) -> np.ndarray:
    """Facts among the topics and the ranked nodes, ordered by the worse rank of their two
    endpoints (topics rank first; ties by fact index)."""
    rank = np.full(facts.n_entities, np.iinfo(np.int64).max)
    rank[np.asarray(nodes, np.int64)] = np.arange(len(nodes))
    rank[np.asarray(topics, np.int64)] = -1
    worse = np.maximum(rank[facts.head], rank[facts.tail])
    inside = np.flatnonzero(worse < np.iinfo(np.int64).max)
    return inside[np.lexsort((inside, worse[inside]))]


def recalls(ranked: np.ndarray, facts, gold: np.ndarray, answers: np.ndarray) -> dict:
    """Triple and answer recall@K of one question (``nan`` where undefined)."""
    out = {}
    for k in KS:
        out[f"triple@{k}"] = recall_at_k(ranked, gold, k) if len(gold) else np.nan
        out[f"answer@{k}"] = (answer_recall_at_k(facts.head[ranked], facts.tail[ranked], answers, k)
                              if len(answers) else np.nan)  # fmt: skip
    return out


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


def evaluate(rankings, facts, tgt, questions) -> dict:
    rows = [recalls(r, facts, gold, ans) | {"hops": q.hops}
            for r, (_, gold, ans), q in zip(rankings, tgt, questions)]  # fmt: skip
    out = {}
    for h in (*HOPS, "all"):
        sel = [r for r in rows if h == "all" or r["hops"] == h]
        out[str(h)] = {m: float(np.nanmean([r[m] for r in sel])) for m in rows[0] if m != "hops"}
    return out


def mean_sd(per_seed: list[dict]) -> dict:
    return {h: {m: (float(np.mean([s[h][m] for s in per_seed])),
                    float(np.std([s[h][m] for s in per_seed])))
                for m in per_seed[0][h]} for h in per_seed[0]}  # fmt: skip


def pcr_rankings(retrievers, facts, tgt, questions, k_nodes=400):
    out = []
    for q, (topics, _, _) in zip(questions, tgt):
        res = retrievers[2].retrieve(q.query(), k_nodes)
        out.append(node_to_fact_ranking(facts, topics, res.index))
    return out


def oversmoothing(models: dict, queries) -> dict:
    """Normalized Dirichlet energy per layer, mean over questions, per gate."""
    out = {}
    for gate, model in models.items():
        qs = model.embed(queries)
        subs = model.subgraphs(queries)
        energies = []
        for lo in range(0, len(subs), 8):
            b = model.batch(subs[lo : lo + 8], qs[lo : lo + 8])
            z = entity_states(model.params, model.config, b, model.relation_text)
            for i in range(len(subs[lo : lo + 8])):
                energies.append([float(dirichlet_energy(z[layer, i], b.head[i], b.tail[i], b.fact_mask[i]))
                                 for layer in range(z.shape[0])])  # fmt: skip
        out[gate] = np.mean(energies, axis=0).tolist()
    return out


def downstream(answerer, retriever, questions, lam, k=100) -> dict:
    qa = GroundedQA(answerer, retriever, k_nodes=k, lam=lam, kappa=KAPPA)
    outs = qa.answer_batch(questions)
    hit = [o.answer is not None and o.answer in q.answers for o, q in zip(outs, questions)]
    return dict(
        hits1=float(np.mean(hit)), abstained=float(np.mean([o.answer is None for o in outs]))
    )


def figure(recall: dict, smooth: dict):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    ax = axes[0]
    for name, table in recall.items():
        y = [table["all"][f"triple@{k}"][0] for k in KS]
        e = [table["all"][f"triple@{k}"][1] for k in KS]
        ax.errorbar(KS, y, yerr=e, marker="o", capsize=3, label=name)
    ax.set(xscale="log", xlabel="K (facts kept)", ylabel="shortest-path triple recall@K",
           title="CoDEx-M, all hops (mean ± s.d. over seeds)")  # fmt: skip
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.minorticks_off()
    ax.legend(fontsize=8)
    ax = axes[1]
    for gate, e in smooth.items():
        ax.plot(range(len(e)), e, marker="o", label=gate)
        ax.set_xticks(range(len(e)))
    ax.set(xlabel="layer", ylabel="normalized Dirichlet energy", yscale="log",
           title="Oversmoothing: entity states per layer (L = 4)")  # fmt: skip
    ax.legend(fontsize=8)
    fig.suptitle(
        "Learned triple retrievers: SubgraphRAG vs the structurally gated GNN", fontsize=13
    )
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    sc = scale(args.full)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    report: dict = dict(full=args.full, scale=dataclasses.asdict(sc), datasets={})
    rows = []
    trained: dict = {}
    for dataset in ("codex-m", "umls"):
        bench, answerer, retrievers, _ = build(setting(dataset))
        train = [q.query() for q in bench.split("train")[: sc.n_train]]
        valid = [q.query() for q in bench.split("valid")[: sc.n_valid]]
        test = test_split(bench, sc)
        variants = dict(VARIANTS, **(DEPTHS if sc.depths else {}))
        if dataset != "codex-m" or not sc.ablations:
            variants = {n: variants[n] for n in MAIN}
        facts = tgt = None
        results, logs = {}, {}
        for name, variant in variants.items():
            per_seed = []
            for seed in sc.seeds if name in MAIN else sc.seeds[:1]:
                model = make(bench, variant, sc, seed, name, facts)
                facts = model.facts
                tgt = tgt or targets(bench, facts, test)
                tl = model.fit(train, valid, RetrieverTrainConfig(epochs=sc.epochs, seed=seed))
                ranked, ms = rank_questions(model, test)
                per_seed.append(evaluate(ranked, facts, tgt, test))
                logs.setdefault(name, []).append(dict(
                    epochs=len(tl.loss), best_epoch=tl.best_epoch, n_train=tl.n_train,
                    n_skipped=tl.n_skipped, seconds=tl.seconds,
                    epochs_per_second=tl.epochs_per_second, ms_per_question=ms))  # fmt: skip
                if seed == sc.seeds[0]:
                    trained[dataset, name] = model
            results[name] = mean_sd(per_seed)
            log(f"{dataset} {name}: triple@100={results[name]['all']['triple@100'][0]:.3f} "
                f"answer@100={results[name]['all']['answer@100'][0]:.3f} "
                f"({logs[name][-1]['seconds']:.0f} s)")  # fmt: skip
        for name, idx in (("pcr", 0), ("soft_pcr", 1)):
            ranked = pcr_rankings(retrievers[idx], facts, tgt, test)
            results[name] = mean_sd([evaluate(ranked, facts, tgt, test)])
            log(f"{dataset} {name}: triple@100={results[name]['all']['triple@100'][0]:.3f}")
        pcr = retrievers[0]  # depth = the question's hop count, as in grounded QA

        def by_hops(q, pcr=pcr):
            return pcr[q.hops]

        valid_q = bench.split("valid")[: sc.n_valid]
        lam = fit_lambda(GroundedQA(answerer, by_hops, lam=1.0, kappa=KAPPA).answer_batch(valid_q))
        down = {n: downstream(answerer, trained[dataset, n], test, lam) for n in MAIN}
        down["pcr"] = downstream(answerer, by_hops, test, lam)
        log(
            f"{dataset} downstream hits@1: "
            + " ".join(f"{n}={d['hits1']:.3f}" for n, d in down.items())
        )
        report["datasets"][dataset] = dict(recall=results, training=logs, downstream=down, lam=lam,
                                           n_test=len(test))  # fmt: skip
        for n, table in results.items():
            for h, ms in table.items():
                rows += [(dataset, n, h, m, v[0], v[1]) for m, v in ms.items()]
    # transfer: parameters trained on one graph's questions, applied to the other's
    transfer = {}
    for src, dst in (("codex-m", "umls"), ("umls", "codex-m")):
        bench = build(setting(dst))[0]
        test = test_split(bench, sc)
        for name in ("subgraphrag", "gated"):
            moved = trained[dst, name]
            own = moved.params
            moved.params = trained[src, name].params
            ranked, _ = rank_questions(moved, test)
            moved.params = own
            tgt = targets(bench, moved.facts, test)
            transfer[f"{src}->{dst}:{name}"] = evaluate(ranked, moved.facts, tgt, test)["all"][
                "triple@100"
            ]
    report["transfer"] = transfer
    log("transfer triple@100: " + " ".join(f"{k}={v:.3f}" for k, v in transfer.items()))
    # oversmoothing: L = 4 models with three gates, CoDEx-M test questions
    bench = build(setting("codex-m"))[0]
    train = [q.query() for q in bench.split("train")[: sc.n_train]]
    valid = [q.query() for q in bench.split("valid")[: sc.n_valid]]
    deep = {}
    for gate in ("structural", "semantic", "mean"):
        deep[gate] = make(
            bench, (gate, 4, 20), sc, 0, f"{gate}_L4", trained["codex-m", "gated"].facts
        )
        deep[gate].fit(train, valid, RetrieverTrainConfig(epochs=sc.epochs))
    report["oversmoothing"] = oversmoothing(deep, [q.query() for q in test_split(bench, sc)])
    log("dirichlet energy per layer: " + " ".join(
        f"{g}={[round(x, 3) for x in e]}" for g, e in report["oversmoothing"].items()))  # fmt: skip
    codex = report["datasets"]["codex-m"]["recall"]
    report["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # whole run
    paths = [write_json(args.out / "learned_retrievers.json", report)]
    paths.append(write_csv(args.out / "learned_retrievers.csv",
                           ("dataset", "method", "hops", "metric", "mean", "sd"), rows))  # fmt: skip
    paths += save_figure(figure({n: codex[n] for n in (*MAIN, "pcr", "soft_pcr")}, report["oversmoothing"]),
                         args.out / "learned_retrievers.png", quick=not args.full)  # fmt: skip
    r = {n: codex[n]["all"]["triple@100"][0] for n in (*MAIN, "pcr")}
    print(
        f"recall100_subgraphrag={r['subgraphrag']:.4f} recall100_gated={r['gated']:.4f} "
        f"recall100_ungated={r['ungated']:.4f} recall100_pcr={r['pcr']:.4f}"
    )
    return paths


if __name__ == "__main__":
    main()
