"""The learned triple retrievers' shared schedule: scales, variants, the shared candidate
sets, training, recall metrics and intervals, the oversmoothing diagnostic and the downstream
grounding (shared by ``learned_retrievers`` and ``benchmarks/learned_full_schedule.py``)."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from experiments._setup.qa import (
    SETTINGS,
    Setting,
    blind_paths,
    build,
    config,
    fitted,
    score,
)
from experiments._stats import paired_bootstrap
from grounding.qa import (
    BlindQA,
    GroundedQA,
)
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

__all__ = [
    "KS",
    "HOPS",
    "ANCHORS",
    "VARIANTS",
    "FULL_ONLY",
    "MAIN",
    "COMPARISONS",
    "Scale",
    "scale",
    "setting",
    "by_hop",
    "make",
    "targets",
    "per_question",
    "ceilings",
    "summarize",
    "seed_mean",
    "interval",
    "blind_queries",
    "shared_candidates",
    "train_variants",
    "compare_recall",
    "log_comparisons",
    "deep_models",
    "oversmoothing",
    "downstream",
]


# -------------------------------------------------------------- learned triple retrievers

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
    holds 400 + 50 + 50 CoDEx-M and 240 + 30 + 30 UMLS questions per hop), with the
    benchmark's single-template texts: the retrievers read the question's words, and their
    recall is measured on one wording (the held-out wordings test a chain reader, the grounded
    QA experiment's concern)."""
    return dataclasses.replace(SETTINGS[False][dataset], wording="single")


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


def column_hits(outcomes, questions) -> tuple[np.ndarray, np.ndarray]:
    """The one scorer of every column of the downstream table: per question, whether the top
    of the soft posterior is a gold answer (an outcome with no result scores 0), and whether
    the paper's decision rule answered (its coverage, reported beside)."""
    hit = [score(o, "soft", q.answers)["hit"] for o, q in zip(outcomes, questions)]
    answered = [getattr(o, "answer", None) is not None for o in outcomes]
    return np.asarray(hit, float), np.asarray(answered, float)


def downstream(bench, answerer, pcr, models, test, valid, log) -> dict:
    """Blind (BlindQA with the chain reader's paths) and oracle (gold chain) soft-grounding
    Hits@1 per retriever on the test questions, both columns scored by :func:`column_hits`
    (the top of the soft posterior), the decision rule's coverage beside them, with paired
    intervals. The questions are asked in the benchmark's held-out wordings (the grounded QA
    experiment's texts: the same questions, chains, answers and splits), which no training
    question of the reader shows; the retrievers were trained on the single-template texts."""
    out: dict = {}
    held = build(SETTINGS[False][bench.name])[0]  # the same questions in held-out wordings
    worded = {q.id: q for q in held.questions}
    test, valid = [worded[q.id] for q in test], [worded[q.id] for q in valid]
    paths, predictors = blind_paths(held, log)
    predictor = predictors["reader"]
    out["blind_paths"] = paths
    _, lam_blind = fitted(lambda c: BlindQA(answerer, predictor, lambda d: pcr[d], c), held, valid)
    _, lam_oracle = fitted(lambda c: GroundedQA(answerer, lambda d: pcr[d], c), held, valid)
    out["lam_blind"], out["lam_oracle"] = lam_blind, lam_oracle
    retrievers = dict(models, pcr=None)
    hits: dict = {}
    for name, model in retrievers.items():
        retriever = (lambda d: pcr[d]) if model is None else model
        systems = {
            "blind": BlindQA(answerer, predictor, retriever, config(lam_blind), k_nodes=100),
            "oracle": GroundedQA(answerer, retriever, config(lam_oracle), k_nodes=100),
        }
        shown = {"blind": [blind(q) for q in test], "oracle": list(test)}
        scored = {c: column_hits(qa.answer_batch(shown[c]), test) for c, qa in systems.items()}
        hits[name] = {c: h for c, (h, _) in scored.items()}
        out[name] = dict(
            **{f"{c}_hits1": float(h.mean()) for c, (h, _) in scored.items()},
            **{f"{c}_coverage": float(a.mean()) for c, (_, a) in scored.items()},
            blind_vs_oracle=interval(hits[name]["blind"], hits[name]["oracle"]),
        )
    if "gated" in hits and "subgraphrag" in hits:
        out["gated_vs_subgraphrag"] = {
            m: interval(hits["gated"][m], hits["subgraphrag"][m]) for m in ("blind", "oracle")
        }
    log(f"{bench.name} downstream soft Hits@1 blind / oracle (gold chain): " + " ".join(
        f"{n}={out[n]['blind_hits1']:.3f}/{out[n]['oracle_hits1']:.3f}" for n in retrievers))  # fmt: skip
    return out
