"""MetaQA on its full and its half knowledge base, answered blind, beside the published table.

MetaQA (Zhang et al., AAAI 2018) asks 1-, 2- and 3-hop movie questions written by its authors;
with half of its knowledge base's triples removed at random ("KG-50") it is the field's test of
answering from incomplete evidence. A blind system (:class:`grounding.qa.BlindQA`) sees each
test question's text and bracketed topic, nothing else:

- **chains**: :class:`grounding.plans.ChainClassifier` reads the relation chains from the text
  (word n-grams with the topic blanked, and the topic's relations in the knowledge base in
  use), trained on MetaQA's ``qa_dev`` questions only: a share of dev is held out per hop
  (the *fitting* questions: the KGE temperature and lambda), and the rest is split by wording
  (:func:`grounding.plans.wording_split`: 30 % of each chain's wordings held out) to choose
  the classifier's penalty and temperature on wordings it never saw, after which it is fitted
  again on all of that rest;
- **prior**: a knowledge-graph embedding (1-vs-all, reciprocal relations, N3 penalty) trained on the
  knowledge base in use (the half for KG-50), over the full base's entity names; it answers
  the chain from the topic hop by hop with a beam of 8 entities, or by composing its maps
  (:class:`grounding.prior.KGEAnswerer`, ``beam``); quick mode runs ComplEx with the beam,
  ``--full`` chooses among ComplEx and TransE, each with and without the beam, by the fitting
  questions' soft Hits@1;
- **evidence**: the walks of the predicted chains from the topic in the same knowledge base,
  none passing back through the topic (:class:`grounding.retrieval.ChainWalks`, as MetaQA's
  answers are read); each chain's candidates are the prior's top 20 and up to 50 entities its
  walks reach;
- :func:`grounding.ground` (``kappa = 1``, lambda fitted on the fitting questions) and the
  answer is the posterior's top.

No test question reaches a fitted choice. Rows per knowledge base and hop: the prior alone,
the evidence alone (hard grounding, Eq. (6)), soft grounding (Eq. (7)), and soft grounding
with the gold chain (*oracle*, labelled), each with Hits@1 and a 95 % interval (a bootstrap
over questions; over seeds too with ``--seeds`` > 1), soft - prior paired; the published
systems beside them, each with the level verdict of the results pages (*holds* when our
interval contains the published value, else *fails*, with the side ours lies on); the share of test questions whose gold chain reaches a gold answer in the knowledge
base in use (the evidence's ceiling). A completeness sweep (Hits@1 of prior, hard and soft as
the knowledge base keeps 100, 75, 50 and 25 % of its triples, same questions) and an error
analysis of the blind soft misses (at the chain, at missing evidence, at the candidates, at
the ranking) are written beside them.

``--llm-per-hop N`` (300 with ``--full``): SmolLM2-135M-Instruct
(:class:`grounding.language.LocalLM`, in-process) proposes its 4 best answers by beam search
to N test questions per hop (1 and 2 hops), after a system line and six worked dev questions;
each answer and 10 names of the base (the ends of the top predicted chain's walks, then the
KGE prior's best) are scored by the model's ``log p(answer, end of turn | prompt)``, the
complete-answer score of :meth:`~grounding.language.LocalLM.score`; :class:`BlindQA` grounds
those candidates blind on each base (every predicted chain claims each of them), lambda fitted
on 25 dev fitting questions per hop. Reported: Hits@1 of the model's first answer, of its prior
over the candidates, of soft and hard grounding; how often the gold answer is among the
model's own answers; how often its first answer copies a worked example; and what grounding
does to the prior's first answer.

``--throughput`` answers every test question (39,093) blind on the half base with the seed-0
system and times the loop and its stages (``metaqa_throughput.json``).

``--questions FILE --hops N --kb half|full`` answers any file in MetaQA's format
(``question<TAB>answer|answer``, the answer column optional) and writes ``answers.jsonl``, one
record per question in order: ``question``, ``topic``, ``chain``, ``answer`` (the top
candidate's name, null when there is none), ``decision``, ``candidates`` (up to 10: ``name``,
``prior``, ``posterior``, ``status``).

Final line: ``half_hits1_1hop= half_hits1_2hop= half_hits1_3hop= full_hits1_1hop=
full_hits1_2hop= full_hits1_3hop= half_prior_hits1_1hop= half_prior_hits1_2hop=
half_prior_hits1_3hop= llm_prior_hits1= llm_soft_hits1=`` (blind soft grounding, seed 0; the
last two: SmolLM2's prior and soft grounding on 1-hop questions on the half base, ``nan``
without ``--llm-per-hop``).
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments._io import (
    atomic_write_text,
    checked_out_dir,
    float64,
    parser,
    plt,
    save_figure,
    styled,
    write_csv,
    write_json,
)
from experiments._setup import KAPPA, score
from experiments._stats import seed_bootstrap, seed_t_interval, verdict
from grounding import EvidenceStatus
from grounding.datasets import (
    load_metaqa,
    metaqa_entities,
    metaqa_graph,
    metaqa_kb,
    read_metaqa_questions,
)
from grounding.datasets.kg import KGSplits
from grounding.datasets.metaqa import METAQA_RELATIONS
from grounding.language import AnswerLinker, LocalLM, normalize_answer
from grounding.learn import ReciprocalModel
from grounding.learn.onevsall import OneVsAllConfig, train_one_vs_all
from grounding.plans import ChainClassifier, wording_split
from grounding.prior import KGEAnswerer, LocalCandidateModel
from grounding.qa import BlindQA, fit_lambda
from grounding.retrieval import ChainWalks
from grounding.solver import GroundingConfig

METHODS = ("prior", "hard", "soft")
KBS = ("half", "full")
K_CHAINS, K_CANDIDATES, WALK_CANDIDATES = 3, 20, 50
#: MetaQA's answers never come by a walk back through the topic ("movies whose writers also
#: wrote X" asks for X's writers' *other* movies): measured on dev with the full base, 90.1 %
#: of the ends of the gold 3-hop chain's walks are gold answers, 99.98 % without such walks.
REVISIT = False

#: Published Hits@1 (%) on MetaQA's test questions (collected in Saxena, Tripathi & Talukdar,
#: "Improving Multi-hop Question Answering over Knowledge Graphs using Knowledge Base
#: Embeddings", ACL 2020, Table 2; NSM: He et al., WSDM 2021; TransferNet: Shi et al., EMNLP
#: 2021), as listed in the shipped data's README.
PUBLISHED = {
    "half": {
        "KV-Mem": (63.6, 41.8, 37.6),
        "GraftNet": (64.0, 52.6, 59.2),
        "PullNet": (65.1, 52.1, 59.7),
        "EmbedKGQA": (83.9, 91.8, 70.3),
    },
    "full": {
        "KV-Mem": (96.2, 82.7, 48.9),
        "VRN": (97.5, 89.9, 62.5),
        "GraftNet": (97.0, 94.8, 77.7),
        "PullNet": (97.0, 99.9, 91.4),
        "EmbedKGQA": (97.5, 98.8, 94.8),
        "NSM": (97.1, 99.9, 98.9),
        "TransferNet": (97.5, 100.0, 100.0),
    },
}


#: The N3 penalty's weight (Lacroix, Usunier and Obozinski, "Canonical Tensor Decomposition for
#: Knowledge Base Completion", ICML 2018), chosen on dev: the gold chain's prior Hits@1 on 300
#: dev questions per hop (seed 0, half base, ComplEx of dimension 64, 4 epochs) read
#: .630 / .403 / .373 (1-3 hops) without it, .633 / .453 / .447 at 0.01, .623 / .433 / .377 at
#: 0.05 and .440 / .257 / .130 at 0.2.
N3 = 0.01


@dataclasses.dataclass(frozen=True)
class Size:
    """How much a run reads and trains."""

    test_per_hop: (
        int | None
    )  # test questions per hop (None: all), the first ones of a fixed shuffle
    fit_per_hop: int  # dev questions held out per hop for the temperature and lambda
    dev_per_hop: int | None  # dev questions per hop the classifier reads (None: the rest)
    kinds: tuple[str, ...]  # KGE kinds chosen among
    beams: tuple[int, ...]  # answerer beams chosen among (0: composed maps)
    dim: int
    epochs: int
    sweep_per_hop: int  # test questions per hop of the completeness sweep
    n3: float = N3  # the weight of the embedding's N3 penalty


QUICK = Size(150, 100, 1500, ("complex",), (8,), 64, 4, 100)
FULL = Size(None, 500, None, ("complex", "transe"), (0, 8), 128, 20, 1000)
SWEEP = (1.0, 0.75, 0.5, 0.25)


# ------------------------------------------------------------------------------ the system
@dataclasses.dataclass
class System:
    """A fitted blind system on one knowledge base, and what was chosen on dev."""

    kb: str | float
    qa: BlindQA
    classifier: ChainClassifier
    answerer: KGEAnswerer
    graph: object
    fitted: dict


def config(lam: float) -> GroundingConfig:
    """The grounding settings: ``lam``, the slack ``kappa = 1`` of every QA experiment, and no
    supporting walks reported (the rows read answers only)."""
    return GroundingConfig(lam=lam, kappa=KAPPA, n_paths=0)


def dev_split(size: Size, seed: int) -> tuple[list, list]:
    """The dev questions as (fitting questions, classifier questions): ``fit_per_hop`` per hop
    drawn with ``seed``, and the rest (at most ``dev_per_hop`` per hop)."""
    fit, rest = [], []
    for h in (1, 2, 3):
        dev = list(load_metaqa(h, "dev"))
        random.Random(seed).shuffle(dev)
        fit += dev[: size.fit_per_hop]
        rest += dev[size.fit_per_hop :][: size.dev_per_hop]
    return fit, rest


def train_prior(kb: str | float, kind: str, size: Size, seed: int) -> tuple[ReciprocalModel, float]:
    """A KGE model trained on the knowledge base ``kb`` (every triple; 2,000 of them are
    watched for early stopping, a measure of fit, not of generalization), over the full
    base's entity names (:func:`~grounding.datasets.metaqa_entities`); and its filtered MRR
    on the watched triples."""
    entities = metaqa_entities()
    e_ix = {e: i for i, e in enumerate(entities)}
    r_ix = {r: i for i, r in enumerate(METAQA_RELATIONS)}
    train = np.array([(e_ix[h], r_ix[r], e_ix[t]) for h, r, t in metaqa_kb(kb, seed)])
    watched = train[np.random.default_rng(seed).choice(len(train), 2000, replace=False)]
    kg = KGSplits(f"metaqa-{kb}", entities, METAQA_RELATIONS, train, watched, watched[:0])
    cfg = OneVsAllConfig(
        dim=size.dim,
        epochs=size.epochs,
        n3=size.n3,
        lr=0.1,
        init_scale=0.1,
        n_shared_negatives=4096,
        eval_every=size.epochs,
        patience=1,
        seed=seed,
    )
    with jax.enable_x64(False):  # a model fit in 32-bit floats, widened after
        fit = train_one_vs_all(kg, kind, cfg, progress=False)
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), fit.model), fit.best_valid_mrr


def build(kb: str | float, size: Size, seed: int, log) -> System:
    """The blind system on knowledge base ``kb`` (``"half"``, ``"full"`` or a fraction drawn
    with ``seed``), every choice made on dev questions."""
    t0 = time.perf_counter()
    graph = metaqa_graph(kb, seed)
    fit, rest = dev_split(size, seed)
    train, valid = wording_split(rest, 0.3, seed)
    classifier = ChainClassifier(graph).fit(train, valid, refit=True)
    usable = [q for q in fit if q.answers]
    fitted: dict = dict(
        penalty=classifier.penalty,
        chain_temperature=classifier.temperature,
        held_out_wordings_top1=classifier.validation[classifier.penalty],
        kinds={},
    )
    best = None
    many = len(size.kinds) * len(size.beams) > 1
    shown = [q.blind() for q in usable]
    for kind in size.kinds:
        model, mrr = train_prior(kb, kind, size, seed)
        for beam in size.beams:
            answerer = KGEAnswerer(model, metaqa_entities(), METAQA_RELATIONS, beam=beam)
            known = [q for q in usable if q.topic in answerer._e_ix]
            answerer.fit_temperature(known, [q.answers for q in known])
            lam = fit_lambda(system_at(answerer, classifier, graph, 1.0).answer_batch(shown),
                             [q.answers for q in usable])  # fmt: skip
            qa = system_at(answerer, classifier, graph, lam)
            # the prior is chosen by the fitting questions' soft Hits@1 (one choice: not run)
            outs = qa.answer_batch(shown) if many else None
            hits = float(np.mean(hits_of(outs, usable, "soft"))) if many else None
            fitted["kinds"][f"{kind}/beam {beam}"] = dict(
                watched_mrr=mrr, temperature=answerer.temperature, lam=lam, fit_soft_hits1=hits
            )
            if best is None or (hits is not None and hits > best[0]):  # (None: one choice)
                best = (hits, f"{kind}/beam {beam}", answerer, qa)
    _, kind, answerer, qa = best
    fitted.update(kind=kind, lam=qa.config.lam, temperature=answerer.temperature)
    log(
        f"metaqa {kb} (seed {seed}): chains (held-out wordings top-1 "
        f"{fitted['held_out_wordings_top1']:.3f}), prior {kind} (T={answerer.temperature:.3g}), "
        f"lambda={qa.config.lam:.3g} ({time.perf_counter() - t0:.0f} s)"
    )
    return System(kb, qa, classifier, answerer, graph, fitted)


class GoldChains:
    """The oracle's chain predictor (labelled *oracle*): the gold chain of each question,
    looked up by its text and topic."""

    def __init__(self, questions: Sequence):
        self.chain = {(q.text, q.topic): q.chain for q in questions}

    def predict(self, questions, k: int = 1):
        return [[(self.chain[(q.text, q.topic)], 1.0)] for q in questions]


def system_at(answerer, predictor, graph, lam: float, k_chains: int = K_CHAINS) -> BlindQA:
    """The system of these parts at ``lam`` (the blind one, or the oracle's with
    :class:`GoldChains` and one chain)."""
    return BlindQA(
        answerer, predictor, ChainWalks(graph, revisit=REVISIT), config(lam), k_chains=k_chains,
        k_candidates=K_CANDIDATES, walk_candidates=WALK_CANDIDATES,
    )  # fmt: skip


def hits_of(outcomes, questions, method: str) -> np.ndarray:
    return np.array([score(o, method, q.answers)["hit"] for o, q in zip(outcomes, questions)])


def sample_of_test(h: int, n: int | None) -> list:
    """The first ``n`` test questions of hop ``h`` after a fixed shuffle (all when ``None``)."""
    qs = list(load_metaqa(h, "test"))
    random.Random(1234).shuffle(qs)
    return qs if n is None else qs[:n]


def reaches_gold(walks: ChainWalks, q) -> bool:
    """Whether the gold chain's walks from the topic reach a gold answer."""
    if not walks.graph.has_entity(q.topic):
        return False
    _, ends, _ = walks.walk(q.topic, [q.chain])
    return bool(set(ends[0]) & set(q.answers))


def evaluate(system: System, questions: list, log) -> dict:
    """Per-question hits of prior, hard and soft (blind), soft with the gold chain (oracle),
    the evidence's ceiling, and the cause of every blind soft miss."""
    t = time.perf_counter()
    outcomes = system.qa.answer_batch([q.blind() for q in questions])
    seconds = time.perf_counter() - t
    oracle = system_at(
        system.answerer, GoldChains(questions), system.graph, system.fitted["lam"], 1
    )
    gold_outcomes = oracle.answer_batch([q.blind() for q in questions])
    out = {m: hits_of(outcomes, questions, m) for m in METHODS}
    out["oracle"] = hits_of(gold_outcomes, questions, "soft")
    walks = ChainWalks(system.graph, revisit=REVISIT)
    out["ceiling"] = np.array([reaches_gold(walks, q) for q in questions], float)
    out["causes"] = [
        miss_cause(o, q, hit, reach)
        for o, q, hit, reach in zip(outcomes, questions, out["soft"], out["ceiling"])
    ]
    out["chain_top1"] = np.array([bool(o.chains) and o.chains[0][0] == q.chain
                                  for o, q in zip(outcomes, questions)], float)  # fmt: skip
    out["questions_per_second"] = len(questions) / seconds
    return out


CAUSES = ("chain", "evidence", "candidates", "ranking", "no result")


def miss_cause(outcome, q, hit: float, reach: float) -> str:
    """Why a blind soft miss missed: the top chain is not the gold one (*chain*); it is, but the
    knowledge base in use carries no walk of it to a gold answer (*evidence*: the prior had to
    answer); a walk reaches one but no gold answer is a candidate (*candidates*); one is, and
    another answer was ranked first (*ranking*); no result at all (*no result*). ``""`` for a
    hit."""
    if hit:
        return ""
    if outcome.result is None:
        return "no result"
    if not outcome.chains or outcome.chains[0][0] != q.chain:
        return "chain"
    if not reach:
        return "evidence"
    answers, _ = outcome.answer_probabilities("soft")
    return "ranking" if set(answers) & set(q.answers) else "candidates"


# ------------------------------------------------------------------------------ reports
def interval(per_seed: list[np.ndarray]) -> dict:
    """Hits@1 (pooled) with its 95 % interval: a bootstrap over questions (one seed) or over
    seeds then questions (several), and the seed-level t-interval with two seeds or more."""
    zeros = [np.zeros_like(x) for x in per_seed]
    boot = seed_bootstrap(per_seed, zeros)
    row = dict(hits1=boot["diff"], ci=boot["ci"], n=boot["n"], seeds=len(per_seed))
    if len(per_seed) > 1:
        row["seed_level"] = seed_t_interval([float(x.mean()) for x in per_seed])
    return row


def against_published(ours: dict, published: float) -> str:
    """The level verdict of docs/results/index.md for a published Hits@1 (%): *holds* when our
    95 % interval (the seed-level one where there is one) contains it, else *fails*, with the
    side ours lies on."""
    lo, hi = (100 * x for x in ours.get("seed_level", ours)["ci"])
    reading = verdict((lo, hi), published, level=True)
    if reading == "fails":
        reading += " (ours lower)" if hi < published else " (ours higher)"
    return reading


def report_kb(kb: str, runs: list[dict]) -> dict:
    """The table of one knowledge base over seeds: per hop, each method's interval, soft -
    prior paired, the oracle, the ceiling, the published rows and the miss causes."""
    out: dict = {}
    for h in (1, 2, 3):
        per = [r[h] for r in runs]
        row: dict = {m: interval([p[m] for p in per]) for m in (*METHODS, "oracle")}
        row["soft_vs_prior"] = seed_bootstrap([p["soft"] for p in per], [p["prior"] for p in per])
        row["soft_vs_hard"] = seed_bootstrap([p["soft"] for p in per], [p["hard"] for p in per])
        row["oracle_vs_soft"] = seed_bootstrap([p["oracle"] for p in per], [p["soft"] for p in per])
        row["ceiling"] = float(np.mean(per[0]["ceiling"]))
        row["chain_top1"] = float(np.mean(np.concatenate([p["chain_top1"] for p in per])))
        causes = [c for p in per for c in p["causes"] if c]
        n = sum(len(p["causes"]) for p in per)
        row["misses"] = {c: causes.count(c) / n for c in CAUSES}
        row["questions_per_second"] = float(np.mean([p["questions_per_second"] for p in per]))
        row["published"] = {
            name: dict(hits1=v[h - 1], verdict=against_published(row["soft"], v[h - 1]))
            for name, v in PUBLISHED[kb].items()
        }
        out[h] = row
    return out


def sweep(size: Size, log, built: dict) -> dict:
    """Hits@1 of prior, hard and soft as the knowledge base keeps a fraction of its triples
    (seed 0; the same questions for every fraction). ``built``: systems already built for
    some fractions (the full base is 100 %; the shipped half is the 50 % draw of seed 0)."""
    questions = {h: sample_of_test(h, size.sweep_per_hop) for h in (1, 2, 3)}
    out: dict = {}
    for frac in SWEEP:
        system = built[frac] if frac in built else build(frac, size, 0, log)
        out[frac] = {}
        for h in (1, 2, 3):
            outs = system.qa.answer_batch([q.blind() for q in questions[h]])
            out[frac][h] = {m: float(np.mean(hits_of(outs, questions[h], m))) for m in METHODS}
        log(f"metaqa sweep {frac:.0%}: " + " ".join(
            f"{h}-hop soft={out[frac][h]['soft']:.3f}" for h in (1, 2, 3)))  # fmt: skip
    return out


@styled
def sweep_figure(data: dict):
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), sharey=True)
    xs = [100 * f for f in SWEEP]
    for h, ax in zip((1, 2, 3), axes):
        for m, style in zip(METHODS, ("o:", "s--", "^-")):
            ax.plot(xs, [data[f][h][m] for f in SWEEP], style, label=m)
        ax.set_title(f"{h}-hop")
        ax.set_xlabel("triples kept (%)")
        ax.set_ylabel("Hits@1 (blind)")
        ax.invert_xaxis()
    axes[0].legend(frameon=False)
    fig.suptitle("MetaQA as the knowledge base loses triples")
    return fig


# ------------------------------------------------------------------------------ any question file
def answer_file(path: Path, hops: int | None, kb: str, size: Size, out: Path, log) -> Path:
    """Answer every question of a MetaQA-format file; ``out/answers.jsonl``, one record per
    question, in order."""
    questions = read_metaqa_questions(path, hops)
    system = build(kb, size, 0, log)
    outcomes = system.qa.answer_batch([q.blind() for q in questions])
    lines = [json.dumps(record(q, o)) for q, o in zip(questions, outcomes)]
    return atomic_write_text(out / "answers.jsonl", "\n".join(lines) + "\n")


def record(q, outcome) -> dict:
    """One question's answer record (see the module docstring)."""
    result = outcome.result
    chain = list(outcome.chains[0][0]) if outcome.chains else None
    rec = dict(question=q.text, topic=q.topic, chain=chain, answer=None, decision=None,
               candidates=[])  # fmt: skip
    if result is None:
        rec["decision"] = "FAILED: " + (outcome.reason or "")
        return rec
    names, post = result.answer_probabilities("soft")
    prior = dict(zip(*result.answer_probabilities("prior")))
    status: dict[str, int] = {}
    for a, s in zip(result.answers, np.asarray(result.status)):
        if a is not None:
            status[a] = min(status.get(a, 99), int(s))
    rec["answer"] = names[0] if names else None
    rec["decision"] = str(result.decision)
    rec["candidates"] = [
        dict(
            name=a,
            prior=float(prior.get(a, 0.0)),
            posterior=float(p),
            status=str(EvidenceStatus(status[a])),
        )  # fmt: skip
        for a, p in list(zip(names, post))[:10]
    ]
    return rec


# ------------------------------------------------------------------------------ a language model
#: The local model's system line; its worked examples are dev questions (:func:`llm_examples`).
LLM_SYSTEM = "Answer the question about films with one name, title, year, language or genre."
LLM_HOPS = (1, 2)
LLM_BEAMS, LLM_POOL, LLM_FIT, LLM_TOKENS = 4, 10, 25, 10


def llm_examples(seed: int = 0, n: int = 6) -> list:
    """The worked examples' questions: 1-hop dev questions of ``n`` different relations (a
    fixed draw), each shown answered by its first answer."""
    dev = list(load_metaqa(1, "dev"))
    random.Random(seed).shuffle(dev)
    out, seen = [], set()
    for q in dev:
        if q.chain not in seen and q.answers and len(out) < n:
            seen.add(q.chain)
            out.append(q)
    return out


def remember_beams(lm: LocalLM) -> LocalLM:
    """``lm`` answering each (question, k) once: the systems on both bases share its beams
    (the model is deterministic; only the pool of names it scores differs by base)."""
    memo: dict = {}
    ask = lm.propose_batch

    def propose_batch(questions, k, **kw):
        todo = [q for q in dict.fromkeys(questions) if (q, k) not in memo]
        memo.update(zip([(q, k) for q in todo], ask(todo, k, **kw) if todo else []))
        return [memo[(q, k)] for q in questions]

    lm.propose_batch = propose_batch  # (an instance attribute: this model only)
    return lm


def llm_pool(system: System, k: int):
    """``question -> names`` the model scores beside its own answers, blind: the entities the
    walks of the question's top predicted chain reach in the base in use, best first by the
    system's KGE prior, then the prior's best, ``k`` in all."""
    walks = ChainWalks(system.graph, revisit=REVISIT)
    index = {e: i for i, e in enumerate(system.answerer.entities)}

    def pool(question) -> list[str]:
        [chains] = system.classifier.predict([question], 1)
        if not chains or not system.graph.has_entity(question.topic):
            return []
        chain = chains[0][0]
        scores = system.answerer.log_scores(question.topic, chain)
        _, [ends], _ = walks.walk(question.topic, [chain])
        ends = np.array([index[e] for e in ends if e in index], np.int64)
        ranked = [*ends[np.argsort(-scores[ends], kind="stable")], *np.argsort(-scores)[: 2 * k]]
        names = [
            system.answerer.entities[i] for i in dict.fromkeys(ranked) if np.isfinite(scores[i])
        ]
        return names[:k]

    return pool


def llm_rows(systems: dict[str, System], per_hop: int, log) -> dict:
    """SmolLM2 (:class:`~grounding.language.LocalLM`) proposes its ``LLM_BEAMS`` best answers
    to ``per_hop`` test questions per hop (1 and 2) and scores them beside ``LLM_POOL`` names
    of the base (:func:`llm_pool`); :class:`~grounding.qa.BlindQA` grounds them blind against
    the walks of the predicted chains, lambda fitted on ``LLM_FIT`` dev fitting questions per
    hop. Per base and hop: Hits@1 of the model's first answer, of its prior over the
    candidates, of soft and hard grounding (soft - prior paired), how often the gold answer is
    among the model's own answers, how often its first answer copies a worked example, and
    what grounding does to the prior's first answer (wrong -> right, right -> wrong, wrong ->
    another wrong; with the number of right priors)."""
    shown = llm_examples()
    examples = [(q.text, q.answers[0]) for q in shown]
    lm = remember_beams(
        LocalLM.load(system=LLM_SYSTEM, examples=examples, max_answer_tokens=LLM_TOKENS)
    )
    # a first answer that names an example's answer or topic copies the prompt
    copied = {normalize_answer(x) for q in shown for x in (q.answers[0], q.topic)}
    linker = AnswerLinker(metaqa_entities())
    fit = [q for q in dev_split(dataclasses.replace(QUICK, fit_per_hop=LLM_FIT), 0)[0]
           if q.hops in LLM_HOPS and q.answers]  # fmt: skip
    test = {h: sample_of_test(h, per_hop) for h in LLM_HOPS}
    out: dict = dict(system=LLM_SYSTEM, examples=examples, beams=LLM_BEAMS, pool=LLM_POOL)
    for kb, system in systems.items():
        model = LocalCandidateModel(lm, linker, pool=llm_pool(system, LLM_POOL))
        t = time.perf_counter()
        lam = fit_lambda(llm_system(model, system, 1.0).answer_batch([q.blind() for q in fit]),
                         [q.answers for q in fit])  # fmt: skip
        out[kb] = dict(lam=lam)
        for h in LLM_HOPS:
            qs = test[h]
            outs = llm_system(model, system, lam).answer_batch([q.blind() for q in qs])
            row = {m: hits_of(outs, qs, m) for m in METHODS}
            own = [model.answers(q.blind(), LLM_BEAMS) for q in qs]
            gold = [{normalize_answer(a) for a in q.answers} for q in qs]
            first = [normalize_answer(a[0][0]) if a else "" for a in own]
            row["first"] = np.array([f in g for f, g in zip(first, gold)], float)
            knows = np.mean(
                [bool(g & {normalize_answer(t) for t, _ in a}) for a, g in zip(own, gold)]
            )
            tops = {m: [top_answer(o, m) for o in outs] for m in ("prior", "soft")}
            p, s = row["prior"], row["soft"]
            changed = np.array([a != b for a, b in zip(tops["prior"], tops["soft"])])
            out[kb][h] = dict(
                **{m: interval([row[m]]) for m in (*METHODS, "first")},
                soft_vs_prior=seed_bootstrap([s], [p]),
                gold_among_own_answers=float(knows),
                answered=float(np.mean([bool(a) for a in own])),
                copy_rate=float(np.mean([f in copied for f in first if f])) if any(first) else 0.0,
                right_priors=int(p.sum()),
                overturned=dict(
                    wrong_to_right=int(((p == 0) & (s == 1)).sum()),
                    right_to_wrong=int(((p == 1) & (s == 0)).sum()),
                    wrong_to_other_wrong=int(((p == 0) & (s == 0) & changed).sum()),
                    n=len(qs),
                ),
            )
            r = out[kb][h]
            log(f"metaqa llm {kb} {h}-hop: first={r['first']['hits1']:.3f} "
                f"prior={r['prior']['hits1']:.3f} soft={r['soft']['hits1']:.3f} "
                f"hard={r['hard']['hits1']:.3f} own={knows:.3f} copy={r['copy_rate']:.3f} "
                f"{r['overturned']} ({time.perf_counter() - t:.0f} s)")  # fmt: skip
    return out


def llm_system(model, system: System, lam: float) -> BlindQA:
    """The language model's candidates grounded blind by the system's chains and walks."""
    return BlindQA(
        model, system.classifier, ChainWalks(system.graph, revisit=REVISIT), config(lam),
        k_chains=K_CHAINS, k_candidates=LLM_BEAMS,
    )  # fmt: skip


def top_answer(outcome, method: str) -> str | None:
    """The first answer of ``method`` (``None`` without one)."""
    answers, probs = outcome.answer_probabilities(method)
    return answers[int(np.argmax(probs))] if answers else None


# ------------------------------------------------------------------------------ throughput
def throughput(size: Size, out: Path, log) -> Path:
    """Every test question (39,093) answered blind on the half base by the seed-0 system, in
    batches of 1,000 as a service would take them: the seconds of the whole loop, and of its
    first two stages timed again alone (chain prediction; the chains' walks); the rest is
    candidates and grounding. Hits@1 of prior, hard and soft over the whole test set."""
    system = build("half", size, 0, log)
    questions = [q for h in (1, 2, 3) for q in load_metaqa(h, "test")]
    shown = [q.blind() for q in questions]
    system.qa.answer_batch(shown[:200])  # compiles the programs of the common shapes
    t0 = time.perf_counter()
    outcomes = []
    for s in range(0, len(shown), 1000):
        outcomes += system.qa.answer_batch(shown[s : s + 1000])
    total = time.perf_counter() - t0
    t = time.perf_counter()
    chains = [c for s in range(0, len(shown), 1000)
              for c in system.classifier.predict(shown[s : s + 1000], K_CHAINS)]  # fmt: skip
    predict = time.perf_counter() - t
    walks = ChainWalks(system.graph, revisit=REVISIT)
    t = time.perf_counter()
    for q, cs in zip(shown, chains):
        if system.graph.has_entity(q.topic):
            walks.walk(q.topic, [c for c, _ in cs])
    walk = time.perf_counter() - t
    row = dict(
        questions=len(questions),
        seconds=total,
        questions_per_second=len(questions) / total,
        stages=dict(chains=predict, walks=walk, candidates_and_grounding=total - predict - walk),
        hits1={m: float(np.mean(hits_of(outcomes, questions, m))) for m in METHODS},
        hits1_per_hop={
            h: {
                m: float(
                    np.mean(
                        hits_of(
                            [o for o, q in zip(outcomes, questions) if q.hops == h],
                            [q for q in questions if q.hops == h],
                            m,
                        )
                    )
                )
                for m in METHODS
            }
            for h in (1, 2, 3)
        },  # fmt: skip
    )
    log(f"metaqa throughput: {len(questions)} questions in {total:.0f} s "
        f"({row['questions_per_second']:.0f} per second)")  # fmt: skip
    return write_json(out / "metaqa_throughput.json", row)


# ------------------------------------------------------------------------------ main
@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    ap = parser(__doc__.split("\n\n")[0], "python -m experiments.metaqa")
    ap.add_argument(
        "--questions",
        type=Path,
        default=None,
        metavar="FILE",
        help="answer this MetaQA-format file instead (writes OUT/answers.jsonl)",
    )
    ap.add_argument(
        "--hops",
        type=int,
        choices=(1, 2, 3),
        default=None,
        help="with --questions: the file's hop count (for its records)",
    )
    ap.add_argument("--kb", choices=KBS, default="half",
                    help="with --questions: the knowledge base to answer from")  # fmt: skip
    ap.add_argument(
        "--throughput",
        action="store_true",
        help="answer every test question on the half base and time the stages",
    )
    ap.add_argument(
        "--llm-per-hop",
        type=int,
        default=None,
        metavar="N",
        help="test questions per hop (1 and 2) SmolLM2 answers, grounded on both bases "
        "(default: 300 with --full, none in quick mode; needs the llm extra)",
    )
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    out = checked_out_dir(ap, args.out)
    size = FULL if args.full else QUICK
    if args.per_hop is not None:  # quick mode on more (or fewer) test questions per hop
        size = dataclasses.replace(size, test_per_hop=args.per_hop)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    if args.throughput:
        path = throughput(size, out, log)
        print(f"wrote {path}")
        return [path]
    if args.questions is not None:
        if not args.questions.is_file():
            ap.error(f"--questions {args.questions}: no such file")
        path = answer_file(args.questions, args.hops, args.kb, size, out, log)
        print(f"wrote {path}")
        return [path]
    n_seeds = args.seeds if args.seeds is not None else (3 if args.full else 1)
    t0 = time.perf_counter()
    questions = {h: sample_of_test(h, size.test_per_hop) for h in (1, 2, 3)}
    tables, fitted, built = {}, {}, {}
    for kb in KBS:
        runs = []
        for seed in range(n_seeds):
            system = build(kb, size, seed, log)
            fitted[f"{kb}/{seed}"] = system.fitted
            if seed == 0:
                built[1.0 if kb == "full" else 0.5] = system
            runs.append({h: evaluate(system, questions[h], log) for h in (1, 2, 3)})
        tables[kb] = report_kb(kb, runs)
        for h in (1, 2, 3):
            row = tables[kb][h]
            log(f"metaqa {kb} {h}-hop: " + " ".join(f"{m}={row[m]['hits1']:.3f}"
                for m in (*METHODS, "oracle")) + f" ceiling={row['ceiling']:.3f}")  # fmt: skip
    swept = sweep(size, log, built)
    llm_n = args.llm_per_hop if args.llm_per_hop is not None else (300 if args.full else 0)
    llm = llm_rows({"half": built[0.5], "full": built[1.0]}, llm_n, log) if llm_n else None
    paths = write_outputs(out, tables, fitted, swept, llm, args.full, n_seeds)
    seconds = time.perf_counter() - t0
    write_json(out / "metaqa_run.json", dict(seconds=seconds, seeds=n_seeds,
               size=dataclasses.asdict(size)))  # fmt: skip
    keys = {
        **{f"half_hits1_{h}hop": tables["half"][h]["soft"]["hits1"] for h in (1, 2, 3)},
        **{f"full_hits1_{h}hop": tables["full"][h]["soft"]["hits1"] for h in (1, 2, 3)},
        **{f"half_prior_hits1_{h}hop": tables["half"][h]["prior"]["hits1"] for h in (1, 2, 3)},
        "llm_prior_hits1": llm["half"][1]["prior"]["hits1"] if llm else float("nan"),
        "llm_soft_hits1": llm["half"][1]["soft"]["hits1"] if llm else float("nan"),
    }
    print(" ".join(f"{k}={v:.4f}" for k, v in keys.items()))
    return paths


def write_outputs(
    out: Path, tables: dict, fitted: dict, swept: dict, llm: dict | None, full: bool, seeds: int
):
    rows = []
    for kb, table in tables.items():
        for h, row in table.items():
            for m in (*METHODS, "oracle"):
                lo, hi = row[m]["ci"]
                rows.append([kb, h, m, row[m]["hits1"], lo, hi, row[m]["n"], row["ceiling"]])
    paths = [
        write_json(out / "metaqa.json", dict(tables=tables, fitted=fitted, sweep=swept,
                                             llm=llm, quick=not full, seeds=seeds)),  # fmt: skip
        write_csv(out / "metaqa.csv",
                  ["kb", "hops", "method", "hits1", "ci_low", "ci_high", "n", "ceiling"], rows),
    ]  # fmt: skip
    paths += save_figure(sweep_figure(swept), out / "metaqa.png", quick=not full)
    return paths


if __name__ == "__main__":
    main()
