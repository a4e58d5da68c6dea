"""Grounded multi-hop question answering on real knowledge graphs, the paper's loop end to end.

For each dataset (CoDEx-M and UMLS; CoDEx-S with its hard negatives as counter-evidence): the
templated benchmark of :func:`grounding.datasets.kgqa_benchmark`; a TransE model with
reciprocal relations, trained 1-vs-all on the evidence (train split) only, plays the LLM
(:class:`grounding.prior.KGEAnswerer` composes its translations along the question's chain;
temperature fitted on validation questions; trained in 32-bit floats; quick mode trains for a
few epochs only); path-constrained retrieval from the topic entity (depth = the question's hop
count) builds the evidence state; :func:`grounding.ground` re-weights the
prior. ``lambda`` is fitted on validation questions by gradient (``kappa = 1``). Reports, per
dataset and hop count, Hits@1 and answer-set F1 of the prior, hard grounding (Eq. (6)) and
soft grounding (Eq. (7)); what happens to true answers the evidence does not state; selective
prediction (risk-coverage, AURC); calibration (ECE); coverage of the Thm. 3 certificate; and
one 2-hop test question through the loop (posterior bars with evidence statuses, the
supporting walks of the grounded answer with their ``nu*`` weights, the decision and the
certificate, under ``example`` in the JSON).

Question texts: each hop worded by one of six wordings and the question by one of five frames,
the test questions' wordings disjoint from those of the training and validation questions
(:func:`grounding.datasets.kgqa_benchmark`'s ``wording="held-out"``), so a system must read
wordings it never saw.

Blind relation paths (``blind_paths`` in the JSON, ``grounded_qa_paths.csv``): four predictors
fitted on the training questions see each test question's text and topic only, their choices
made on validation: the chain reader (:class:`grounding.plans.ChainReader`, the blind
systems' predictor), label lookup (:class:`grounding.plans.LabelLookup`, its baseline), chains
composed relation by relation over the graph (:class:`grounding.plans.ComposedChainPredictor`,
the former blind predictor) and the training chains ranked
(:class:`grounding.plans.RelationChainPredictor`, whose ceiling is the share of test chains
seen in training); top-1/top-3 path accuracy per hop with Wilson intervals. The blind loop
(:class:`grounding.qa.BlindQA`): the top 3 predicted paths become claims, each candidate
grounded on its own claim, lambda fitted on blind validation outcomes by the same gradient fit;
per hop its prior, hard and soft Hits@1 and AURC, hard and soft against the blind prior and
against the oracle loop (gold chain), paired. Beside it, each with its own lambda, the same
loop with the label lookup's chains and with the chains the template parser of the training
wordings reads off the texts (:class:`grounding.plans.TemplateChainParser`), both baselines,
and with the composed predictor's, each against the reader's loop, paired. Every row carries
its budget per question (answerer calls, grounding passes, evidence edges). Validation
answers (for T and lambda) are read off the train and valid triples only
(:meth:`grounding.datasets.KGQABenchmark.fitting_answers`).

Seeds: ``--seeds N`` repeats every dataset on the benchmark and answerer of seeds 0..N-1
(default one quick, three full); the tables and figure are seed 0's, and ``seeds`` in the JSON
holds, over the pooled test questions of all seeds, the blind prior / hard / soft Hits@1 and
the intervals of soft - prior, hard - prior, blind - oracle and the reader's loop against each
other blind system, each a two-level bootstrap (seeds, then questions within each seed,
resampled) and, with two seeds or more, the seed-level t-interval over the seeds' mean
differences (``seed_level``), which the docs' verdicts read.

Final line: ``dataset=<name> hops=2 seed=0 grounded_hits1=<x> prior_hits1=<y> hard_hits1=<z>
aurc=<w> oracle_hits1=<o> blind_hits1=<b> path_acc=<p> path_acc_lookup=<l>
path_acc_composed=<c> path_ceiling=<e> path_acc_training_chains=<t> blind_prior_hits1=<bp>
blind_soft_hits1=<bs> blind_hard_hits1=<bh> lookup_hits1=<lh> parser_hits1=<ph>`` (CoDEx-M, 2
hops, seed 0; soft grounding with the gold chain; the top-1 path accuracy of the reader, label
lookup and composed predictors, the training-chain ceiling and that predictor's top-1; the
blind loop's prior, soft and hard Hits@1; the label lookup's and template parser's loops,
soft).
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

import numpy as np

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
    KAPPA,
    METHODS,
    Setting,
    blind_paths,
    build,
    config,
    counter_evidence,
    evaluate,
    fitted,
    mean_budget,
    score,
    settings,
)
from experiments._stats import paired_bootstrap, paired_seed_interval, seed_bootstrap
from grounding import (
    EvidenceStatus,
    GroundingResult,
    TypedGraph,
    gibbs_log_posterior,
    ground,
    programs,
)
from grounding import plot as gplot
from grounding.datasets import codex_labels
from grounding.graph import INVERSE_SUFFIX
from grounding.plans import TemplateChainParser
from grounding.qa import BlindQA, GroundedQA, grounding_problem, risk_coverage
from grounding.qa.calibration import gold_arrays
from grounding.query import blind
from grounding.solver.compact import compact_evidence

LAMBDA_GRID = np.logspace(-2, 2, 33)


def lambda_sweep(outcomes) -> list[float]:
    """Soft Hits@1 over :data:`LAMBDA_GRID` (posteriors from the energies ``ground`` gave)."""
    a = gold_arrays((o.result, o.question.answers) for o in outcomes if o.result is not None)
    hits = []
    for lam in LAMBDA_GRID:
        post = np.asarray(gibbs_log_posterior(a["log_prior"], a["energy"], lam))
        top = post.argmax(axis=1)
        hits.append(float(a["gold"][np.arange(len(top)), top].sum() / len(outcomes)))
    return hits


Example = tuple[TypedGraph, GroundingResult, list[str]]


def worked_example(qa: GroundedQA, outcomes) -> Example:
    """One test question grounded again with its three best supporting walks
    (``n_paths=3``), on the compacted evidence the loop grounded it on, with its candidate
    answer entities: the first question whose prior's top candidate is wrong and whose
    grounded top is right, else the first the grounded posterior gets right, else the first
    answered; among each, questions whose grounded top has a walk in the evidence come
    first."""
    live = [o for o in outcomes if o.result is not None]
    live.sort(key=lambda o: not np.isfinite(float(o.result.raw_energy[int(o.result.best)])))
    flipped = [o for o in live if score(o, "soft")["hit"] > score(o, "prior")["hit"]]
    o = (flipped or [o for o in live if score(o, "soft")["hit"]] or live)[0]
    problem = grounding_problem(o.question, o.candidates)
    [state] = compact_evidence([o.evidence], [problem.entities()])
    result = ground(problem, state, qa.config, n_paths=3)
    return state.graph, result, list(o.candidates.entities)


#: The blind systems, each a :class:`BlindQA` with its own chain predictor and its own lambda:
#: the chain reader (the blind loop's row) and, beside it, label lookup and the template
#: parser (baselines) and the composed predictor (the former blind predictor).
BLIND_SYSTEMS = {
    "reader": "chain reader",
    "lookup": "label lookup (baseline)",
    "parser": "template parser (baseline)",
    "composed": "composed chains (former predictor)",
}


#: The path predictors of ``grounded_qa_paths.csv`` (:func:`experiments._setup.blind_paths`).
PATH_PREDICTORS = {
    "reader": "chain reader",
    "lookup": "label lookup (baseline)",
    "composed": "composed chains (former predictor)",
    "training_chains": "training chains",
}


def blind_loop(bench, answerer, pcr, predictors: dict, oracle_hits: dict, log) -> dict:
    """The loop on blind questions (:class:`~grounding.qa.BlindQA`: predicted relation chains,
    each candidate grounded on its own claim), one per chain predictor of
    :data:`BLIND_SYSTEMS`, each with its lambda fitted on its blind validation outcomes. Per
    hop: the reader's Hits@1 per method, hard and soft grounding against its blind prior and
    against the oracle loop (gold chain), paired; each other system's Hits@1, its soft
    grounding against the oracle's and against the reader's, paired; budgets."""
    texts = dict(zip(bench.kg.entities, bench.kg.node_texts))
    chains = dict(predictors, parser=TemplateChainParser(bench.relation_labels, texts))
    systems = {
        name: fitted(lambda c, p=chains[name]: BlindQA(answerer, p, lambda d: pcr[d], c), bench)
        for name in BLIND_SYSTEMS
    }
    out: dict = dict(
        lam=systems["reader"][1], lams={n: lam for n, (_, lam) in systems.items()}, per_hop={}
    )
    for h in (1, 2, 3):
        test = bench.split("test", h)
        shown = [blind(q) for q in test]
        outcomes = {n: qa.answer_batch(shown) for n, (qa, _) in systems.items()}
        scored = {
            n: {m: [score(o, m, q.answers) for o, q in zip(outs, test)] for m in METHODS}
            for n, outs in outcomes.items()
        }
        hits = {
            n: {m: np.array([sc["hit"] for sc in x[m]]) for m in METHODS} for n, x in scored.items()
        }
        main = hits["reader"]
        conf = {m: np.array([sc["confidence"] for sc in scored["reader"][m]]) for m in METHODS}
        row: dict = {
            m: dict(
                hits1=float(main[m].mean()),
                aurc=risk_coverage(conf[m], main[m])["aurc"],
                vs_oracle=paired_bootstrap(main[m], oracle_hits[h][m]),
                vs_prior=paired_bootstrap(main[m], main["prior"]),
                hit=main[m].tolist(),  # per question, for the pooled seeds' intervals
            )
            for m in METHODS
        }
        row["soft_hit"] = row["soft"]["hit"]
        for n in BLIND_SYSTEMS:
            if n != "reader":
                row[n] = {
                    m: dict(
                        hits1=float(hits[n][m].mean()),
                        vs_oracle=paired_bootstrap(hits[n][m], oracle_hits[h][m]),
                        vs_reader=paired_bootstrap(hits[n][m], main[m]),
                        hit=hits[n][m].tolist(),
                    )
                    for m in METHODS
                }
                row[n]["budget"] = mean_budget(outcomes[n])
        row["no_answer"] = float(np.mean([o.result is None for o in outcomes["reader"]]))
        row["budget"] = mean_budget(outcomes["reader"])
        out["per_hop"][h] = row
        log(
            f"{bench.name} {h}-hop blind (reader): "
            + " ".join(f"{m}={row[m]['hits1']:.3f}" for m in METHODS)
            + " (soft - prior {:+.3f}, 95 % {:+.3f} to {:+.3f}; ".format(
                row["soft"]["vs_prior"]["diff"], *row["soft"]["vs_prior"]["ci"]
            )
            + "soft vs oracle {:+.3f}, 95 % {:+.3f} to {:+.3f}); soft ".format(
                row["soft"]["vs_oracle"]["diff"], *row["soft"]["vs_oracle"]["ci"]
            )
            + " ".join(f"{n}={row[n]['soft']['hits1']:.3f}" for n in BLIND_SYSTEMS if n != "reader")
        )
    return out


def run_setting(setting: Setting, log, seed: int = 0) -> tuple[dict, Example]:
    """The setting's report on the benchmark and answerer of ``seed``, and its worked 2-hop
    example (evidence graph, result)."""
    t0 = time.perf_counter()
    log(f"{setting.name} (seed {seed}): building the benchmark and training the answerer ...")
    bench, answerer, (pcr, soft), fit = build(setting, seed)
    log(
        f"{setting.name}: {len(bench.questions)} questions, answerer trained "
        f"({fit.epochs_run} epochs, {time.perf_counter() - t0:.0f} s); fitting lambda ..."
    )
    negative = counter_evidence(bench) if setting.negatives else frozenset()
    qa, lam = fitted(lambda c: GroundedQA(answerer, lambda d: pcr[d], c), bench)
    report: dict = dict(
        dataset=setting.name,
        seed=seed,
        statistics=bench.statistics(),
        kge=dict(valid_mrr=fit.best_valid_mrr, epochs=fit.epochs_run),
        temperature=answerer.temperature,
        lam=lam,
        kappa=KAPPA,
        per_hop={},
    )
    report["blind_paths"], predictors = blind_paths(bench, log)
    oracle_hits: dict = {}
    for h in (1, 2, 3):
        test = bench.split("test", h)
        t = time.perf_counter()
        outcomes = qa.answer_batch(test)
        seconds = time.perf_counter() - t
        row = evaluate(outcomes, lam) | dict(questions_per_second=len(test) / seconds)
        row["budget"] = mean_budget(outcomes)
        row["lambda_sweep"] = lambda_sweep(outcomes)
        scores = {m: [score(o, m) for o in outcomes] for m in METHODS}
        oracle_hits[h] = {m: np.array([sc["hit"] for sc in scores[m]]) for m in METHODS}
        for m in ("hard", "soft"):  # each grounding rule against the prior, question by question
            row[f"{m}_vs_prior"] = paired_bootstrap(oracle_hits[h][m], oracle_hits[h]["prior"])
        row["selective"] = {
            m: {k: [sc[k] for sc in scores[m]] for k in ("confidence", "hit")} for m in METHODS
        }
        row["risk_coverage"] = {
            m: risk_coverage(np.array(sel["confidence"]), np.array(sel["hit"]))["risk"].tolist()
            for m, sel in row["selective"].items()
        }
        if h == 2:
            example = worked_example(qa, outcomes)
            report["example"] = example[1].to_dict()
        if setting.name == "codex-m":  # the same loop with soft PCR as the retriever
            qa_soft = GroundedQA(answerer, lambda d: soft[d], config(lam))
            via_soft = evaluate(qa_soft.answer_batch(test), lam)
            row["soft_pcr_retriever"] = {m: via_soft[m]["hits1"] for m in METHODS}
        report["per_hop"][h] = row
        log(
            f"{setting.name} {h}-hop: "
            + " ".join(f"{m}={row[m]['hits1']:.3f}" for m in METHODS)
            + f" ({time.perf_counter() - t0:.0f} s)"
        )
    report["blind"] = blind_loop(bench, answerer, pcr, predictors, oracle_hits, log)
    log(f"{setting.name}: blind loop done ({time.perf_counter() - t0:.0f} s)")
    if negative:
        qs = negative_questions(bench, setting.questions_per_hop)
        qa_neg = GroundedQA(answerer, lambda d: pcr[d], config(lam), negative=negative)
        report["counter_evidence"] = contradiction_effect(
            qa.answer_batch(qs), qa_neg.answer_batch(qs), lam
        ) | dict(n_questions=len(qs))
    report["seconds"] = time.perf_counter() - t0
    return report, example


def over_seeds(reports: list[dict], log) -> dict:
    """Per dataset and hop, over every benchmark seed run (each seed draws its questions and
    trains its answerer and readers): each seed's oracle and blind soft Hits@1, the pooled blind
    Hits@1 per method and system, and the differences the docs read (soft - prior,
    hard - prior, blind - oracle, reader - each other blind system, soft) each with two 95 %
    intervals: a two-level bootstrap (seeds, then questions within each seed, resampled) and,
    with two seeds or more, the seed-level t-interval over the seeds' mean differences."""
    out: dict = {}
    for name in dict.fromkeys(r["dataset"] for r in reports):
        runs = [r for r in reports if r["dataset"] == name]
        out[name] = {}
        for h in (1, 2, 3):
            rows = [r["blind"]["per_hop"][h] for r in runs]
            oracle = [np.asarray(r["per_hop"][h]["selective"]["soft"]["hit"], float) for r in runs]
            by_method = {  # the reader's blind loop, one array per seed
                m: [np.asarray(row[m]["hit"], float) for row in rows] for m in METHODS
            }
            other = {
                n: [np.asarray(row[n]["soft"]["hit"], float) for row in rows]
                for n in BLIND_SYSTEMS
                if n != "reader"
            }
            pairs = {
                "soft_minus_prior": (by_method["soft"], by_method["prior"]),
                "hard_minus_prior": (by_method["hard"], by_method["prior"]),
                "blind_minus_oracle": (by_method["soft"], oracle),
                **{f"reader_minus_{n}": (by_method["soft"], x) for n, x in other.items()},
            }
            cell = out[name][h] = dict(
                seeds=[r["seed"] for r in runs],
                oracle_hits1=[float(x.mean()) for x in oracle],
                blind_hits1=[float(x.mean()) for x in by_method["soft"]],
                blind={m: float(np.concatenate(by_method[m]).mean()) for m in METHODS},
                blind_aurc={m: float(np.mean([row[m]["aurc"] for row in rows])) for m in METHODS},
                systems={n: float(np.concatenate(x).mean()) for n, x in other.items()},
                parser_soft=float(np.concatenate(other["parser"]).mean()),
            )
            # each predictor's top-1 path hits per seed; the reader's against label lookup's,
            # question by question
            paths = {
                k: [np.asarray(r["blind_paths"][k]["per_hop"][h]["hit"], float) for r in runs]
                for k in PATH_PREDICTORS
            }
            cell["paths_top1"] = {k: float(np.concatenate(x).mean()) for k, x in paths.items()}
            pairs["path_reader_minus_lookup"] = (paths["reader"], paths["lookup"])
            for key, (a, b) in pairs.items():
                cell[key] = seed_bootstrap(a, b)
                if len(runs) > 1:
                    cell[key]["seed_level"] = paired_seed_interval(a, b)
            for key in ("soft_minus_prior", "hard_minus_prior", "blind_minus_oracle"):
                c = cell[key]
                seed_level = c.get("seed_level")
                log(
                    f"{name} {h}-hop over seeds {cell['seeds']}: blind {key} "
                    f"{c['diff']:+.3f} (95 % {c['ci'][0]:+.3f} to {c['ci'][1]:+.3f}, n={c['n']}, "
                    f"{c.get('seeds', 1)} seeds"
                    + (
                        f"; seed level {seed_level['ci'][0]:+.3f} to {seed_level['ci'][1]:+.3f})"
                        if seed_level
                        else ")"
                    )
                )
    return out


def _interval(row: dict, key: str | None) -> tuple:
    """``(diff, low, high)`` of a row's paired interval ``key`` (empty cells without one)."""
    if key is None:
        return ("", "", "")
    return (row[key]["diff"], *row[key]["ci"])


def negative_questions(bench, limit: int) -> list:
    """One question ``(h, r, ?)`` per distinct ``(h, r)`` of CoDEx-S's test hard negatives
    ``(h, r, t')`` (seeded subset of ``limit``): each has a plausible false answer ``t'`` that
    the counter-evidence names."""
    kg = bench.kg
    pairs = list(dict.fromkeys((int(h), int(r)) for h, r, _ in kg.negative_triples("test")))
    keep = np.random.default_rng(0).permutation(len(pairs))[:limit]
    out = []
    for j in sorted(keep):
        h, r = pairs[j]
        q = bench.make_question(kg.entities[h], (kg.relations[r],), f"{kg.name}:negative:{j}")
        if q is not None:
            out.append(q)
    return out


def contradiction_effect(plain, with_neg, lam: float) -> dict:
    """How counter-evidence (Axiom 4: contradicted claims get the contradiction energy) moves
    the answers: candidates contradicted, answers changed, Hits@1 before and after."""
    contradicted = changed = false_top_before = false_top_after = 0
    for a, b in zip(plain, with_neg):
        if a.result is None:
            continue
        status = np.asarray(b.result.status)
        contradicted += int(np.sum(status == EvidenceStatus.CONTRADICTED))
        changed += int(a.result.best) != int(b.result.best)
        false_top_before += int(status[int(a.result.best)] == EvidenceStatus.CONTRADICTED)
        false_top_after += int(status[int(b.result.best)] == EvidenceStatus.CONTRADICTED)
    before, after = evaluate(plain, lam), evaluate(with_neg, lam)
    return dict(
        contradicted_candidates=contradicted,
        answers_changed=changed,
        known_false_top_without=false_top_before,
        known_false_top_with=false_top_after,
        **{f"{m}_hits1_without": before[m]["hits1"] for m in METHODS},
        **{f"{m}_hits1_with": after[m]["hits1"] for m in METHODS},
    )


#: How the figure names the datasets and the three posteriors.
DATASET_NAMES = {"codex-m": "CoDEx-M", "codex-s": "CoDEx-S", "umls": "UMLS"}
METHOD_NAMES = {"prior": "prior (answerer alone)", "hard": "hard grounding (Eq. 6)",
                "soft": "soft grounding (Eq. 7)"}  # fmt: skip


def _readable(dataset: str, graph: TypedGraph) -> tuple[dict, dict]:
    """Display texts of the example graph's entities and (forward) relations: the dataset's
    node texts and relation names with ``_`` as a space; on CoDEx, its English relation labels
    and, for an entity CoDEx labels (those that are also types), ``"<label> (<id>)"``."""
    nodes = dict(zip(graph.entities, graph.node_texts))
    rels = sorted({r.removesuffix(INVERSE_SUFFIX) for r in graph.relations})
    names = dict(zip(rels, (r.replace("_", " ") for r in rels)))
    if dataset.startswith("codex"):
        names.update(zip(rels, codex_labels((), rels)[1]))
        own = json.loads((files("grounding.datasets") / "data/codex/types_en.json").read_text())
        nodes.update({e: f"{own[e]['label']} ({e})" for e in graph.entities if e in own})
    return nodes, names


@styled
def figure(reports: list[dict], example: Example):
    """Top: risk-coverage (main dataset, 2 hops), Hits@1 against lambda, Hits@1 per dataset
    and hop. Bottom: one 2-hop test question through the loop, its posterior bars with the
    candidates' evidence statuses and the supporting walks of its grounded answer (entities
    and relations by their labels where the dataset has them)."""
    main = reports[0]
    data = DATASET_NAMES.get(main["dataset"], main["dataset"])
    fig, axes = plt.subplot_mosaic(
        [["rc", "lam", "hops", "hops"], ["post", "post", "walks", "walks"]],
        figsize=(17, 11),
        layout="constrained",
    )
    ax = axes["rc"]
    two = main["per_hop"][2]
    for m in METHODS:
        sel = two["selective"][m]
        gplot.risk_coverage(sel["confidence"], sel["hit"], ax,
                            label=f"{METHOD_NAMES[m]}, AURC {two[m]['aurc']:.2f}")  # fmt: skip
    ax.set(ylabel="selective risk (1 - Hits@1)", ylim=(0, 1))
    ax.set_title(f"Risk-coverage, {data} 2-hop questions")
    ax = axes["lam"]
    for h in (1, 2, 3):
        ax.semilogx(LAMBDA_GRID, main["per_hop"][h]["lambda_sweep"], label=f"{h}-hop")
    ax.axvline(main["lam"], color="k", ls=":", label=f"fitted $\\lambda$ = {main['lam']:.2f}")
    ax.set(
        xlabel=r"grounding strength $\lambda$ ($\kappa$ = 1)",
        ylabel="soft grounding Hits@1",
        ylim=(0, 1),
    )
    ax.set_title(f"Hits@1 against $\\lambda$, {data}")
    ax.legend()
    ax = axes["hops"]
    labels = [f"{DATASET_NAMES.get(r['dataset'], r['dataset'])}\n{h}-hop"
              for r in reports for h in (1, 2, 3)]  # fmt: skip
    x = np.arange(len(labels))
    for j, m in enumerate(METHODS):
        vals = [r["per_hop"][h][m]["hits1"] for r in reports for h in (1, 2, 3)]
        ax.bar(x + (j - 1) * 0.27, vals, 0.27, label=METHOD_NAMES[m])
    ax.set(xticks=x, xlabel="dataset and hop count", ylabel="Hits@1 (test questions)", ylim=(0, 1))
    ax.set_xticklabels(labels)
    ax.set_title("Prior, hard (Eq. 6) and soft (Eq. 7) grounding per hop count")
    ax.legend()
    graph, result, answers = example
    nodes, relations = _readable(main["dataset"], graph)
    shown = ["\n".join(textwrap.wrap(nodes.get(a, a), 13, max_lines=3, placeholder=" …"))
             for a in answers]  # fmt: skip
    ax = gplot.posterior_bars(result, axes["post"], max_candidates=8, labels=shown)
    ax.set_xlabel("candidate answer (label color: evidence status)")
    best = nodes.get(answers[int(result.best)], answers[int(result.best)])
    ax.set_title(
        textwrap.fill(f"One {data} 2-hop test question: {result.question}", 90)
        + f"\nAxiom 8 decision: {result.decision.name.lower()}; grounded top candidate: {best}",
        fontsize=10,
    )
    gplot.evidence_paths(graph, result, axes["walks"], node_labels=nodes,
                         relation_labels=relations)  # fmt: skip
    axes["walks"].set_title(
        f"Supporting walks of {best} in the retrieved evidence\n"
        r"(width: posterior weight $\nu^*$, Prop. 2)",
        fontsize=10,
    )
    fig.suptitle("Grounded multi-hop QA on real knowledge graphs", fontsize=13)
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    lines: list[str] = []

    def log(s: str) -> None:
        lines.append(s)
        print(s, file=sys.stderr, flush=True)

    runs, other_seeds = [], []
    for seed in seeds(args):
        for s in settings(args.full):
            run = run_setting(s, log, seed)
            if seed == 0:
                runs.append(run)
            else:
                other_seeds.append(run[0])
            programs.release_programs()  # compiled programs hold memory maps (see docs/limits.md)
    reports, example = [r for r, _ in runs], runs[0][1]
    report = dict(full=args.full, reports=reports, seeds=over_seeds(reports + other_seeds, log))
    paths = [write_json(args.out / "grounded_qa.json", report)]
    rows = [
        (
            r["dataset"],
            h,
            m,
            *(r["per_hop"][h][m][k] for k in ("hits1", "f1", "aurc", "ece", "abstained")),
        )
        for r in reports
        for h in (1, 2, 3)
        for m in METHODS
    ]
    paths.append(
        write_csv(
            args.out / "grounded_qa.csv",
            ("dataset", "hops", "method", "hits1", "f1", "aurc", "ece", "abstained"),
            rows,
        )
    )
    blind_rows = [
        (
            r["dataset"],
            r["seed"],
            h,
            label,
            m,
            part[m]["hits1"],
            part[m].get("aurc", ""),
            *_interval(part[m], "vs_prior" if system == "reader" else None),
            *_interval(part[m], None if system == "reader" else "vs_reader"),
        )
        for r in reports
        for h in (1, 2, 3)
        for system, label in BLIND_SYSTEMS.items()
        for part in (
            r["blind"]["per_hop"][h] if system == "reader" else r["blind"]["per_hop"][h][system],
        )
        for m in METHODS
    ]
    paths.append(
        write_csv(
            args.out / "grounded_qa_blind.csv",
            (
                "dataset",
                "seed",
                "hops",
                "system",
                "method",
                "hits1",
                "aurc",
                "minus_prior",
                "minus_prior_low",
                "minus_prior_high",
                "minus_reader",
                "minus_reader_low",
                "minus_reader_high",
            ),
            blind_rows,
        )  # fmt: skip
    )
    path_rows = [
        (r["dataset"], r["seed"], h, label, acc["top1"], acc["topk"], acc["ceiling"], acc["n"])
        for r in reports + other_seeds
        for kind, label in PATH_PREDICTORS.items()
        for h, acc in r["blind_paths"][kind]["per_hop"].items()
    ]
    paths.append(
        write_csv(
            args.out / "grounded_qa_paths.csv",
            ("dataset", "seed", "hops", "predictor", "top1", "top3", "ceiling", "n"),
            path_rows,
        )
    )
    paths += save_figure(
        figure(reports, example), args.out / "grounded_qa.png", quick=not args.full
    )
    two = reports[0]["per_hop"][2]
    paths_two = {k: reports[0]["blind_paths"][k]["per_hop"][2] for k in PATH_PREDICTORS}
    blind_two = reports[0]["blind"]["per_hop"][2]
    print(
        f"dataset={reports[0]['dataset']} hops=2 seed=0 "
        f"grounded_hits1={two['soft']['hits1']:.4f} prior_hits1={two['prior']['hits1']:.4f} "
        f"hard_hits1={two['hard']['hits1']:.4f} aurc={two['soft']['aurc']:.4f} "
        f"oracle_hits1={two['soft']['hits1']:.4f} blind_hits1={blind_two['soft']['hits1']:.4f} "
        f"path_acc={paths_two['reader']['top1']:.4f} "
        f"path_acc_lookup={paths_two['lookup']['top1']:.4f} "
        f"path_acc_composed={paths_two['composed']['top1']:.4f} "
        f"path_ceiling={paths_two['reader']['ceiling']:.4f} "
        f"path_acc_training_chains={paths_two['training_chains']['top1']:.4f} "
        f"blind_prior_hits1={blind_two['prior']['hits1']:.4f} "
        f"blind_soft_hits1={blind_two['soft']['hits1']:.4f} "
        f"blind_hard_hits1={blind_two['hard']['hits1']:.4f} "
        f"lookup_hits1={blind_two['lookup']['soft']['hits1']:.4f} "
        f"parser_hits1={blind_two['parser']['soft']['hits1']:.4f}"
    )
    return paths


if __name__ == "__main__":
    main()
