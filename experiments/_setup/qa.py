"""The question-answering experiments' shared parts: settings (one ``GroundingConfig`` per
lambda), benchmarks and trained answerers (memoized), the scores of an outcome of any system
through the outcome protocol, and the blind relation-chain predictors."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from experiments._stats import wilson
from grounding import GroundingConfig, gibbs_log_posterior
from grounding.datasets import kgqa_benchmark
from grounding.graph import inverse_relation
from grounding.language import HashingEncoder
from grounding.learn import OneVsAllConfig, train_one_vs_all
from grounding.plans import (
    ChainReader,
    ComposedChainPredictor,
    LabelLookup,
    RelationChainPredictor,
    chain_accuracy,
)
from grounding.qa import (
    BlindQA,
    KGEAnswerer,
    Outcome,
    expected_calibration_error,
    fit_lambda,
    risk_coverage,
    score_probabilities,
)
from grounding.query import blind
from grounding.retrieval import PCR, SoftPCR, TextIndex

T = TypeVar("T")

__all__ = [
    "KAPPA",
    "config",
    "METHODS",
    "Setting",
    "SETTINGS",
    "BUDGET",
    "budget",
    "mean_budget",
    "settings",
    "build",
    "counter_evidence",
    "score",
    "unobserved_fate",
    "certificate",
    "evaluate",
    "LABEL_WEIGHTS",
    "blind_paths",
    "fitted",
]


# ------------------------------------------------------------ question-answering settings

KAPPA = 1.0


def config(lam: float) -> GroundingConfig:
    """The grounding settings of every QA experiment's systems: ``lam`` and the slack
    :data:`KAPPA` (the hard tolerance follows the support tolerance, ``GroundingConfig``'s
    default)."""
    return GroundingConfig(lam=lam, kappa=KAPPA)


METHODS = ("prior", "hard", "soft")


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    questions_per_hop: int
    epochs: int
    negatives: bool = False
    dim: int = 256  # the answerer's (TransE) embedding dimension
    wording: str = "held-out"  # the benchmark's question texts (kgqa_benchmark's wording)


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
    bench = kgqa_benchmark(
        setting.name,
        questions_per_hop=setting.questions_per_hop,
        seed=seed,
        wording=setting.wording,
    )
    answerer, fit = _answerer(dataclasses.replace(setting, wording="held-out"), seed)
    index = TextIndex(bench.graph)
    pcr = {h: PCR(index, max_hops=h) for h in (1, 2, 3)}
    soft = {h: SoftPCR(index, max_hops=h) for h in (1, 2, 3)}  # the PCR paper's constants
    return bench, answerer, (pcr, soft), fit


@functools.lru_cache(maxsize=4)
def _answerer(setting: Setting, seed: int):
    """The trained answerer of a setting (the wording of the texts does not reach it: it
    trains on the evidence and fits its temperature on the validation questions' answers,
    read off the train and valid triples: :meth:`~grounding.datasets.KGQABenchmark.fitting_answers`)."""
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
        fit = train_one_vs_all(bench.kg, "transe", cfg)  # a progress bar on stderr
    model = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), fit.model)
    answerer = KGEAnswerer(model, bench.kg.entities, bench.kg.relations)
    valid = bench.split("valid")
    # gold answers read off train + valid only: no test triple reaches a fitted value
    answerer.fit_temperature(valid, [bench.fitting_answers(q) for q in valid])
    return answerer, fit


def counter_evidence(bench) -> frozenset:
    """CoDEx-S's hard negatives (valid + test), both directions, as counter-evidence triples."""
    kg = bench.kg
    out = set()
    for split in ("valid", "test"):
        for h, r, t in kg.negative_triples(split):
            out.add((kg.entities[h], kg.relations[r], kg.entities[t]))
            out.add((kg.entities[t], inverse_relation(kg.relations[r]), kg.entities[h]))
    return frozenset(out)


# -------------------------------------------------------------------- scoring QA outcomes


def score(outcome: Outcome, method: str, gold: Sequence[str] | None = None) -> dict[str, float]:
    """Hits@1, answer-set F1 and confidence of one outcome of any system (the outcome
    protocol's :meth:`~grounding.qa.Outcome.answer_probabilities`), oracle or blind, against
    ``gold`` (default: the outcome's own question's answers; a blind outcome carries none); an
    outcome without an answer distribution (no result, or the hard rule abstained) abstains."""
    gold = outcome.question.answers if gold is None else gold
    answers, probs = outcome.answer_probabilities(method)
    if not answers:
        return score_probabilities((), np.zeros(0), gold, abstained=True)
    return score_probabilities(answers, probs, gold)


BUDGET = ("answerer_calls", "grounding_passes", "evidence_edges")


def budget(outcome) -> dict[str, float]:
    """What one question cost a system: calls to the answerer (PankRAG: one per anchor of
    every step it ran; BlindQA: one per predicted chain; the one-step loop: one), grounding
    passes (one per grounded step or question) and evidence edges (of every state grounded
    against)."""
    steps = getattr(outcome, "steps", None)
    if steps is not None:
        ran = list(steps.values())
        return dict(
            answerer_calls=float(sum(len(s.anchors) for s in ran)),
            grounding_passes=float(sum(s.result is not None for s in ran)),
            evidence_edges=float(
                sum(s.retrieval.evidence.graph.n_edges for s in ran if s.retrieval is not None)
            ),
        )
    chains = getattr(outcome, "chains", None)
    evidence = getattr(outcome, "evidence", None)
    return dict(
        answerer_calls=float(len(chains) if chains is not None else 1),
        grounding_passes=float(outcome.result is not None),
        evidence_edges=float(evidence.graph.n_edges if evidence is not None else 0),
    )


def mean_budget(outcomes) -> dict[str, float]:
    """:func:`budget` averaged over questions."""
    rows = [budget(o) for o in outcomes]
    return {k: float(np.mean([r[k] for r in rows])) if rows else 0.0 for k in BUDGET}


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


# ------------------------------------------------------------------- blind relation paths

LABEL_WEIGHTS = (0.0, 0.5, 1.0, 2.0)  # beta of the relation-path predictor, chosen on valid


def blind_paths(bench, log) -> tuple[dict, dict]:
    """Relation paths predicted from the blind question (text and topic) by four predictors
    fitted on the training questions, their choices made on validation: the chain reader
    (:class:`~grounding.plans.ChainReader`, the blind systems' predictor: phrasings learned,
    weights and temperature chosen on validation), label lookup (its baseline,
    :class:`~grounding.plans.LabelLookup`), chains composed relation by relation over the graph
    (the former predictor) and the training chains ranked (whose ceiling is the share of test
    chains seen in training), each of the last two with its label weight chosen on
    validation. Top-1 and top-3 path accuracy per hop on test with Wilson intervals, the
    ceiling beside them. Returns the report and the fitted ``reader``, ``lookup`` and
    ``composed`` predictors."""
    enc = HashingEncoder()
    train, valid, test = (bench.split(s) for s in ("train", "valid", "test"))
    seen = [q.chain for q in train]

    def scored(predictor) -> dict:
        acc = chain_accuracy(predictor, test, seen=seen)
        top = predictor.predict([blind(q) for q in test], 1)
        for h, r in acc.items():
            r["top1_ci"], r["topk_ci"] = (wilson(r[m] * r["n"], r["n"]) for m in ("top1", "topk"))
            # per question, for paired comparisons between predictors
            r["hit"] = [float(bool(p) and p[0][0] == tuple(q.chain))
                        for q, p in zip(test, top) if q.hops == h]  # fmt: skip
        return acc

    out, chosen = {}, {}
    for kind, make in (("reader", ChainReader), ("lookup", LabelLookup)):
        p = make(bench.relation_labels, bench.graph).fit(train, valid)
        out[kind] = dict(weights=p.weights, temperature=p.temperature, per_hop=scored(p))
        chosen[kind] = p
    makers = {
        "composed": lambda b: ComposedChainPredictor(
            enc.encode, bench.relation_labels, bench.graph, label_weight=b
        ),
        "training_chains": lambda b: RelationChainPredictor(
            enc.encode, bench.relation_labels, bench.graph, b
        ),
    }

    def mean_top1(acc: dict) -> float:
        return float(np.mean([r["top1"] for r in acc.values()]))

    for kind, make in makers.items():
        # the prototypes do not depend on the label weight: fit once, vary it per copy
        fitted = make(LABEL_WEIGHTS[0]).fit(train)
        fits = {b: _with_label_weight(fitted, b) for b in LABEL_WEIGHTS}
        valid_top1 = {b: mean_top1(chain_accuracy(p, valid, seen=seen)) for b, p in fits.items()}
        beta = max(LABEL_WEIGHTS, key=lambda b: (valid_top1[b], -b))
        out[kind] = dict(label_weight=beta, valid_top1=valid_top1, per_hop=scored(fits[beta]))
        chosen[kind] = fits[beta]
    log(
        f"{bench.name} blind relation paths, top-1 reader / lookup / composed / training "
        "chains (ceiling): "
        + " ".join(
            f"{h}-hop {r['top1']:.3f} / {out['lookup']['per_hop'][h]['top1']:.3f} / "
            f"{out['composed']['per_hop'][h]['top1']:.3f} / "
            f"{out['training_chains']['per_hop'][h]['top1']:.3f} ({r['ceiling']:.3f})"
            for h, r in out["reader"]["per_hop"].items()
        )
    )
    return out, {k: chosen[k] for k in ("reader", "lookup", "composed")}


def _with_label_weight(predictor: T, weight: float) -> T:
    """A fitted chain predictor with another label weight (read only when it predicts)."""
    out = copy.copy(predictor)
    out.label_weight = float(weight)
    return out


def fitted(
    make: Callable[[GroundingConfig], T], bench, valid: Sequence | None = None
) -> tuple[T, float]:
    """A QA system with its lambda fitted on validation questions (``valid``, default all of
    ``bench``'s): ``make(config)`` builds it; built at lambda = 1 (the energies do not depend
    on lambda) it answers them (a :class:`~grounding.qa.BlindQA` sees ``blind(q)`` only),
    :func:`grounding.qa.fit_lambda` fits lambda on their gold answers read off the train and
    valid triples (:meth:`~grounding.datasets.KGQABenchmark.fitting_answers`: no test triple
    reaches the fit), and the system is built again at that lambda."""
    valid = bench.split("valid") if valid is None else valid
    probe = make(config(1.0))
    shown = [blind(q) for q in valid] if isinstance(probe, BlindQA) else list(valid)
    lam = fit_lambda(probe.answer_batch(shown), [bench.fitting_answers(q) for q in valid])
    return make(config(lam)), lam
