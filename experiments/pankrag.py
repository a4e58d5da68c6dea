"""PankRAG on real data: question planning against MuSiQue's human decompositions, and grounded
multi-hop answering on CoDEx-M, blind and with the oracle plan, with its ablations and an
error-injection probe.

Planning: the shipped 3,000 MuSiQue questions split once, seeded (``MUSIQUE_SEED``), into a
dev set of 1,000 and a test set of 2,000; the offline heuristic planner scored on both against
the gold sub-question DAGs (hop-count accuracy, exact DAG match, dependency-edge precision /
recall / F1; steps matched by position), beside the constant baseline "always a two-step
chain" (MuSiQue is 73 % two-hop) and, when ``GROUNDING_LLM_BASE_URL`` and
``GROUNDING_LLM_MODEL`` name an OpenAI-compatible endpoint, the LLM planner. The heuristic's
rules were written before the split, looking at questions of both parts: its test score is not
a held-out score. The same planners on FanOutQA's 310 dev questions, whose decompositions
people wrote as graphs that mostly fan out (one step finds a set, one step per member depends
on it): the same metrics, and the share of fan-out gold graphs whose plan fans out too.

Answering: the templated CoDEx-M benchmark and the TransE answerer of the grounded QA
experiment (same settings, trained on the evidence only); quick mode answers the first 15
test questions per hop count (``--per-hop N``: N). Each system's budget per question
(answerer calls, grounding passes, evidence edges) is reported beside its accuracy.

- **Blind** systems see each test question's text and topic entity only
  (:func:`grounding.query.blind`); the chain reader of the grounded QA experiment
  (``blind_paths``: :class:`~grounding.plans.ChainReader`, fitted on the training questions,
  its weights chosen on validation) replaces the gold chain. PankRAG blind plans one step per relation of the top-1 predicted
  path (:class:`~grounding.plans.PredictedPathPlanner`); also with one answer passed on;
  planned from the top-1 path of the reader's baseline, label lookup
  (:class:`~grounding.plans.LabelLookup`); without the reranker; the
  one-step (no-DAG) pipeline on the same predicted path at the node and candidate budget of
  PankRAG's largest plan (3 steps of 20 nodes: 60 nodes; 5 anchors of 20 candidates: 100);
  and the one-loop PCR system on blind questions (:class:`~grounding.qa.BlindQA`, top-3 paths
  meeting in one posterior). One lambda for every blind system, fitted on the blind
  validation outcomes of the one-loop system (``grounding.qa.fit_lambda``, the grounded QA
  experiment's blind fit).
- **Oracle (gold chain)** systems read the question's gold relation chain: PankRAG (templated
  plan, local retrieval, dependency-aware reranking with graph agreement), with one answer
  passed on (one answerer call per step, its fewest), without the reranker, with embedding agreement, without the DAG (once with PankRAG's per-step budget, 20
  nodes and 20 candidates, once with the budget of its largest plan, 60 nodes and 100
  candidates), global (community) retrieval only, and the one-loop PCR and soft-PCR systems;
  lambda fitted on validation questions for the one-loop path-constrained system
  (``grounding.qa.fit_lambda``) and used by every oracle system (kappa = 1). Local-only equals PankRAG on
  this benchmark: every templated step is specific.

Hits@1 is the top answer of the grounded posterior. Every system is compared with PankRAG
question by question (blind rows with blind PankRAG as well): the paired bootstrap 95 %
interval of the Hits@1 difference and the exact sign test. Systems after the first reuse the
answerer's memoized proposals, so their milliseconds per question are not comparable with the
first's: speed is PankRAG's first run and a second run with compiled programs and no memoized
proposals. Error propagation (oracle plans): on 2- and 3-hop test questions the first step's
answers get a wrong entity (its most probable non-gold answer) holding half of the
probability; final Hits@1 with and without the reranker.

Seeds: ``--seeds N`` repeats the CoDEx-M answering on the benchmark and answerer of seeds
0..N-1 (default one quick, three full); tables, figure, speed and error propagation are seed
0's, and ``seeds`` in the JSON holds each system's Hits@1 per seed and its comparisons with
PankRAG over the pooled test questions of all seeds (two-level bootstrap and seed-level
t-interval), and the DAG at its fewest calls against no DAG at matched nodes and candidates
(``dag_fewest_calls``). Validation answers (for T and lambda) are read off the train and valid
triples only.

Quick mode: the first 15 test questions of each hop count (a smoke run); the blind lambda is
fitted on the first 15 validation questions of each hop count.

Final line: ``musique_hop_acc=<x> musique_edge_f1=<y> pankrag_hits1=<z> flat_hits1=<w>
pankrag_blind_hits1=<b> flat_blind_hits1=<f>`` (heuristic planner on the MuSiQue test split;
CoDEx-M test questions, all hops: oracle PankRAG and no-DAG at PankRAG's per-step budget,
blind PankRAG and blind no-DAG at the matched budget).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.stats import binom

from experiments._io import (
    float64,
    parse_args,
    plt,
    save_figure,
    seeds,
    styled,
    write_csv,
    write_json,
)
from experiments._setup import (
    BUDGET,
    KAPPA,
    SETTINGS,
    blind_paths,
    build,
    config,
    fitted,
    mean_budget,
)
from experiments._stats import paired_bootstrap, paired_seed_interval, seed_bootstrap
from grounding import programs
from grounding.datasets import load_fanoutqa, load_musique
from grounding.language import Endpoint
from grounding.plans import (
    FlatPlanner,
    HeuristicPlanner,
    LLMPlanner,
    Plan,
    PredictedPathPlanner,
    TemplatePlanner,
    plan_from_decomposition,
)
from grounding.qa import BlindQA, GroundedQA, PankRAG, score_probabilities
from grounding.query import blind
from grounding.retrieval import Communities

ORACLE = (
    "pankrag",
    "pankrag_beam1",
    "no_rerank",
    "embedding_agreement",
    "no_dag",
    "no_dag_matched",
    "global_only",
    "pcr",
    "soft_pcr",
)
BLIND = (
    "pankrag_blind",
    "pankrag_beam1_blind",
    "pankrag_lookup_blind",
    "no_rerank_blind",
    "flat_blind",
    "pcr_blind",
)
SYSTEMS = ORACLE + BLIND
LABELS = {
    "pankrag": "PankRAG",
    "pankrag_beam1": "PankRAG, one answer passed on",
    "no_rerank": "without the reranker",
    "embedding_agreement": "embedding agreement",
    "no_dag": "without the DAG",
    "no_dag_matched": "without the DAG, matched budget",
    "global_only": "global retrieval only",
    "pcr": "PCR, one loop",
    "soft_pcr": "soft PCR, one loop",
    "pankrag_blind": "PankRAG",
    "pankrag_beam1_blind": "PankRAG, one answer passed on",
    "pankrag_lookup_blind": "PankRAG, label lookup's path",
    "no_rerank_blind": "without the reranker",
    "flat_blind": "without the DAG, matched budget",
    "pcr_blind": "PCR, one loop (top-3 paths)",
}
HOPS = (1, 2, 3)
QUICK_PER_HOP = 15
#: PankRAG's per-step budget (its defaults): nodes kept per step, candidates per anchor, anchors
K_NODES, K_CANDIDATES, BEAM = 20, 20, 5
MUSIQUE_DEV, MUSIQUE_SEED = 1000, 0


# --------------------------------------------------------------------------- planning


class TwoStepChain:
    """The constant baseline: every question is a two-step chain."""

    name = "two-step chain"

    def plan(self, question: str) -> Plan:
        return plan_from_decomposition(question, ["(first)?", "(second, about #1)?"])


def _edges(plan: Plan) -> set[tuple[int, int]]:
    ix = {s.id: i for i, s in enumerate(plan.steps)}
    return {(ix[a], ix[b]) for a, b in plan.edges()}


def _gold_edges(q) -> set[tuple[int, int]]:
    """The gold dependency edges (by position): FanOutQA names them (``depends_on``), MuSiQue
    writes them as ``#k`` references."""
    if hasattr(q, "depends_on"):
        return {(j, k) for k, deps in enumerate(q.depends_on) for j in deps}
    return _edges(plan_from_decomposition(q.text, q.decomposition, strict=False))


def _fans_out(edges: set[tuple[int, int]]) -> bool:
    """Some step has two or more dependants (a fan-out of parallel steps)."""
    heads = [a for a, _ in edges]
    return any(heads.count(a) >= 2 for a in set(heads))


def planning_rows(planner, questions) -> np.ndarray:
    """``[n, 8]`` per question: gold hops, hop count right, exact DAG, the dependency edges
    found (true positives), wrongly added and missed, and whether the gold graph and the plan
    fan out."""
    out = []
    for q in questions:
        g = _gold_edges(q)
        got = planner.plan(q.text)
        e = _edges(got)
        right = len(got.steps) == q.hops
        out.append(
            (q.hops, right, right and g == e, len(g & e), len(e - g), len(g - e),
             _fans_out(g), _fans_out(e))
        )  # fmt: skip
    return np.array(out, np.int64)


def _summary(rows: np.ndarray) -> dict[str, float]:
    tp, fp, fn = rows[:, 3].sum(), rows[:, 4].sum(), rows[:, 5].sum()
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    gold_fans = rows[:, 6] == 1
    return dict(
        n=len(rows),
        hop_accuracy=float(rows[:, 1].mean()),
        exact_dag=float(rows[:, 2].mean()),
        edge_precision=float(p),
        edge_recall=float(r),
        edge_f1=float(2 * p * r / (p + r)) if p + r else 0.0,
        gold_fan_out=float(gold_fans.mean()),
        # of the questions whose gold graph fans out, the share whose plan fans out too
        fan_out_recall=float(rows[gold_fans, 7].mean()) if gold_fans.any() else None,
    )


def _groups(rows: np.ndarray) -> dict[str, np.ndarray]:
    """The rows per gold hop count and ``all``."""
    keys = {str(h): rows[:, 0] == h for h in sorted(set(rows[:, 0].tolist()))}
    return {**keys, "all": np.ones(len(rows), bool)}


def planning_difference(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 0) -> dict:
    """Planner ``a`` minus planner ``b`` on the same questions (:func:`planning_rows`), per
    gold hop count and overall: hop accuracy and edge F1, each with a paired bootstrap 95 %
    interval (questions resampled, the micro-averaged F1 recomputed)."""
    out = {}
    rng = np.random.default_rng(seed)
    for key, m in _groups(a).items():
        ra, rb = a[m], b[m]
        idx = rng.integers(0, len(ra), (n, len(ra)))
        row = {}
        for metric in ("hop_accuracy", "edge_f1"):
            boot = [_summary(ra[i])[metric] - _summary(rb[i])[metric] for i in idx]
            lo, hi = np.percentile(boot, [2.5, 97.5])
            diff = _summary(ra)[metric] - _summary(rb)[metric]
            row[metric] = dict(diff=float(diff), ci=(float(lo), float(hi)))
        out[key] = row
    return out


def musique_split(questions: Sequence, seed: int = MUSIQUE_SEED) -> dict[str, list]:
    """The questions split once, seeded: ``dev`` (the first ``MUSIQUE_DEV`` of a permutation)
    and ``test`` (the rest), each in file order."""
    if len(questions) <= MUSIQUE_DEV:
        raise ValueError(f"{len(questions)} questions cannot give a dev set of {MUSIQUE_DEV}")
    order = np.random.default_rng(seed).permutation(len(questions))
    return {
        "dev": [questions[i] for i in sorted(order[:MUSIQUE_DEV])],
        "test": [questions[i] for i in sorted(order[MUSIQUE_DEV:])],
    }


def planners() -> dict:
    out = {"heuristic": HeuristicPlanner(), "two-step chain": TwoStepChain()}
    url, model = os.environ.get("GROUNDING_LLM_BASE_URL"), os.environ.get("GROUNDING_LLM_MODEL")
    if url and model:
        out["llm"] = LLMPlanner(Endpoint(url, model), fallback="flat")
    return out


# --------------------------------------------------------------------------- answering


def pankrag_system(bench, answerer, index, communities, lam, **kw) -> PankRAG:
    texts = dict(zip(bench.kg.entities, bench.kg.node_texts))
    planner = kw.pop("planner", TemplatePlanner(bench.relation_labels, texts))
    kw = dict(k_nodes=K_NODES, k_candidates=K_CANDIDATES, beam=BEAM) | kw
    return PankRAG(planner, answerer, index, config(lam), communities=communities, **kw)


def matched_budget(largest_plan: int) -> dict[str, int]:
    """The one-step pipeline's budget matched to PankRAG's largest plan: its steps' nodes
    (``largest_plan * K_NODES``) and its anchors' candidates (``BEAM * K_CANDIDATES``)."""
    return dict(k_nodes=largest_plan * K_NODES, k_candidates=BEAM * K_CANDIDATES)


def blind_predictor(bench, answerer, pcr, log, per_hop: int | None = None):
    """The chain reader of the grounded QA experiment (fitted on the training questions, its
    weights chosen on validation) with its baseline, label lookup (the predictors by name),
    and the one lambda of every blind system: the grounded QA
    experiment's blind fit on the blind validation outcomes of the one-loop system
    (:class:`BlindQA`), on the first ``per_hop`` validation questions of each hop count
    (``None``: all)."""
    paths, predictors = blind_paths(bench, log)
    predictor = predictors["reader"]
    valid = [q for h in HOPS for q in bench.split("valid", h)[:per_hop]]
    _, lam = fitted(lambda c: BlindQA(answerer, predictor, lambda d: pcr[d], c), bench, valid)
    return paths, predictors, lam


def run_system(name, questions, parts):
    """``[(names, probs)]`` per question, seconds, and the mean budget per question (answerer
    calls, grounding passes, evidence edges). Blind systems get ``blind(q)`` only."""
    bench, answerer, (pcr, soft), index, communities, lam = parts["oracle"]
    predictor, blind_lam = parts["predictor"], parts["blind_lam"]
    lookup = parts["lookup"]
    t = time.perf_counter()
    if name in ("pcr", "soft_pcr"):
        retr = pcr if name == "pcr" else soft
        qa = GroundedQA(answerer, lambda d: retr[d], config(lam))
        outs = qa.answer_batch(questions)
        out = [(o.candidates.entities, o.probabilities("soft")) for o in outs]
        return out, time.perf_counter() - t, mean_budget(outs)
    if name == "pcr_blind":
        qa = BlindQA(answerer, predictor, lambda d: pcr[d], config(blind_lam))
        outs = qa.answer_batch([blind(q) for q in questions])
        answers = [o.answer_probabilities("soft") for o in outs]
        return answers, time.perf_counter() - t, mean_budget(outs)
    texts = dict(zip(bench.kg.entities, bench.kg.node_texts))
    predicted = PredictedPathPlanner(predictor, bench.relation_labels, texts)
    predicted_flat = PredictedPathPlanner(predictor, bench.relation_labels, texts, flat=True)
    looked_up = PredictedPathPlanner(lookup, bench.relation_labels, texts)
    largest = predictor.max_hops  # the longest chain the predictor proposes
    kw = dict(
        # the fewest answerer calls: one per step (the accuracy-calls comparison)
        pankrag_beam1=dict(beam=1),
        no_rerank=dict(rerank=False),
        embedding_agreement=dict(agreement="embedding"),
        no_dag=dict(planner=FlatPlanner()),
        # the same node and candidate budget as PankRAG's largest plan: 3 steps of 20 nodes,
        # up to 5 anchors of 20 candidates per step
        no_dag_matched=dict(planner=FlatPlanner(), **matched_budget(max(HOPS))),
        global_only=dict(mode="global"),
        pankrag_blind=dict(planner=predicted),
        # the fewest answerer calls: one per step (the accuracy-calls comparison)
        pankrag_beam1_blind=dict(planner=predicted, beam=1),
        # the reader's baseline: the plan of label lookup's top-1 path
        pankrag_lookup_blind=dict(planner=looked_up),
        no_rerank_blind=dict(planner=predicted, rerank=False),
        flat_blind=dict(planner=predicted_flat, **matched_budget(largest)),
    ).get(name, {})
    if name in BLIND:
        lam, questions = blind_lam, [blind(q) for q in questions]
    system = pankrag_system(bench, answerer, index, communities, lam, **kw)
    outs = system.answer_batch(questions)
    answers = [(o.final.answers, o.final.probs) for o in outs]
    return answers, time.perf_counter() - t, mean_budget(outs)


def scores(answers, questions) -> dict[str, float]:
    rows = [score_probabilities(n, p, q.answers) for (n, p), q in zip(answers, questions)]
    return {k: float(np.mean([r[k] for r in rows])) for k in ("hit", "f1", "abstained")}


def hits(answers, questions) -> np.ndarray:
    return np.array(
        [score_probabilities(n, p, q.answers)["hit"] for (n, p), q in zip(answers, questions)]
    )


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    """Questions only ``a`` gets right, only ``b`` gets right, the two-sided sign-test p-value
    of that split (exact binomial, ties dropped), and the paired bootstrap 95 % interval of the
    Hits@1 difference ``a - b`` (``resolved``: the interval excludes 0)."""
    wins, losses = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    n = wins + losses
    p = float(min(1.0, 2 * binom.cdf(min(wins, losses), n, 0.5))) if n else 1.0
    return dict(only_pankrag=wins, only_other=losses, sign_test_p=p, **paired_bootstrap(a, b))


def injections(bench, outcomes) -> tuple[list[int], list[dict[str, str]]]:
    """Questions (indices) whose first step has a non-gold answer, and the injection: its
    most probable non-gold answer into step ``q1``."""
    keep, inject = [], []
    for i, o in enumerate(outcomes):
        q = o.question
        first = bench.make_question(q.topic, q.chain[:1], "first")
        gold = set(first.answers) if first is not None else set()
        wrong = [a for a in o.steps["q1"].answers if a not in gold]
        if wrong:
            keep.append(i)
            inject.append({"q1": wrong[0]})
    return keep, inject


def error_propagation(parts, questions) -> dict:
    bench, answerer, _, index, communities, lam = parts["oracle"]
    clean_system = pankrag_system(bench, answerer, index, communities, lam)
    keep, inject = injections(bench, clean_system.answer_batch(questions))
    qs = [questions[i] for i in keep]
    out = dict(n_questions=len(qs), skipped=len(questions) - len(qs))
    for name, kw in (("rerank", {}), ("no_rerank", dict(rerank=False))):
        system = pankrag_system(bench, answerer, index, communities, lam, **kw)
        clean = scores([(o.final.answers, o.final.probs) for o in system.answer_batch(qs)], qs)
        hurt = system.answer_batch(qs, inject)
        injected = scores([(o.final.answers, o.final.probs) for o in hurt], qs)
        out[name] = dict(clean_hits1=clean["hit"], injected_hits1=injected["hit"],
                         damage=clean["hit"] - injected["hit"])  # fmt: skip
    return out


def _bars(ax, systems, kg, title):
    x = np.arange(len(HOPS))
    w = 0.8 / len(systems)
    for j, s in enumerate(systems):
        ax.bar(x + (j - (len(systems) - 1) / 2) * w, [kg[s][str(h)]["hit"] for h in HOPS], w,
               label=LABELS[s])  # fmt: skip
    ax.set(xticks=x, xlabel="hops (CoDEx-M test questions)", ylabel="Hits@1 accuracy", ylim=(0, 1))
    ax.set_xticklabels([f"{h}-hop" for h in HOPS])
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)


def _differences(ax, kg, reference: str, others: list[str]) -> None:
    """Hits@1 of ``reference`` minus each other system's, with paired bootstrap intervals."""
    key = f"against_{reference}"
    diff = [kg[s][key] for s in others]
    y = np.arange(len(others))
    lo = [d["diff"] - d["ci"][0] for d in diff]
    hi = [d["ci"][1] - d["diff"] for d in diff]
    kind = "blind" if reference in BLIND else "oracle (gold chain)"
    ax.barh(y, [d["diff"] for d in diff], xerr=[lo, hi], color="C0",
            label=f"{kind} PankRAG - system")  # fmt: skip
    ax.axvline(0, color="k", lw=0.8)
    ax.set(yticks=y, xlabel="Hits@1 difference (paired bootstrap 95 % interval)",
           ylabel=f"system compared with {kind} PankRAG")  # fmt: skip
    ax.set_yticklabels([("blind: " if s in BLIND else "oracle: ") + LABELS[s] for s in others])
    ax.set_title(f"{kind.capitalize()} PankRAG against other systems, all hops")
    ax.legend()


@styled
def figure(planning: dict, kg: dict, propagation: dict):
    fig, axes = plt.subplots(2, 3, figsize=(19, 10), layout="constrained")
    ax = axes[0, 0]
    keys = ("hop_accuracy", "exact_dag", "edge_f1")
    test = planning["test"]
    names = list(test)
    x = np.arange(len(keys))
    for j, n in enumerate(names):
        ax.bar(x + (j - (len(names) - 1) / 2) * 0.3, [test[n]["all"][k] for k in keys], 0.3,
               label=n)  # fmt: skip
    n_test = test[names[0]]["all"]["n"]
    ax.set(xticks=x, xlabel=f"planning metric (MuSiQue test split, {n_test:,} questions)",
           ylabel="accuracy / F1", ylim=(0, 1))  # fmt: skip
    ax.set_xticklabels(["hop count", "exact DAG", "edge F1"])
    ax.set_title("Planners against MuSiQue's gold decompositions")
    ax.legend()
    _bars(axes[0, 1], ORACLE, kg, "Oracle (gold chain): PankRAG, its ablations, PCR")
    _bars(axes[0, 2], BLIND, kg, "Blind (text and topic only): predicted relation paths")
    _differences(axes[1, 0], kg, "pankrag", [s for s in SYSTEMS if s != "pankrag"])
    _differences(axes[1, 2], kg, "pankrag_blind", list(BLIND[1:]))
    ax = axes[1, 1]
    x = np.arange(2)
    for j, (k, lab) in enumerate(
        (("clean_hits1", "clean"), ("injected_hits1", "wrong answer at q1"))
    ):
        ax.bar(x + (j - 0.5) * 0.35, [propagation[s][k] for s in ("rerank", "no_rerank")], 0.35,
               label=lab)  # fmt: skip
    ax.set(xticks=x, xlabel="system (2-3 hop questions)", ylabel="Hits@1 accuracy", ylim=(0, 1))
    ax.set_xticklabels(["with reranker", "without reranker"])
    ax.set_title(f"Error propagation, oracle (gold chain) ({propagation['n_questions']} questions)")
    ax.legend()
    fig.suptitle("PankRAG: planning on MuSiQue, grounded answering on CoDEx-M", fontsize=13)
    return fig


@float64
def answer_seed(seed: int, full: bool, log, per_hop: int | None = None) -> dict:
    """Every CoDEx-M system, oracle and blind, on the benchmark and answerer of ``seed``: per
    system its Hits@1 table and per-question hits, and the comparisons with PankRAG."""
    bench, answerer, retrievers, _ = build(SETTINGS[full]["codex-m"], seed)
    t = time.perf_counter()
    communities = Communities.build(bench.graph, relation_labels=bench.relation_labels)
    community_seconds = time.perf_counter() - t
    index = retrievers[0][1].index
    valid = bench.split("valid")
    _, lam = fitted(lambda c: GroundedQA(answerer, lambda d: retrievers[0][d], c), bench, valid)
    # quick: a smoke run on fewer questions (--per-hop N: N per hop count)
    per_hop = None if full else (per_hop or QUICK_PER_HOP)
    t = time.perf_counter()
    paths, predictors, blind_lam = blind_predictor(bench, answerer, retrievers[0], log, per_hop)
    predictor = predictors["reader"]
    blind_fit_seconds = time.perf_counter() - t
    log(
        f"codex-m seed {seed} lambda: oracle {lam:.3f}, blind {blind_lam:.3f} ({blind_fit_seconds:.1f} s)"
    )
    parts = dict(
        oracle=(bench, answerer, retrievers, index, communities, lam),
        predictor=predictor,
        lookup=predictors["lookup"],
        blind_lam=blind_lam,
    )
    test = [q for h in HOPS for q in bench.split("test", h)[:per_hop]]
    kg: dict = {}
    per_question = {}
    for s in SYSTEMS:
        answers, seconds, cost = run_system(s, test, parts)
        per_question[s] = hits(answers, test)
        kg[s] = {str(h): scores(*zip(*[(a, q) for a, q in zip(answers, test) if q.hops == h]))
                 for h in HOPS}  # fmt: skip
        kg[s]["all"] = scores(answers, test)
        kg[s]["ms_per_question"] = 1000 * seconds / len(test)
        kg[s]["budget"] = cost  # per question, beside every accuracy that compares systems
        kg[s]["kind"] = "blind" if s in BLIND else "oracle (gold chain)"
        log(
            f"codex-m seed {seed} {s}: "
            + " ".join(f"{h}={kg[s][str(h)]['hit']:.3f}" for h in HOPS)
            + f" all={kg[s]['all']['hit']:.3f} ({seconds:.1f} s)"
        )
    for s in SYSTEMS[1:]:  # PankRAG against each other system, question by question
        kg[s]["against_pankrag"] = paired(per_question["pankrag"], per_question[s])
    for s in BLIND[1:]:  # blind PankRAG against the other blind systems
        kg[s]["against_pankrag_blind"] = paired(per_question["pankrag_blind"], per_question[s])
    for s in ("pankrag", "pankrag_blind"):
        for other, row in kg.items():
            key = "against_pankrag" if s == "pankrag" else "against_pankrag_blind"
            if key in row:
                d = row[key]
                log(
                    f"codex-m seed {seed} {s} - {other}: {d['diff']:+.3f} (95 % {d['ci'][0]:+.3f} to "
                    f"{d['ci'][1]:+.3f}; {d['only_pankrag']} against {d['only_other']}, sign "
                    f"test p = {d['sign_test_p']:.2g})"
                )
    return dict(
        seed=seed, kg=kg, per_question=per_question, parts=parts, test=test, lam=lam,
        blind_lam=blind_lam, paths=paths, predictor=predictor, communities=communities,
        community_seconds=community_seconds,
    )  # fmt: skip


def over_seeds(runs: list[dict]) -> dict:
    """Each system's Hits@1 per seed, and its comparison with PankRAG of the same kind over the
    pooled test questions of every seed: the sign test on the pooled questions, the 95 %
    interval of a two-level bootstrap (seeds, then questions within each seed: each seed
    trains its own answerer and reader) and, with two seeds or more, the seed-level t-interval
    over the seeds' mean differences (``seed_level``, which the docs' verdicts read); also the
    DAG against no DAG at the fewest calls (``pankrag_beam1`` - ``no_dag_matched``)."""
    out: dict = {"seeds": [r["seed"] for r in runs], "systems": {}}
    per_seed = {s: [r["per_question"][s] for r in runs] for s in SYSTEMS}

    def against(ref: str, s: str) -> dict:
        a, b = np.concatenate(per_seed[ref]), np.concatenate(per_seed[s])
        out = paired(a, b) | seed_bootstrap(per_seed[ref], per_seed[s])
        if len(runs) > 1:  # the seeds as the sample: each seed's mean difference
            out["seed_level"] = paired_seed_interval(per_seed[ref], per_seed[s])
        return out

    for s in SYSTEMS:
        row: dict = {"hits1": [float(np.mean(r["per_question"][s])) for r in runs]}
        if s != "pankrag":
            row["against_pankrag"] = against("pankrag", s)
        if s in BLIND[1:]:
            row["against_pankrag_blind"] = against("pankrag_blind", s)
        out["systems"][s] = row
    # the DAG at its fewest answerer calls (one per step) against no DAG at matched nodes and
    # candidates: the closest budgets the two have (oracle and blind)
    out["dag_fewest_calls"] = {
        "oracle": against("pankrag_beam1", "no_dag_matched"),
        "blind": against("pankrag_beam1_blind", "flat_blind"),
    }
    return out


def speed_and_propagation(run: dict) -> dict:
    """PankRAG again with compiled programs but no memoized model proposals (speed), and the
    error-propagation probe on the run's 2- and 3-hop test questions."""
    parts, test, kg = run["parts"], run["test"], run["kg"]
    parts["oracle"][1].cache_clear()  # the answerer's memoized proposals
    _, seconds, _ = run_system("pankrag", test, parts)
    speed = dict(
        ms_per_question_first_run=kg["pankrag"]["ms_per_question"],
        ms_per_question_compiled=1000 * seconds / len(test),
        community_seconds=run["community_seconds"],
    )
    return dict(speed=speed, propagation=error_propagation(parts, [q for q in test if q.hops > 1]))


@float64  # the speed and error-propagation probes too, not only answer_seed
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    split = musique_split(load_musique())
    planning, planned = {}, {}
    for part, qs in split.items():
        planned[part] = {n: planning_rows(p, qs) for n, p in planners().items()}
        planning[part] = {
            n: {key: _summary(r[m]) for key, m in _groups(r).items()}
            for n, r in planned[part].items()
        }
    # FanOutQA's dev set: human-written fan-out graphs, the shape MuSiQue's chains lack
    fanout = {n: planning_rows(p, load_fanoutqa()) for n, p in planners().items()}
    planning["fanoutqa"] = {n: {"all": _summary(r)} for n, r in fanout.items()}
    # the heuristic against the constant baseline on the test split, with intervals
    heuristic_vs_chain = planning_difference(
        planned["test"]["heuristic"], planned["test"]["two-step chain"]
    )
    for part, rows in planning.items():
        for n, row in rows.items():
            log(
                f"{part if part == 'fanoutqa' else 'musique ' + part} {n}: hop={row['all']['hop_accuracy']:.3f} "
                f"edge_f1={row['all']['edge_f1']:.3f}"
            )
    runs, probes = [], {}
    for seed in seeds(args):
        runs.append(answer_seed(seed, args.full, log, args.per_hop))
        if seed == 0:  # with seed 0's programs still compiled
            probes = speed_and_propagation(runs[0])
        programs.release_programs()  # each seed compiles its own programs (see docs/limits.md)
    first = runs[0]
    kg, test = first["kg"], first["test"]
    lam, blind_lam, paths, predictor = (
        first[k] for k in ("lam", "blind_lam", "paths", "predictor")
    )
    communities, community_seconds = first["communities"], first["community_seconds"]
    speed, propagation = probes["speed"], probes["propagation"]
    report = dict(
        full=args.full,
        planning=planning,
        heuristic_vs_two_step_chain=heuristic_vs_chain,
        musique_split=dict(
            seed=MUSIQUE_SEED,
            dev=len(split["dev"]),
            test=len(split["test"]),
            heuristic_rules="written before the split, looking at questions of both parts",
        ),  # fmt: skip
        kg=dict(
            dataset="codex-m",
            lam=lam,
            blind_lam=blind_lam,
            kappa=KAPPA,
            n_test=len(test),
            blind_paths=paths,
            matched_budget=dict(
                oracle=matched_budget(max(HOPS)),
                blind=matched_budget(predictor.max_hops),
            ),
            systems=kg,
        ),
        seeds=over_seeds(runs),
        error_propagation=propagation,
        speed=speed,
        communities=dict(
            n=len(communities.communities), levels=communities.levels, seconds=community_seconds
        ),  # fmt: skip
    )
    paths_out = [write_json(args.out / "pankrag.json", report)]
    metrics = ("hop_accuracy", "exact_dag", "edge_precision", "edge_recall", "edge_f1",
               "gold_fan_out", "fan_out_recall")  # fmt: skip
    rows = [("planning", f"{n} ({part})", k, m, "" if v is None else v)
            for part in planning for n in planning[part] for k in planning[part][n]
            for m in metrics for v in [planning[part][n][k][m]]]  # fmt: skip
    rows += [(f"codex-m {kg[s]['kind']}", s, h, m, kg[s][h][m]) for s in SYSTEMS
             for h in (*map(str, HOPS), "all") for m in ("hit", "f1", "abstained")]  # fmt: skip
    rows += [(f"codex-m {kg[s]['kind']} budget per question", s, "all", m, kg[s]["budget"][m])
             for s in SYSTEMS for m in BUDGET]  # fmt: skip
    paths_out.append(
        write_csv(args.out / "pankrag.csv", ("table", "system", "hops", "metric", "value"), rows)
    )
    paths_out += save_figure(figure(planning, kg, propagation), args.out / "pankrag.png",
                             quick=not args.full)  # fmt: skip
    h = planning["test"]["heuristic"]["all"]
    print(
        f"musique_hop_acc={h['hop_accuracy']:.4f} musique_edge_f1={h['edge_f1']:.4f} "
        f"pankrag_hits1={kg['pankrag']['all']['hit']:.4f} "
        f"flat_hits1={kg['no_dag']['all']['hit']:.4f} "
        f"pankrag_blind_hits1={kg['pankrag_blind']['all']['hit']:.4f} "
        f"flat_blind_hits1={kg['flat_blind']['all']['hit']:.4f}"
    )
    return paths_out


if __name__ == "__main__":
    main()
