"""PankRAG on real data: question planning against MuSiQue's human decompositions, and grounded
multi-hop answering on CoDEx-M with its ablations and an error-injection probe.

Planning: the offline heuristic planner on all 3,000 shipped MuSiQue questions, scored
against the gold sub-question DAGs (hop-count accuracy, exact DAG match, dependency-edge
precision / recall / F1; steps matched by position), beside the constant baseline "always a
two-step chain" (MuSiQue is 73 % two-hop) and, when ``GROUNDING_LLM_BASE_URL`` and
``GROUNDING_LLM_MODEL`` name an OpenAI-compatible endpoint, the LLM planner.

Answering: the templated CoDEx-M benchmark and the TransE answerer of the grounded QA
experiment (same settings, trained on the evidence only); lambda fitted on validation
questions for the one-loop path-constrained system and used by every system (kappa = 1).
Systems: PankRAG (templated plan, local retrieval, dependency-aware reranking with graph
agreement), without the reranker, with embedding agreement, without the DAG (the whole
question as one step; once with PankRAG's per-step budget, 20 nodes and 20 candidates, and
once with the budget of its largest plan, 60 nodes and 100 candidates), global (community) retrieval only, and the one-loop PCR and soft-PCR
systems. Local-only equals PankRAG on this benchmark: every templated step is specific. Hits@1
is the top answer of the grounded posterior; each system is compared with PankRAG question by
question (sign test). Systems after the first reuse the answerer's memoized proposals, so
their milliseconds per question are not comparable with the first's: speed is PankRAG's first
run and a second run with compiled programs and no memoized proposals. Error propagation: on 2- and 3-hop test
questions the first step's answers get a wrong entity (its most probable non-gold answer)
holding half of the probability; final Hits@1 with and without the reranker.

Quick mode: the first 15 test questions of each hop count (a smoke run).

Final line: ``musique_hop_acc=<x> musique_edge_f1=<y> pankrag_hits1=<z> flat_hits1=<w>``
(heuristic planner on MuSiQue; CoDEx-M test questions, all hops, PankRAG and no-DAG).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.stats import binom

from experiments._io import float64, parse_args, plt, save_figure, styled, write_csv, write_json
from experiments.grounded_qa import KAPPA, SETTINGS, build, fit_lambda
from grounding.datasets import load_musique
from grounding.llm import Endpoint
from grounding.plans import (
    FlatPlanner,
    HeuristicPlanner,
    LLMPlanner,
    Plan,
    TemplatePlanner,
    plan_from_decomposition,
)
from grounding.qa import GroundedQA, PankRAG, score_probabilities
from grounding.retrieval import Communities

SYSTEMS = (
    "pankrag",
    "no_rerank",
    "embedding_agreement",
    "no_dag",
    "no_dag_matched",
    "global_only",
    "pcr",
    "soft_pcr",
)
HOPS = (1, 2, 3)
QUICK_PER_HOP = 15


# --------------------------------------------------------------------------- planning


class TwoStepChain:
    """The constant baseline: every question is a two-step chain."""

    name = "two-step chain"

    def plan(self, question: str) -> Plan:
        return plan_from_decomposition(question, ["(first)?", "(second, about #1)?"])


def _edges(plan: Plan) -> set[tuple[int, int]]:
    ix = {s.id: i for i, s in enumerate(plan.steps)}
    return {(ix[a], ix[b]) for a, b in plan.edges()}


def planning_scores(planner, questions) -> dict[str, dict[str, float]]:
    """Per gold hop count and overall: hop accuracy, exact DAG match, edge P / R / F1."""
    by: dict[str, list] = {}
    for q in questions:
        gold = plan_from_decomposition(q.text, q.decomposition, strict=False)
        got = planner.plan(q.text)
        g, e = _edges(gold), _edges(got)
        row = (len(got.steps) == q.hops, len(got.steps) == q.hops and g == e, g & e, e - g, g - e)
        for key in (str(q.hops), "all"):
            by.setdefault(key, []).append(row)
    out = {}
    for key, rows in by.items():
        tp = sum(len(r[2]) for r in rows)
        fp = sum(len(r[3]) for r in rows)
        fn = sum(len(r[4]) for r in rows)
        p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        out[key] = dict(
            n=len(rows),
            hop_accuracy=float(np.mean([r[0] for r in rows])),
            exact_dag=float(np.mean([r[1] for r in rows])),
            edge_precision=p,
            edge_recall=r,
            edge_f1=2 * p * r / (p + r) if p + r else 0.0,
        )
    return out


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
    return PankRAG(planner, answerer, index, communities=communities, lam=lam, kappa=KAPPA, **kw)


def run_system(name, questions, parts):
    """``[(names, probs)]`` per question, and seconds."""
    bench, answerer, (pcr, soft), index, communities, lam = parts
    t = time.perf_counter()
    if name in ("pcr", "soft_pcr"):
        retr = pcr if name == "pcr" else soft
        qa = GroundedQA(answerer, lambda q: retr[q.hops], lam=lam, kappa=KAPPA)
        out = [(o.candidates.entities, o.probabilities("soft")) for o in qa.answer_batch(questions)]
        return out, time.perf_counter() - t
    kw = dict(
        no_rerank=dict(rerank=False),
        embedding_agreement=dict(agreement="embedding"),
        no_dag=dict(planner=FlatPlanner()),
        # the same node and candidate budget as PankRAG's largest plan: 3 steps of 20 nodes,
        # up to 5 anchors of 20 candidates per step
        no_dag_matched=dict(planner=FlatPlanner(), k_nodes=60, k_candidates=100),
        global_only=dict(mode="global"),
    ).get(name, {})
    system = pankrag_system(bench, answerer, index, communities, lam, **kw)
    outs = system.answer_batch(questions)
    return [(o.final.answers, o.final.probs) for o in outs], time.perf_counter() - t


def scores(answers, questions) -> dict[str, float]:
    rows = [score_probabilities(n, p, q.answers) for (n, p), q in zip(answers, questions)]
    return {k: float(np.mean([r[k] for r in rows])) for k in ("hit", "f1", "abstained")}


def hits(answers, questions) -> np.ndarray:
    return np.array(
        [score_probabilities(n, p, q.answers)["hit"] for (n, p), q in zip(answers, questions)]
    )


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    """Questions only ``a`` gets right, only ``b`` gets right, and the two-sided sign-test
    p-value of that split (exact binomial, ties dropped)."""
    wins, losses = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    n = wins + losses
    p = float(min(1.0, 2 * binom.cdf(min(wins, losses), n, 0.5))) if n else 1.0
    return dict(only_pankrag=wins, only_other=losses, sign_test_p=p)


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
    bench, answerer, _, index, communities, lam = parts
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


@styled
def figure(planning: dict, kg: dict, propagation: dict):
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.2), layout="constrained")
    ax = axes[0]
    keys = ("hop_accuracy", "exact_dag", "edge_f1")
    names = list(planning)
    x = np.arange(len(keys))
    for j, n in enumerate(names):
        ax.bar(x + (j - (len(names) - 1) / 2) * 0.3, [planning[n]["all"][k] for k in keys], 0.3,
               label=n)  # fmt: skip
    ax.set(xticks=x, xlabel="planning metric (3,000 MuSiQue questions)", ylabel="accuracy / F1",
           ylim=(0, 1))  # fmt: skip
    ax.set_xticklabels(["hop count", "exact DAG", "edge F1"])
    ax.set_title("Planners against MuSiQue's gold decompositions")
    ax.legend()
    ax = axes[1]
    x = np.arange(len(HOPS))
    w = 0.8 / len(SYSTEMS)
    for j, s in enumerate(SYSTEMS):
        ax.bar(x + (j - (len(SYSTEMS) - 1) / 2) * w, [kg[s][str(h)]["hit"] for h in HOPS], w,
               label=s.replace("_", " "))  # fmt: skip
    ax.set(xticks=x, xlabel="hops (CoDEx-M test questions)", ylabel="Hits@1 accuracy", ylim=(0, 1))
    ax.set_xticklabels([f"{h}-hop" for h in HOPS])
    ax.set_title("Grounded answering: PankRAG, its ablations, PCR")
    ax.legend(fontsize=8, ncol=2)
    ax = axes[2]
    x = np.arange(2)
    for j, (k, lab) in enumerate(
        (("clean_hits1", "clean"), ("injected_hits1", "wrong answer at q1"))
    ):
        ax.bar(x + (j - 0.5) * 0.35, [propagation[s][k] for s in ("rerank", "no_rerank")], 0.35,
               label=lab)  # fmt: skip
    ax.set(xticks=x, xlabel="system (2-3 hop questions)", ylabel="Hits@1 accuracy", ylim=(0, 1))
    ax.set_xticklabels(["with reranker", "without reranker"])
    ax.set_title(f"Error propagation ({propagation['n_questions']} questions)")
    ax.legend()
    fig.suptitle("PankRAG: planning on MuSiQue, grounded answering on CoDEx-M", fontsize=13)
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    musique = load_musique()
    planning = {n: planning_scores(p, musique) for n, p in planners().items()}
    for n, row in planning.items():
        log(
            f"musique {n}: hop={row['all']['hop_accuracy']:.3f} edge_f1={row['all']['edge_f1']:.3f}"
        )
    bench, answerer, retrievers, _ = build(SETTINGS[args.full]["codex-m"])
    t = time.perf_counter()
    communities = Communities.build(bench.graph, relation_labels=bench.relation_labels)
    community_seconds = time.perf_counter() - t
    index = retrievers[0][1].index
    valid = bench.split("valid")
    lam = fit_lambda(
        GroundedQA(answerer, lambda q: retrievers[0][q.hops], lam=1.0, kappa=KAPPA).answer_batch(
            valid
        )
    )
    parts = (bench, answerer, retrievers, index, communities, lam)
    per_hop = None if args.full else QUICK_PER_HOP  # quick: a smoke run on fewer questions
    test = [q for h in HOPS for q in bench.split("test", h)[:per_hop]]
    kg: dict = {}
    per_question = {}
    for s in SYSTEMS:
        answers, seconds = run_system(s, test, parts)
        per_question[s] = hits(answers, test)
        kg[s] = {str(h): scores(*zip(*[(a, q) for a, q in zip(answers, test) if q.hops == h]))
                 for h in HOPS}  # fmt: skip
        kg[s]["all"] = scores(answers, test)
        kg[s]["ms_per_question"] = 1000 * seconds / len(test)
        log(
            f"codex-m {s}: "
            + " ".join(f"{h}={kg[s][str(h)]['hit']:.3f}" for h in HOPS)
            + f" ({seconds:.1f} s)"
        )
    for s in SYSTEMS[1:]:  # PankRAG against each other system, question by question
        kg[s]["against_pankrag"] = paired(per_question["pankrag"], per_question[s])
    # speed: PankRAG again with compiled programs but no memoized model proposals
    answerer.cache_clear()
    _, seconds = run_system("pankrag", test, parts)
    speed = dict(
        ms_per_question_first_run=kg["pankrag"]["ms_per_question"],
        ms_per_question_compiled=1000 * seconds / len(test),
        community_seconds=community_seconds,
    )
    propagation = error_propagation(parts, [q for q in test if q.hops > 1])
    report = dict(
        full=args.full,
        planning=planning,
        kg=dict(dataset="codex-m", lam=lam, kappa=KAPPA, n_test=len(test), systems=kg),
        error_propagation=propagation,
        speed=speed,
        communities=dict(
            n=len(communities.communities), levels=communities.levels, seconds=community_seconds
        ),  # fmt: skip
    )
    paths = [write_json(args.out / "pankrag.json", report)]
    rows = [("planning", n, k, m, planning[n][k][m]) for n in planning for k in planning[n]
            for m in ("hop_accuracy", "exact_dag", "edge_precision", "edge_recall", "edge_f1")]  # fmt: skip
    rows += [("codex-m", s, h, m, kg[s][h][m]) for s in SYSTEMS
             for h in (*map(str, HOPS), "all") for m in ("hit", "f1", "abstained")]  # fmt: skip
    paths.append(
        write_csv(args.out / "pankrag.csv", ("table", "system", "hops", "metric", "value"), rows)
    )
    paths += save_figure(figure(planning, kg, propagation), args.out / "pankrag.png",
                         quick=not args.full)  # fmt: skip
    h = planning["heuristic"]["all"]
    print(
        f"musique_hop_acc={h['hop_accuracy']:.4f} musique_edge_f1={h['edge_f1']:.4f} "
        f"pankrag_hits1={kg['pankrag']['all']['hit']:.4f} flat_hits1={kg['no_dag']['all']['hit']:.4f}"
    )
    return paths


if __name__ == "__main__":
    main()
