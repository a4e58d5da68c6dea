"""Grounded multi-hop question answering on real knowledge graphs, the paper's loop end to end.

For each dataset (CoDEx-M and UMLS; CoDEx-S with its hard negatives as counter-evidence): the
templated benchmark of :func:`grounding.datasets.kgqa_benchmark`; a TransE model with
reciprocal relations, trained 1-vs-all on the evidence (train split) only, plays the LLM
(:class:`grounding.qa.KGEAnswerer` composes its translations along the question's chain;
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

Blind relation paths (``blind_paths`` in the JSON): a relation-path predictor fitted on the
training questions sees each test question's text and topic only; its top-1/top-3 path
accuracy per hop with Wilson intervals, and the share of test chains seen in training (its
ceiling). The blind loop (:class:`grounding.qa.BlindQA`): the top 3 predicted paths become
claims, each candidate grounded on its own claim, lambda fitted on blind validation outcomes by
the same gradient fit; per hop its Hits@1 beside the oracle loop's (gold chain), with the
paired bootstrap 95 % interval of the difference.

Seeds: ``--seeds N`` repeats every dataset on the benchmark and answerer of seeds 0..N-1
(default one quick, three full); the tables and figure are seed 0's, and ``seeds`` in the JSON
holds each seed's blind and oracle Hits@1 and the interval of blind - oracle over the pooled
test questions of all seeds.

Final line: ``grounded_hits1=<x> prior_hits1=<y> hard_hits1=<z> aurc=<w> path_acc=<p>
path_ceiling=<c>`` (CoDEx-M, 2 hops; soft grounding with the gold chain; the blind path
predictor's top-1 accuracy and ceiling).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

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
from experiments._stats import paired_bootstrap, wilson
from grounding import EvidenceStatus, GroundingResult, TypedGraph, gibbs_log_posterior, ground
from grounding import plot as gplot
from grounding.datasets import kgqa_benchmark
from grounding.learn import OneVsAllConfig, train_one_vs_all
from grounding.plans import RelationPathPredictor, path_accuracy
from grounding.qa import (
    BlindQA,
    GroundedQA,
    KGEAnswerer,
    expected_calibration_error,
    grounding_problem,
    risk_coverage,
    score_probabilities,
)
from grounding.qa.loop import compact_evidence
from grounding.query import blind
from grounding.retrieval import PCR, HashingEncoder, SoftPCR, TextIndex

KAPPA = 1.0
METHODS = ("prior", "hard", "soft")
LAMBDA_GRID = np.logspace(-2, 2, 33)


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    questions_per_hop: int
    epochs: int
    negatives: bool = False
    dim: int = 256  # the answerer's (TransE) embedding dimension


#: The benchmark and answerer of each dataset, per mode (``True``: ``--full``); PankRAG and the
#: learned retrievers use the same ones (so one process trains each answerer once).
SETTINGS = {
    True: {
        "codex-m": Setting("codex-m", 3000, 15),
        "umls": Setting("umls", 1000, 100),
        "codex-s": Setting("codex-s", 1000, 60, negatives=True),
    },
    False: {
        "codex-m": Setting("codex-m", 500, 3),
        "umls": Setting("umls", 300, 20),
        "codex-s": Setting("codex-s", 300, 10, negatives=True),
    },
}


def settings(full: bool) -> list[Setting]:
    return list(SETTINGS[full].values())


def build(setting: Setting, seed: int = 0):
    """Benchmark, trained answerer (temperature fitted on validation) and retrievers.
    Memoized by ``(setting, seed)``: later experiments of the same run (PankRAG, the learned
    retrievers) reuse the trained answerer."""
    return _build(setting, seed)


@functools.lru_cache(maxsize=4)
def _build(setting: Setting, seed: int):
    bench = kgqa_benchmark(setting.name, questions_per_hop=setting.questions_per_hop, seed=seed)
    shared = 4096 if setting.name == "codex-m" else 0  # CoDEx-M: batch negatives (speed)
    cfg = OneVsAllConfig(
        dim=setting.dim,
        epochs=setting.epochs,
        lr=0.1,
        init_scale=0.1,
        n_shared_negatives=shared,
        eval_every=min(5, setting.epochs),
        patience=3,
        seed=seed,
    )
    # the answerer trains in 32-bit floats (a model fit, half the time of 64-bit on a CPU);
    # its parameters are then widened, so the loop's measured values stay 64-bit
    with jax.enable_x64(False):
        fit = train_one_vs_all(bench.kg, "transe", cfg, progress=False)
    model = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), fit.model)
    answerer = KGEAnswerer(model, bench.kg.entities, bench.kg.relations)
    valid = bench.split("valid")
    answerer.fit_temperature(valid, [q.answers for q in valid])
    index = TextIndex(bench.graph)
    pcr = {h: PCR(index, max_hops=h) for h in (1, 2, 3)}
    soft = {h: SoftPCR(index, max_hops=h) for h in (1, 2, 3)}  # the PCR paper's constants
    return bench, answerer, (pcr, soft), fit


def counter_evidence(bench) -> frozenset:
    """CoDEx-S's hard negatives (valid + test), both directions, as counter-evidence triples."""
    kg = bench.kg
    out = set()
    for split in ("valid", "test"):
        for h, r, t in kg.negative_triples(split):
            out.add((kg.entities[h], kg.relations[r], kg.entities[t]))
            out.add((kg.entities[t], kg.relations[r] + "^-1", kg.entities[h]))
    return frozenset(out)


def arrays(outcomes, questions: Sequence | None = None) -> dict[str, np.ndarray]:
    """``[Q, C]`` prior, grounding energy and gold mask (the claim's answer is a gold answer)
    of the answered outcomes, oracle or blind; ``questions`` (default: each outcome's own)
    hold the scorer's gold answers."""
    questions = [o.question for o in outcomes] if questions is None else questions
    live = [(o.result, q) for o, q in zip(outcomes, questions) if o.result is not None]
    C = max(len(r.names) for r, _ in live)
    lp = np.full((len(live), C), -np.inf)
    energy = np.zeros((len(live), C))
    gold = np.zeros((len(live), C), bool)
    for i, (r, q) in enumerate(live):
        n = len(r.names)
        lp[i, :n] = np.asarray(r.log_prior)
        energy[i, :n] = np.asarray(r.energy)
        gold[i, :n] = [a in set(q.answers) for a in r.answers]
    return dict(log_prior=lp, energy=energy, gold=gold)


def fit_lambda(
    outcomes, questions: Sequence | None = None, steps: int = 300, lr: float = 0.05
) -> float:
    """Maximize the validation log-probability of the gold answers among the candidates under
    the grounded posterior (Eq. (7) on the energies ``ground`` computed) by Adam on log lambda.
    The one lambda fit of every QA experiment, oracle (gold chain) or blind."""
    a = arrays(outcomes, questions)
    has_gold = a["gold"].any(axis=1)
    if not has_gold.any():
        raise ValueError("no validation outcome has a gold answer among its candidates")
    lp, energy, gold = (jnp.asarray(a[k][has_gold]) for k in ("log_prior", "energy", "gold"))

    def loss(log_lam):
        post = gibbs_log_posterior(lp, energy, jnp.exp(log_lam))
        return -jnp.mean(jax.nn.logsumexp(jnp.where(gold, post, -jnp.inf), axis=1))

    opt = optax.adam(lr)
    x, state = jnp.asarray(0.0), opt.init(jnp.asarray(0.0))
    grad = jax.jit(jax.value_and_grad(loss))
    for _ in range(steps):
        _, g = grad(x)
        upd, state = opt.update(g, state)
        x = optax.apply_updates(x, upd)
    return float(jnp.exp(x))


def score(outcome, method: str, gold: Sequence[str] | None = None) -> dict[str, float]:
    """Hits@1, answer-set F1 and confidence of one outcome, oracle or blind, against ``gold``
    (default: the outcome's own question's answers; a blind outcome carries none), answers
    rolled up over the claims that reach them."""
    r = outcome.result
    gold = outcome.question.answers if gold is None else gold
    if r is None or (method == "hard" and bool(r.hard_abstained)):
        return score_probabilities((), np.zeros(0), gold, abstained=True)
    return score_probabilities(*r.answer_probabilities(method), gold)


def unobserved_fate(outcomes) -> dict[str, float]:
    """True answers the evidence does not state, among the candidates: the share hard
    grounding deletes (zero mass) and soft grounding keeps (positive mass), and how often
    each method ranks one first; observed answers deleted by hard grounding (retrieval misses)
    for comparison."""
    n_unobs = hard_del = soft_keep = n_obs = obs_del = 0
    for o in outcomes:
        if o.result is None:
            continue
        unobs, obs = set(o.question.unobserved), set(o.question.observed)
        hard, soft = o.probabilities("hard"), o.probabilities("soft")
        for j, c in enumerate(o.candidates.entities):
            if c in unobs:
                n_unobs += 1
                hard_del += hard[j] == 0
                soft_keep += soft[j] > 0
            elif c in obs:
                n_obs += 1
                obs_del += hard[j] == 0
    return dict(
        unobserved_candidates=n_unobs,
        hard_deletes=hard_del / max(n_unobs, 1),
        soft_keeps=soft_keep / max(n_unobs, 1),
        observed_candidates=n_obs,
        hard_deletes_observed=obs_del / max(n_obs, 1),
    )


def certificate(outcomes, lam: float) -> dict[str, float]:
    """Thm. 3 on the real world: the best soft answer is certified against *any* evidence
    change when ``radius > kappa`` (energies lie in ``[0, kappa]``); against the world
    :math:`G^*` when ``radius`` exceeds the oscillation of ``E_R - E_{G*}`` (``E_{G*}`` = 0
    on true answers, ``kappa`` otherwise). Sound: certified answers equal the world's."""
    any_change = world = world_ok = 0
    live = [o for o in outcomes if o.result is not None]
    for o in live:
        r = o.result
        radius = float(r.certificate.radius)
        e_r = np.asarray(r.energy)
        truth = set(o.question.answers)
        e_w = np.array([0.0 if c in truth else KAPPA for c in o.candidates.entities])
        support = np.isfinite(np.asarray(r.log_prior))
        diff = (e_r - e_w)[support]
        omega = float(diff.max() - diff.min())
        any_change += radius > KAPPA
        if radius > omega:
            world += 1
            post_w = np.asarray(gibbs_log_posterior(r.log_prior, e_w, lam))
            world_ok += int(np.argmax(post_w)) == int(r.best)
    n = max(len(live), 1)
    return dict(
        certified_any=any_change / n,
        certified_world=world / n,
        certified_world_sound=world_ok / max(world, 1),
    )


def evaluate(outcomes, lam: float) -> dict:
    out = {}
    for m in METHODS:
        rows = [score(o, m) for o in outcomes]
        conf = np.array([r["confidence"] for r in rows])
        hit = np.array([r["hit"] for r in rows])
        out[m] = dict(
            hits1=float(hit.mean()),
            f1=float(np.mean([r["f1"] for r in rows])),
            abstained=float(np.mean([r["abstained"] for r in rows])),
            aurc=risk_coverage(conf, hit)["aurc"],
            ece=expected_calibration_error(conf, hit),
        )
    out["unobserved"] = unobserved_fate(outcomes)
    out["certificate"] = certificate(outcomes, lam)
    out["n_questions"] = len(outcomes)
    return out


def lambda_sweep(outcomes) -> list[float]:
    """Soft Hits@1 over :data:`LAMBDA_GRID` (posteriors from the energies ``ground`` gave)."""
    a = arrays(outcomes)
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
    state = compact_evidence(o.evidence, problem.entities())
    result = ground(problem, state, n_paths=3, **qa.ground_kwargs)
    return state.graph, result, list(o.candidates.entities)


LABEL_WEIGHTS = (0.0, 0.5, 1.0, 2.0)  # beta of the relation-path predictor, chosen on valid


def fit_blind_lambda(outcomes, questions) -> float:
    """:func:`fit_lambda` on blind validation outcomes, scored against ``questions``' gold
    answers (the blind outcomes carry none)."""
    return fit_lambda(outcomes, questions)


def blind_loop(bench, answerer, pcr, predictor, oracle_hits: dict, log) -> dict:
    """The loop on blind questions (:class:`~grounding.qa.BlindQA`: predicted paths, each
    candidate grounded on its own claim), lambda fitted on blind validation outcomes; per hop
    its Hits@1 per method and the paired difference to the oracle loop (gold chain)."""
    valid = bench.split("valid")
    probe = BlindQA(answerer, predictor, lambda d: pcr[d], lam=1.0, kappa=KAPPA)
    lam = fit_blind_lambda(probe.answer_batch([blind(q) for q in valid]), valid)
    qa = BlindQA(answerer, predictor, lambda d: pcr[d], lam=lam, kappa=KAPPA)
    out: dict = dict(lam=lam, per_hop={})
    for h in (1, 2, 3):
        test = bench.split("test", h)
        outcomes = qa.answer_batch([blind(q) for q in test])
        hits = {
            m: np.array([score(o, m, q.answers)["hit"] for o, q in zip(outcomes, test)])
            for m in METHODS
        }
        row: dict = {
            m: dict(
                hits1=float(hits[m].mean()), vs_oracle=paired_bootstrap(hits[m], oracle_hits[h][m])
            )
            for m in METHODS
        }
        row["soft_hit"] = hits["soft"].tolist()  # per question, for the pooled seeds' intervals
        row["no_answer"] = float(np.mean([o.result is None for o in outcomes]))
        out["per_hop"][h] = row
        log(
            f"{bench.name} {h}-hop blind: "
            + " ".join(f"{m}={row[m]['hits1']:.3f}" for m in METHODS)
            + f" (soft vs oracle {row['soft']['vs_oracle']['diff']:+.3f}, 95 % "
            + "{:+.3f} to {:+.3f})".format(*row["soft"]["vs_oracle"]["ci"])
        )
    return out


def blind_paths(bench, log) -> tuple[dict, RelationPathPredictor]:
    """Relation paths predicted from the blind question (text and topic) by a predictor fitted
    on the training questions, its label weight chosen on validation: top-1 and top-3 path
    accuracy per hop on test with Wilson intervals, and the share of test chains seen in
    training (the ceiling of a predictor over training paths)."""
    enc = HashingEncoder()

    def fitted(beta: float) -> RelationPathPredictor:
        pred = RelationPathPredictor(enc.encode, bench.relation_labels, bench.graph, beta)
        return pred.fit(bench.split("train"))

    def mean_top1(acc: dict) -> float:
        return float(np.mean([r["top1"] for r in acc.values()]))

    valid = {b: mean_top1(path_accuracy(fitted(b), bench.split("valid"))) for b in LABEL_WEIGHTS}
    beta = max(LABEL_WEIGHTS, key=lambda b: (valid[b], -b))
    acc = path_accuracy(fitted(beta), bench.split("test"))
    for r in acc.values():
        r["top1_ci"], r["topk_ci"] = (wilson(r[m] * r["n"], r["n"]) for m in ("top1", "topk"))
    log(
        f"{bench.name} blind relation paths (beta={beta}): "
        + " ".join(
            f"{h}-hop top1={r['top1']:.3f} ceiling={r['ceiling']:.3f}" for h, r in acc.items()
        )
    )
    return dict(label_weight=beta, valid_top1=valid, per_hop=acc), fitted(beta)


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
    qa = GroundedQA(answerer, lambda q: pcr[q.hops], lam=1.0, kappa=KAPPA)
    lam = fit_lambda(qa.answer_batch(bench.split("valid")))
    qa = GroundedQA(answerer, lambda q: pcr[q.hops], lam=lam, kappa=KAPPA)
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
    report["blind_paths"], predictor = blind_paths(bench, log)
    oracle_hits: dict = {}
    for h in (1, 2, 3):
        test = bench.split("test", h)
        t = time.perf_counter()
        outcomes = qa.answer_batch(test)
        seconds = time.perf_counter() - t
        row = evaluate(outcomes, lam) | dict(questions_per_second=len(test) / seconds)
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
            qa_soft = GroundedQA(answerer, lambda q: soft[q.hops], lam=lam, kappa=KAPPA)
            via_soft = evaluate(qa_soft.answer_batch(test), lam)
            row["soft_pcr_retriever"] = {m: via_soft[m]["hits1"] for m in METHODS}
        report["per_hop"][h] = row
        log(
            f"{setting.name} {h}-hop: "
            + " ".join(f"{m}={row[m]['hits1']:.3f}" for m in METHODS)
            + f" ({time.perf_counter() - t0:.0f} s)"
        )
    report["blind"] = blind_loop(bench, answerer, pcr, predictor, oracle_hits, log)
    log(f"{setting.name}: blind loop done ({time.perf_counter() - t0:.0f} s)")
    if negative:
        qs = negative_questions(bench, setting.questions_per_hop)
        qa_neg = GroundedQA(
            answerer, lambda q: pcr[q.hops], lam=lam, kappa=KAPPA, negative=negative
        )
        report["counter_evidence"] = contradiction_effect(
            qa.answer_batch(qs), qa_neg.answer_batch(qs), lam
        ) | dict(n_questions=len(qs))
    report["seconds"] = time.perf_counter() - t0
    return report, example


def over_seeds(reports: list[dict], log) -> dict:
    """Blind against oracle soft Hits@1 per dataset and hop, over every benchmark seed run:
    each seed's two numbers, and the paired bootstrap 95 % interval of blind - oracle over the
    pooled test questions of all seeds."""
    out: dict = {}
    for name in dict.fromkeys(r["dataset"] for r in reports):
        runs = [r for r in reports if r["dataset"] == name]
        out[name] = {}
        for h in (1, 2, 3):
            oracle = [np.asarray(r["per_hop"][h]["selective"]["soft"]["hit"], float) for r in runs]
            blind_ = [np.asarray(r["blind"]["per_hop"][h]["soft_hit"], float) for r in runs]
            pooled = paired_bootstrap(np.concatenate(blind_), np.concatenate(oracle))
            out[name][h] = dict(
                seeds=[r["seed"] for r in runs],
                oracle_hits1=[float(x.mean()) for x in oracle],
                blind_hits1=[float(x.mean()) for x in blind_],
                blind_minus_oracle=pooled,
            )
            log(
                f"{name} {h}-hop over seeds {out[name][h]['seeds']}: blind - oracle "
                f"{pooled['diff']:+.3f} (95 % {pooled['ci'][0]:+.3f} to {pooled['ci'][1]:+.3f}, "
                f"n={pooled['n']})"
            )
    return out


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


@styled
def figure(reports: list[dict], example: Example):
    """Top: risk-coverage (main dataset, 2 hops), Hits@1 against lambda, Hits@1 per dataset
    and hop. Bottom: one 2-hop test question through the loop, its posterior bars with the
    candidates' evidence statuses and the supporting walks of its grounded answer."""
    main = reports[0]
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
                            label=f"{m} (AURC {two[m]['aurc']:.2f})")  # fmt: skip
    ax.set(ylabel="selective risk (1 - Hits@1)", ylim=(0, 1))
    ax.set_title(f"Risk-coverage, {main['dataset']} 2-hop")
    ax = axes["lam"]
    for h in (1, 2, 3):
        ax.semilogx(LAMBDA_GRID, main["per_hop"][h]["lambda_sweep"], label=f"{h}-hop")
    ax.axvline(main["lam"], color="k", ls=":", label=f"fitted $\\lambda$ = {main['lam']:.2f}")
    ax.set(
        xlabel=r"grounding strength $\lambda$ ($\kappa$ = 1)",
        ylabel="soft grounding Hits@1",
        ylim=(0, 1),
    )
    ax.set_title(f"Hits@1 against $\\lambda$, {main['dataset']}")
    ax.legend()
    ax = axes["hops"]
    labels = [f"{r['dataset']}\n{h}-hop" for r in reports for h in (1, 2, 3)]
    x = np.arange(len(labels))
    for j, m in enumerate(METHODS):
        vals = [r["per_hop"][h][m]["hits1"] for r in reports for h in (1, 2, 3)]
        ax.bar(x + (j - 1) * 0.27, vals, 0.27, label=m)
    ax.set(xticks=x, xlabel="dataset and hop count", ylabel="Hits@1 (test questions)", ylim=(0, 1))
    ax.set_xticklabels(labels)
    ax.set_title("Prior, hard (Eq. 6) and soft (Eq. 7) grounding per hop count")
    ax.legend()
    graph, result, answers = example
    ax = gplot.posterior_bars(result, axes["post"], max_candidates=8, labels=answers)
    ax.set_xlabel("candidate answer (label color: evidence status)")
    ax.set_title(
        textwrap.fill(f"One {main['dataset']} 2-hop test question: {result.question}", 90)
        + f"\nAxiom 8 decision: {result.decision.name.lower()}; grounded top candidate: "
        + answers[int(result.best)],
        fontsize=10,
    )
    gplot.evidence_paths(graph, result, axes["walks"])
    axes["walks"].set_title(
        f"Supporting walks of {answers[int(result.best)]} in the retrieved evidence "
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
            jax.clear_caches()  # compiled programs hold memory maps (see docs/limits.md)
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
    paths += save_figure(
        figure(reports, example), args.out / "grounded_qa.png", quick=not args.full
    )
    two = reports[0]["per_hop"][2]
    paths_two = reports[0]["blind_paths"]["per_hop"][2]
    blind_two = reports[0]["blind"]["per_hop"][2]
    print(
        f"grounded_hits1={two['soft']['hits1']:.4f} prior_hits1={two['prior']['hits1']:.4f} "
        f"hard_hits1={two['hard']['hits1']:.4f} aurc={two['soft']['aurc']:.4f} "
        f"oracle_hits1={two['soft']['hits1']:.4f} blind_hits1={blind_two['soft']['hits1']:.4f} "
        f"path_acc={paths_two['top1']:.4f} path_ceiling={paths_two['ceiling']:.4f}"
    )
    return paths


if __name__ == "__main__":
    main()
