"""A real language model's answers grounded on WordNet, offline: does grounding improve a real
model's answers under incomplete evidence?

The graph: WN18RR (WordNet 3.0), whose synsets have names a language model can read. The
questions: :func:`grounding.datasets.kgqa_benchmark` on WN18RR over its nameable relations
(hypernym, instance hypernym, has part, member meronym, topic domain, region domain; labels in
:data:`LABELS`), 1 and 2 hops, the test questions worded by phrasings and frames disjoint from
those of the training and validation questions. Half of each hop count's questions start with a
WN18RR *test* triple, so their answer is true but absent from the evidence (the training
graph): incompleteness by construction, not by deletion.

The model: SmolLM2-135M-Instruct (:class:`grounding.language.LocalLM`, in-process), prompted with a
system line and worked examples from training questions (one per relation), sees the question
text only. Its candidates (:class:`grounding.prior.LocalCandidateModel`): its ``K_BEAMS`` best
complete answers by beam search, and the names of the ``POOL`` nodes that path-constrained
retrieval finds within two hops of the topic (from the text and topic alone), every one scored
by the model's own log-probability of the answer; answers are linked to synsets by name (an
answer naming several synsets is split equally over them; one naming none stays an
out-of-graph candidate).

Systems, per hop count, on the same test questions:

- ``llm_prior``: the model's prior over its candidates;
- ``llm_soft`` / ``llm_hard``: soft (Eq. (7)) and hard (Eq. (6)) grounding of those candidates
  against the evidence retrieved from the topic, blind: the question's relation chain is not
  given, so a candidate is supported by walks of 1-2 edges of any relation from the topic;
  lambda and kappa fitted on validation questions (lambda by gradient for each kappa of
  :data:`KAPPAS`, the pair of best validation log-likelihood);
- ``llm_soft_oracle_chain`` (labelled oracle): the same with the gold relation chain claimed;
- ``kge_prior`` (labelled oracle: it composes the gold chain): a TransE model with reciprocal
  relations trained 1-vs-all on the evidence, over all synsets.

Reported: Hits@1 (a candidate synset or answer name among the gold answers), AURC, ECE, the
share of the model's top answers that name no synset (``out_of_graph``), the share of
questions with a gold answer among the candidates (and among the model's own answers), how
often grounding overturns the prior's first answer (wrong to right, right to wrong, wrong to another
wrong answer, beside the number of right first answers), paired bootstrap
intervals of every system against ``llm_prior``; per hop count, per stratum (``held_out``: a
gold answer the evidence lacks; ``observed``: none) and for all test questions. The per-question
rows are in ``wordnet_llm.csv``. Final line: ``llm_prior_hits1= llm_soft_hits1= llm_hard_hits1=
kge_prior_hits1= out_of_graph=`` (all test questions, both hop counts).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments._io import float64, parse_args, plt, save_figure, styled, write_csv, write_json
from experiments._setup import score
from experiments._stats import paired_bootstrap
from grounding import GroundingConfig
from grounding.datasets import kgqa_benchmark
from grounding.language import AnswerLinker, LocalLM, normalize_answer
from grounding.learn import OneVsAllConfig, train_one_vs_all
from grounding.prior import Blinded, KGEAnswerer, LocalCandidateModel
from grounding.qa import GroundedQA, expected_calibration_error, fit_lambda, risk_coverage
from grounding.query import Query, blind
from grounding.retrieval import PCR, TextIndex

#: The nameable relations of WN18RR and how the question texts name them.
LABELS = {
    "_hypernym": "broader category",
    "_instance_hypernym": "type",
    "_has_part": "part",
    "_member_meronym": "member",
    "_synset_domain_topic_of": "subject area",
    "_member_of_domain_region": "region",
}
SYSTEM = "Answer with the name of one WordNet concept, nothing else."
KAPPAS = (1.0, 0.5, 2.0, 4.0)  # ties (energies 0 or kappa: only lambda * kappa counts) keep 1
HOPS = (1, 2)
K_BEAMS = 6
POOL = 6


@dataclasses.dataclass(frozen=True)
class Scale:
    questions_per_hop: int
    test_per_hop: int
    valid_per_hop: int
    kge_dim: int
    kge_epochs: int


QUICK = Scale(questions_per_hop=150, test_per_hop=16, valid_per_hop=8, kge_dim=64, kge_epochs=3)
FULL = Scale(questions_per_hop=800, test_per_hop=150, valid_per_hop=40, kge_dim=128, kge_epochs=10)


def examples(bench, names: Sequence[str]) -> list[tuple[str, str]]:
    """One worked example per relation: a 1-hop training question and its first answer."""
    out, seen = [], set()
    for q in bench.split("train", 1):
        if q.chain[0] not in seen:
            seen.add(q.chain[0])
            out.append((q.text, names[bench.kg.entities.index(q.answers[0])]))
    return out


def hit_names(outcome, method: str, gold_names: set[str], names: dict) -> dict:
    """Hits@1 by name: the top candidate's name (a synset's lemma, or an out-of-graph answer's
    text) among the gold answers' names (an answer naming the right word for another synset of
    it counts: the question names its topic by a word, not a synset); ``top``: that name."""
    r = score(outcome, method, ())
    answers, probs = outcome.answer_probabilities(method)
    if not answers:
        return dict(hit=0.0, confidence=0.0, top=None)
    first = answers[int(np.argmax(probs))]
    top = normalize_answer(names.get(first, first))
    return dict(hit=float(top in gold_names), confidence=r["confidence"], top=top)


def evaluate(rows: dict[str, list[dict]]) -> dict:
    out = {}
    for name, rs in rows.items():
        hit = np.array([r["hit"] for r in rs])
        conf = np.array([r["confidence"] for r in rs])
        out[name] = dict(
            hits1=float(hit.mean()),
            aurc=float(risk_coverage(conf, hit)["aurc"]),
            ece=float(expected_calibration_error(conf, hit)),
            n=len(rs),
        )
    return out


def fit(qa_of, valid, gold, log) -> tuple[float, float]:
    """(lambda, kappa) of best validation log-likelihood of the gold answers."""
    best = None
    for kappa in KAPPAS:
        qa = qa_of(GroundingConfig(lam=1.0, kappa=kappa))
        outs = qa.answer_batch(valid)
        try:
            lam = fit_lambda(outs, gold)
        except ValueError:
            continue
        outs = qa_of(GroundingConfig(lam=lam, kappa=kappa)).answer_batch(valid)
        # over the questions with a gold answer among their candidates (the others carry no
        # information on lambda or kappa)
        mass = [
            sum(p for a, p in zip(*o.answer_probabilities("soft")) if a in g)
            for o, g in zip(outs, gold)
            if o.result is not None and set(o.candidates.entities) & set(g)
        ]
        ll = float(np.mean(np.log(np.maximum(mass, 1e-12)))) if mass else -np.inf
        log(f"  kappa={kappa}: lambda={lam:.3f}, validation log-likelihood {ll:.3f}")
        if best is None or ll > best[0] + 1e-9:
            best = (ll, lam, kappa)
    if best is None:
        return 1.0, 1.0
    return best[1], best[2]


SYSTEMS = {  # name in the report: label in the figure
    "llm_prior": "SmolLM2's prior",
    "llm_soft": "soft grounding (blind)",
    "llm_hard": "hard grounding (blind)",
    "llm_soft_oracle_chain": "soft, gold chain (oracle)",
    "kge_prior": "TransE prior, gold chain (oracle)",
}


@styled
def figure(report: dict, curves: dict):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), layout="constrained")
    ax = axes[0]
    width = 0.8 / len(SYSTEMS)
    for j, (name, label) in enumerate(SYSTEMS.items()):
        xs = np.arange(len(HOPS)) + (j - len(SYSTEMS) / 2 + 0.5) * width
        ys = [report[f"{h}hop"][name]["hits1"] for h in HOPS]
        ax.bar(xs, ys, width, label=label)
    ax.set_xticks(np.arange(len(HOPS)), [f"{h} hop{'s' * (h > 1)}" for h in HOPS])
    ax.set_ylim(0, 1)
    ax.set_xlabel("question")
    ax.set_ylabel("Hits@1 (test)")
    ax.set_title("WordNet questions: a real model, grounded on incomplete evidence")
    ax.legend(fontsize=8)
    ax = axes[1]
    for name, (coverage, risk) in curves.items():
        ax.plot(coverage, risk, label=SYSTEMS[name])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("coverage (questions answered, most confident first)")
    ax.set_ylabel("risk (share answered wrongly)")
    ax.set_title("Selective answering (lower is better; area = AURC)")
    ax.legend(fontsize=8)
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__)
    sc = FULL if args.full else QUICK
    t0 = time.perf_counter()

    def log(s: str) -> None:
        print(f"[{time.perf_counter() - t0:6.1f}s] {s}", flush=True)

    bench = kgqa_benchmark(
        "wn18rr",
        questions_per_hop=sc.questions_per_hop,
        hops=HOPS,
        relations=list(LABELS),
        labels=LABELS,
        held_out_share=0.5,
        split_fractions=(0.4, 0.2, 0.4),
        max_per_template=sc.questions_per_hop,
        seed=0,
    )
    kg = bench.kg
    names = dict(zip(kg.entities, kg.node_texts))
    linker = AnswerLinker(kg.entities, kg.node_texts)
    lm = LocalLM.load(system=SYSTEM, examples=examples(bench, kg.node_texts))
    index = TextIndex(bench.graph)
    pcr = {h: PCR(index, max_hops=h) for h in HOPS}

    def pool(question) -> list[str]:
        got = pcr[2].retrieve(Query(question.text, anchor=question.topic), POOL + 1)
        return [names[kg.entities[i]] for i in got.index if kg.entities[i] != question.topic][:POOL]

    # the model sees each question's text and topic only (Blinded), and answers each once:
    # its proposals are memoized, so the blind and the oracle loop and the fits share them
    model = LocalCandidateModel(lm, linker, pool=pool)
    shown = Blinded(model)

    def blind_qa(cfg):
        return GroundedQA(shown, lambda d: pcr[2], cfg, k_candidates=K_BEAMS, max_hops=2)

    def oracle_qa(cfg):
        return GroundedQA(shown, lambda d: pcr[d], cfg, k_candidates=K_BEAMS)

    valid = [q for h in HOPS for q in bench.split("valid", h)[: sc.valid_per_hop]]
    test = [q for h in HOPS for q in bench.split("test", h)[: sc.test_per_hop]]
    gold_v = [bench.fitting_answers(q) for q in valid]  # train + valid triples only
    log(f"{len(valid)} validation and {len(test)} test questions; the model answers them ...")
    asked = valid + test
    for lo in range(0, len(asked), 16):
        shown.propose_batch(asked[lo : lo + 16], K_BEAMS)
        log(f"  {min(lo + 16, len(asked))}/{len(asked)} questions answered")
    log("fitting lambda and kappa on validation (blind) ...")
    lam_b, kap_b = fit(blind_qa, [blind(q) for q in valid], gold_v, log)
    log("fitting lambda and kappa on validation (oracle chain) ...")
    lam_o, kap_o = fit(oracle_qa, valid, gold_v, log)
    blind_out = blind_qa(GroundingConfig(lam=lam_b, kappa=kap_b)).answer_batch(
        [blind(q) for q in test]
    )
    oracle_out = oracle_qa(GroundingConfig(lam=lam_o, kappa=kap_o)).answer_batch(test)

    log("training the TransE prior on the evidence ...")
    cfg = OneVsAllConfig(
        dim=sc.kge_dim,
        epochs=sc.kge_epochs,
        lr=0.1,
        init_scale=0.1,
        n_shared_negatives=4096,  # 41k entities: batch negatives (speed), as on CoDEx-M
        eval_every=sc.kge_epochs,
        seed=0,
    )
    with jax.enable_x64(False):
        trained = train_one_vs_all(kg, "transe", cfg, progress=False)
    kge = KGEAnswerer(jax.tree.map(jnp.asarray, trained.model), kg.entities, kg.relations)
    kge.fit_temperature(valid, gold_v)

    rows: dict[str, list[dict]] = {k: [] for k in SYSTEMS}
    per_q = []
    for q, b, o in zip(test, blind_out, oracle_out):
        gold = {normalize_answer(names[a]) for a in q.answers}
        rows["llm_prior"].append(hit_names(b, "prior", gold, names))
        rows["llm_soft"].append(hit_names(b, "soft", gold, names))
        rows["llm_hard"].append(hit_names(b, "hard", gold, names))
        rows["llm_soft_oracle_chain"].append(hit_names(o, "soft", gold, names))
        kc = kge.propose(q, 20)
        top = kc.entities[0] if kc.entities else None
        rows["kge_prior"].append(
            dict(
                hit=float(top is not None and normalize_answer(names[top]) in gold),
                confidence=float(np.exp(kc.log_prior[0])) if top else 0.0,
            )
        )
        beams = model.answers(blind(q), K_BEAMS)
        first = beams[0][0] if beams else ""
        cands = model.propose(blind(q), K_BEAMS)
        offered = {normalize_answer(names.get(e, e)) for e in cands.entities}
        per_q.append(
            dict(
                id=q.id,
                hops=q.hops,
                held_out=bool(q.unobserved),
                text=q.text,
                gold="|".join(sorted(gold)),
                first_answer=first,
                first_out_of_graph=bool(first) and not linker.link(first),
                gold_among_candidates=bool(gold & offered),
                gold_among_model_answers=bool(gold & {normalize_answer(t) for t, _ in beams}),
                **{f"{k}_hit": rows[k][-1]["hit"] for k in rows},
            )
        )
    report = dict(lambda_blind=lam_b, kappa_blind=kap_b, lambda_oracle=lam_o, kappa_oracle=kap_o)
    strata = {f"{h}hop": (lambda p, h=h: p["hops"] == h) for h in HOPS}
    strata["held_out"] = lambda p: p["held_out"]  # a gold answer the evidence lacks
    strata["observed"] = lambda p: not p["held_out"]
    strata["all"] = lambda p: True
    for key, keep in strata.items():
        sel = [i for i, p in enumerate(per_q) if keep(p)]
        if not sel:
            continue
        sub = {k: [v[i] for i in sel] for k, v in rows.items()}
        ev = evaluate(sub)
        prior = np.array([r["hit"] for r in sub["llm_prior"]])
        for k in rows:
            if k != "llm_prior":
                ev[k]["vs_prior"] = paired_bootstrap(np.array([r["hit"] for r in sub[k]]), prior)
        soft = np.array([r["hit"] for r in sub["llm_soft"]])
        moved = np.array([a["top"] != b["top"] for a, b in zip(sub["llm_prior"], sub["llm_soft"])])
        ev["overturned"] = dict(
            rightly=int(((soft == 1) & (prior == 0)).sum()),
            wrongly=int(((soft == 0) & (prior == 1)).sum()),
            wrong_to_other_wrong=int(((soft == 0) & (prior == 0) & moved).sum()),
            right_priors=int(prior.sum()),
            n=len(sel),
        )
        for k in ("first_out_of_graph", "gold_among_candidates", "gold_among_model_answers"):
            ev[k.removeprefix("first_")] = float(np.mean([per_q[i][k] for i in sel]))
        report[key] = ev
        log(
            f"{key}: "
            + ", ".join(f"{k} {ev[k]['hits1']:.3f}" for k in rows)
            + f"; out of graph {ev['out_of_graph']:.2f}; gold among candidates"
            + f" {ev['gold_among_candidates']:.2f} (model's own {ev['gold_among_model_answers']:.2f})"
            + f"; overturned {ev['overturned']}"
        )
    curves = {}
    for name in SYSTEMS:
        rc = risk_coverage(
            np.array([r["confidence"] for r in rows[name]]),
            np.array([r["hit"] for r in rows[name]]),
        )
        curves[name] = (np.asarray(rc["coverage"]), np.asarray(rc["risk"]))
    out = Path(args.out)
    paths = [
        write_json(out / "wordnet_llm.json", report),
        write_csv(out / "wordnet_llm.csv", list(per_q[0]), [list(p.values()) for p in per_q]),
        *save_figure(figure(report, curves), out / "wordnet_llm.png", quick=not args.full),
    ]
    a = report["all"]
    print(
        f"llm_prior_hits1={a['llm_prior']['hits1']:.3f} llm_soft_hits1={a['llm_soft']['hits1']:.3f} "
        f"llm_hard_hits1={a['llm_hard']['hits1']:.3f} kge_prior_hits1={a['kge_prior']['hits1']:.3f} "
        f"out_of_graph={a['out_of_graph']:.3f}"
    )
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
