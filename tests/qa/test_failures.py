"""Hostile inputs to the QA loops and their metrics: a failure is one question's outcome with
its reason (the rest of the batch is answered as if it were not there), configuration errors
are refused when a loop is built, and the metrics refuse inputs they would misread."""

from __future__ import annotations

import inspect

import jax.numpy as jnp
import numpy as np
import pytest

from grounding import EvidenceStatus, GroundingConfig, TypedGraph
from grounding.datasets import KGQuestion
from grounding.hypergraph import KnowledgeHypergraph
from grounding.language import EndpointError
from grounding.learn import KGEModel
from grounding.plans import (
    HeuristicPlanner,
    HypergraphTemplatePlanner,
    Plan,
    PlanError,
    SubQuestion,
    TemplatePlanner,
)
from grounding.qa import (
    BlindQA,
    CandidateModelError,
    Candidates,
    GroundedQA,
    KGEAnswerer,
    PankRAG,
    PRoH,
    answer_f1,
    answer_set,
    expected_calibration_error,
    score_probabilities,
)
from grounding.retrieval import PCR, HypergraphIndex, TextIndex, beam_search

NAN, INF = float("nan"), float("inf")


# --------------------------------------------------------------------------- a small world
def _graph() -> TypedGraph:
    """t -r1-> b1 -r2-> c1 ; t -r1-> b2 ; u -r1-> b2 ; x is isolated."""
    return TypedGraph.from_triples(
        [("t", "r1", "b1"), ("t", "r1", "b2"), ("b1", "r2", "c1"), ("u", "r1", "b2")],
        entities=["t", "b1", "b2", "c1", "u", "x"],
    )


def _question(topic: str, chain=("r1",), qid="q") -> KGQuestion:
    return KGQuestion(qid, f"What is the {' of the '.join(chain)} of {topic}?", topic, chain,
                      ("b1",), ("b1",), "test")  # fmt: skip


class Table:
    """Candidates from a table ``(topic, chain) -> {answer: prior}``; ``fail`` topics raise."""

    def __init__(self, table, fail=(), error=CandidateModelError):
        self.table, self.fail, self.error, self.calls = table, set(fail), error, []

    def propose(self, question, k):
        self.calls.append(question.topic)
        if question.topic in self.fail:
            raise self.error(f"the endpoint timed out for {question.topic}")
        row = self.table.get((question.topic, tuple(question.chain)))
        if not row:
            return Candidates.abstain(f"nothing known about {question.topic}")
        return Candidates.from_scores(list(row), np.log(list(row.values())), k=k)


TABLE = {
    ("t", ("r1",)): {"b1": 0.4, "b2": 0.6},
    ("u", ("r1",)): {"b2": 0.5, "b1": 0.5},
    ("b1", ("r2",)): {"c1": 0.9, "b2": 0.1},
    ("b2", ("r2",)): {"c1": 0.5, "b1": 0.5},
    ("x", ("r1",)): {"b1": 0.5, "zz": 0.5},  # zz: not an entity of the graph
    ("nobody", ("r1",)): {"b1": 1.0},
}


def _split(system: type, defaults: dict, kw: dict) -> tuple[GroundingConfig, dict]:
    """A system's arguments: the grounding settings of ``kw`` (over ``defaults``) as one
    :class:`GroundingConfig` (built here, so that it refuses a bad value itself), the rest as
    the system's own keywords (its own settings, e.g. PankRAG's ``alpha``, first; an unknown
    name among them: the system refuses it)."""
    own = inspect.signature(system).parameters
    settings = {k: v for k, v in kw.items() if k in GroundingConfig.fields() and k not in own}
    rest = {k: v for k, v in kw.items() if k not in settings}
    return GroundingConfig(**(defaults | settings)), rest


def _qa(model, **kw):
    config, rest = _split(GroundedQA, {"lam": 2.0, "kappa": 1.0}, kw)
    return GroundedQA(model, PCR(TextIndex(_graph()), max_hops=1), config, **rest)


def _same(a, b):
    assert a.answer == b.answer and a.reason == b.reason
    np.testing.assert_allclose(a.result.log_posterior, b.result.log_posterior, atol=1e-12)


# --------------------------------------------------------------------------- GroundedQA
def test_grounded_qa_a_failing_model_call_is_that_questions_abstention():
    good, bad, other = _question("t"), _question("b2", qid="q2"), _question("u", qid="q3")
    model = Table(TABLE, fail={"b2"})
    outs = _qa(model).answer_batch([good, bad, other])
    assert outs[1].result is None and outs[1].answer is None and outs[1].candidates.abstained
    assert outs[1].reason == (
        "candidate model failed (CandidateModelError): the endpoint timed out for b2"
    )
    assert model.calls == ["t", "b2", "u"]  # every question asked once: nothing re-paid
    _same(outs[0], _qa(Table(TABLE)).answer(good))
    _same(outs[2], _qa(Table(TABLE)).answer(other))
    # an endpoint error is a per-question failure too
    [out] = _qa(Table(TABLE, fail={"t"}, error=EndpointError)).answer_batch([good])
    assert out.reason.startswith("candidate model failed (EndpointError)")


class BatchTable(Table):
    """:class:`Table` that runs questions together (``propose_batch``): one call a batch."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.batches = []

    def propose_batch(self, questions, k):
        self.batches.append([q.topic for q in questions])
        return [self.propose(q, k) for q in questions]


def test_grounded_qa_asks_a_batching_model_once_and_a_failing_batch_question_by_question():
    qs = [_question("t"), _question("b2", qid="q2"), _question("u", qid="q3")]
    model = BatchTable(TABLE)
    outs = _qa(model).answer_batch(qs)
    assert model.batches == [["t", "b2", "u"]] and model.calls == ["t", "b2", "u"]
    for o, q in zip(outs, qs):
        alone = _qa(Table(TABLE)).answer(q)
        assert (o.answer, o.reason) == (alone.answer, alone.reason)
        assert (o.result is None) == (alone.result is None)
        if o.result is not None:
            _same(o, alone)
    failing = BatchTable(TABLE, fail={"b2"})
    outs = _qa(failing).answer_batch(qs)
    assert failing.batches == [["t", "b2", "u"]]  # the batch failed: then each one alone
    assert failing.calls == ["t", "b2", "t", "b2", "u"]
    assert outs[1].reason == (
        "candidate model failed (CandidateModelError): the endpoint timed out for b2"
    )
    _same(outs[0], _qa(Table(TABLE)).answer(qs[0]))
    _same(outs[2], _qa(Table(TABLE)).answer(qs[2]))


def test_a_model_with_the_default_loop_is_asked_question_by_question():
    """A model that inherits ``CandidateModel.propose_batch`` (a loop) is asked one question
    at a time, so a failing question costs no second request of the others."""
    from grounding.prior import CandidateModel
    from grounding.prior.candidates import runs_batches

    class Looped(Table, CandidateModel):
        pass

    model = Looped(TABLE, fail={"b2"})
    assert not runs_batches(model) and runs_batches(BatchTable(TABLE))
    assert not runs_batches(Table(TABLE))
    _qa(model).answer_batch([_question("t"), _question("b2", qid="q2"), _question("u", qid="q3")])
    assert model.calls == ["t", "b2", "u"]


def test_grounded_qa_a_missing_topic_is_a_reason_and_a_missing_candidate_is_unsupported():
    """Only a topic the graph lacks fails a question; a candidate it lacks (``zz``) is grounded
    as unsupported, exactly as ``b1``, which x (isolated) reaches by no walk either."""
    good = _question("t")
    outs = _qa(Table(TABLE)).answer_batch([_question("nobody"), good, _question("x")])
    assert outs[0].result is None and "'nobody'" in outs[0].reason
    out = outs[2]
    assert out.reason is None and out.candidates.entities == ("b1", "zz")
    assert [int(s) for s in out.result.status] == [int(EvidenceStatus.UNSUPPORTED)] * 2
    np.testing.assert_array_equal(out.result.energy, [1.0, 1.0])  # kappa, Eq. (19)
    assert out.answer is None  # unsupported best: RETRIEVE, not an answer (Axiom 8)
    _same(outs[1], _qa(Table(TABLE)).answer(good))


def test_grounded_qa_grounding_failure_is_retried_question_by_question():
    """kappa = inf gives an unsupported question Z_R = 0, which ground refuses: that question
    alone fails; the others keep the answers of the batched run."""
    qa = _qa(Table({**TABLE, ("t", ("r1",)): {"c1": 1.0}}), kappa=INF)
    outs = qa.answer_batch([_question("u"), _question("t"), _question("u", qid="q3")])
    assert outs[1].result is None and outs[1].reason.startswith("grounding failed (ValueError)")
    assert "Z_R" in outs[1].reason and outs[1].evidence is not None
    for o in (outs[0], outs[2]):
        _same(o, qa.answer(_question("u")))


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (dict(lam=NAN), ValueError, "lam"),
        (dict(kappa=-1.0), ValueError, "kappa"),
        (dict(tau="hot"), TypeError, "tau"),
        (dict(lamda=1.0), TypeError, "lamda"),
        (dict(theta=2.0), ValueError, "theta"),
        (dict(n_paths=-1), ValueError, "n_paths"),
        (dict(min_reliability=NAN), ValueError, "min_reliability"),
        (dict(realization="euclidean"), TypeError, "realization"),
        (dict(k_candidates=True), ValueError, "k_candidates"),
        (dict(k_nodes=2.5), ValueError, "k_nodes"),
        (dict(negative="t r1 b1"), TypeError, "negative"),
        (dict(negative={("t", "r1")}), TypeError, "negative"),
    ],
)
def test_grounded_qa_configuration_is_checked_at_construction(bad, error, message):
    with pytest.raises(error, match=message):
        _qa(Table(TABLE), **bad)


@pytest.mark.parametrize("config", [None, {"lam": 1.0, "kappa": 1.0}, 1.0, "lam=1"])
def test_a_config_that_is_not_a_grounding_config_is_refused_by_every_system(config):
    index = TextIndex(_graph())
    systems = (
        ("GroundedQA", lambda: GroundedQA(Table(TABLE), PCR(index, max_hops=1), config)),
        ("BlindQA", lambda: BlindQA(_answerer(), object(), PCR(index, max_hops=1), config)),
        ("PankRAG", lambda: PankRAG(TemplatePlanner({"r1": "r1"}), Table(TABLE), index, config)),
        ("PRoH", lambda: PRoH(HeuristicPlanner(), HypergraphIndex(_toy()), config)),
    )
    for owner, build in systems:
        with pytest.raises(TypeError, match=f"{owner}: config must be a GroundingConfig"):
            build()


def test_a_config_rebuilt_out_of_range_is_refused_when_a_system_is_built():
    """A config rebuilt from leaves (``tree_map``, an optimizer step) skips the constructor's
    checks; every system checks it when built, as the documentation says, and names itself,
    the argument and the field (the model is never asked)."""
    import jax

    bad = jax.tree_util.tree_map(lambda x: -5.0 if x == 2.0 else x, GroundingConfig(2.0, 1.0))
    index, model = TextIndex(_graph()), Table(TABLE)
    systems = (
        ("GroundedQA", lambda: GroundedQA(model, PCR(index, max_hops=1), bad)),
        ("BlindQA", lambda: BlindQA(_answerer(), object(), PCR(index, max_hops=1), bad)),
        ("PankRAG", lambda: PankRAG(TemplatePlanner({"r1": "r1"}), model, index, bad)),
        ("PRoH", lambda: PRoH(HeuristicPlanner(), HypergraphIndex(_toy()), bad)),
    )
    for owner, build in systems:
        with pytest.raises(ValueError, match=f"{owner}: config: lam must be >= 0, got -5"):
            build()
    assert model.calls == []


def test_grounded_qa_model_and_retriever_are_checked_at_construction():
    config = GroundingConfig(lam=1.0, kappa=1.0)
    with pytest.raises(TypeError, match="model"):
        GroundedQA(object(), PCR(TextIndex(_graph())), config)
    with pytest.raises(TypeError, match="retriever"):
        GroundedQA(Table(TABLE), "pcr", config)


# --------------------------------------------------------------------------- PankRAG
class ListPlanner:
    """Plans from a table ``question text -> Plan``; others fail as an LLM planner would."""

    def __init__(self, plans):
        self.plans = plans

    def plan(self, question):
        if question.text not in self.plans:
            raise PlanError(f"the reply holds no plan for {question.text!r}")
        return self.plans[question.text]


def _pankrag(model, planner=None, **kw):
    planner = planner or TemplatePlanner({"r1": "r1", "r2": "r2"})
    config, rest = _split(PankRAG, {"lam": 5.0, "kappa": 1.0}, kw)
    return PankRAG(planner, model, TextIndex(_graph()), config, **rest)


def _steps(out):
    return {
        sid: (s.answers, np.round(s.probs, 12).tolist(), s.reason) for sid, s in out.steps.items()
    }


def test_pankrag_a_failing_model_call_fails_its_step_not_the_batch():
    two = _question("t", ("r1", "r2"))
    other = _question("u", ("r1", "r2"), qid="q2")
    model = Table(TABLE, fail={"b1"})  # step 2 of `two` asks from b1 (and b2)
    outs = _pankrag(model).answer_batch([two, other])
    assert outs[0].answer is None and outs[0].steps["q1"].answer == "b2"
    assert outs[0].reason.startswith("candidate model failed (CandidateModelError)")
    assert "(from anchor 'b1')" in outs[0].reason
    # the other question is answered as if alone (its step 2 starts from b2 and b1 too: both
    # fail the same way, so use a model failing nowhere for the comparison of the first step)
    alone = _pankrag(Table(TABLE, fail={"b1"})).answer(other)
    assert _steps(outs[1]) == _steps(alone)
    healthy = _pankrag(Table(TABLE)).answer_batch([two, other])
    assert healthy[0].answer == "c1" and healthy[0].reason is None


def test_pankrag_a_failing_planner_is_that_questions_outcome():
    good = _question("t", ("r1", "r2"))
    plan = TemplatePlanner({"r1": "r1", "r2": "r2"}).plan(good)
    system = _pankrag(Table(TABLE), ListPlanner({good.text: plan}))
    bad = _question("u", ("r1",), qid="q2")
    outs = system.answer_batch([bad, good])
    assert outs[0].plan is None and outs[0].steps == {} and outs[0].answer is None
    assert outs[0].reason.startswith("planner failed (PlanError): the reply holds no plan")
    assert outs[0].final.answers == () and outs[0].final.probs.shape == (0,)
    assert _steps(outs[1]) == _steps(system.answer(good)) and outs[1].answer == "c1"


def test_pankrag_candidates_missing_from_the_graph_are_grounded_as_unsupported():
    out = _pankrag(Table(TABLE)).answer(_question("x"))
    step = out.steps["q1"]
    assert step.reason is None and set(step.answers) == {"b1", "zz"}
    assert [int(s) for s in step.result.status] == [int(EvidenceStatus.UNSUPPORTED)] * 2


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (dict(lam=NAN), ValueError, "lam"),
        (dict(foo=1), TypeError, "foo"),
        (dict(alpha=NAN), ValueError, "alpha"),
        (dict(alpha=True), TypeError, "alpha"),
        (dict(rerank="no"), TypeError, "rerank"),
        (dict(beam=1.5), ValueError, "beam"),
        (dict(communities="all"), TypeError, "communities"),
    ],
)
def test_pankrag_configuration_is_checked_at_construction(bad, error, message):
    with pytest.raises(error, match=message):
        _pankrag(Table(TABLE), **bad)


def test_pankrag_planner_model_and_index_are_checked_at_construction():
    for args, message in (
        ((object(), Table(TABLE), TextIndex(_graph())), "planner"),
        ((HeuristicPlanner(), object(), TextIndex(_graph())), "model"),
        ((HeuristicPlanner(), Table(TABLE), _graph()), "index"),
    ):
        with pytest.raises(TypeError, match=message):
            PankRAG(*args, GroundingConfig(lam=1.0, kappa=1.0))


# --------------------------------------------------------------------------- PRoH
def _toy() -> KnowledgeHypergraph:
    return KnowledgeHypergraph.from_statements(
        [
            ("alice", "award", "prize1", (("for_work", "film1"),)),
            ("film1", "director", "bob", (("studio", "acme"),)),
            ("bob", "award", "prize2", (("for_work", "film2"),)),
            ("carol", "cast", "film1", (("role", "hero"),)),
        ]
    )


class _Q:
    def __init__(self, text, topic="alice", roles=()):
        self.text, self.topic, self.roles = text, topic, roles


ROLES = (("subject:award", "qualifier:for_work"), ("subject:director", "object:director"))


class StepsPlanner:
    """The same steps for every question (e.g. a free-text planner's, without anchors)."""

    name = "steps"

    def __init__(self, *steps, error=None):
        self.steps, self.error = steps, error

    def plan(self, question):
        if self.error is not None:
            raise self.error
        return Plan(question.text, self.steps)


def _proh(planner, kh=None, **kw):
    kh = kh or _toy()
    config, rest = _split(PRoH, {"lam": 5.0, "kappa": 1.0}, kw)
    return PRoH(planner, HypergraphIndex(kh), config, **rest)


def test_proh_steps_without_anchors_are_anchored_at_the_entities_their_text_names():
    out = _proh(HeuristicPlanner()).answer(_Q("Who is the director of film1?"))
    assert out.reason is None and out.answer is not None
    assert all(not s.anchors for p in out.plans for s in p.steps)  # free text: no anchors
    problem = out.solutions[0].final.problem
    assert problem.anchors == ("film1",)  # linked from the step's text
    # the same as naming the anchor in the plan
    named = _proh(StepsPlanner(SubQuestion("q1", "Who is the director of film1?",
                                           anchors=("film1",)))).answer(_Q("Who is the director of film1?"))  # fmt: skip
    assert out.answers == named.answers and np.allclose(out.probs, named.probs)


def test_proh_a_step_naming_no_entity_is_an_abstention_with_the_reason():
    for planner in (HeuristicPlanner(), StepsPlanner(SubQuestion("q1", "Who is it?"))):
        out = _proh(planner).answer(_Q("Who is it?"))
        assert out.answer is None and out.probs.shape == (0,)
        assert "step 'q1' names no entity the hypergraph holds" in out.reason
    out = _proh(StepsPlanner(SubQuestion("q1", "Who?", anchors=("zed",)))).answer(_Q("Who?"))
    assert out.answer is None and "anchors ['zed'] are not entities of the hypergraph" in out.reason


def test_proh_planner_and_refiner_failures_are_per_question():
    template = HypergraphTemplatePlanner(_toy())
    good = _Q("Who is the director of the film for which alice received an award?", roles=ROLES)
    failing = StepsPlanner(error=EndpointError("http://x/v1: timed out"))
    out = _proh(failing).answer(good)
    assert (
        out.answer is None
        and out.reason == "planner failed (EndpointError): http://x/v1: timed out"
    )

    def refine(question, texts):
        if "carol" in question:
            raise EndpointError("http://x/v1: HTTP 503")
        return [0.5] * len(texts)

    system = _proh(template, refine=refine, refine_threshold=0.0)
    outs = system.answer_batch([_Q("Who?", topic="carol", roles=ROLES[:1]), good])
    assert (
        outs[0].answer is None
        and outs[0].reason == "refine failed (EndpointError): http://x/v1: HTTP 503"
    )
    assert outs[1].answer == system.answer(good).answer == "bob"


@pytest.mark.parametrize(
    "scores", [[0.5], [NAN, 0.5, 0.5], [2.0, 0.5, 0.5], "high", [[0.5, 0.5, 0.5]]]
)
def test_proh_refiner_output_is_checked(scores):
    def refine(question, texts):
        return scores if len(texts) == 3 else [0.5] * len(texts)

    system = _proh(HypergraphTemplatePlanner(_toy()), refine=refine, refine_threshold=0.0,
                   max_refined=3)  # fmt: skip
    outs = system.answer_batch([_Q("Who?", roles=ROLES[:1]), _Q("?", roles=ROLES[:1])])
    assert outs[0].answer is None and outs[0].reason.startswith("refine failed (ValueError)")
    assert "refine must return 3 scores in [0, 1] (one per entity text)" in outs[0].reason
    # a question the index cannot read (no word to embed) fails alone
    assert outs[1].answer is None and "cannot be embedded" in outs[1].reason


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (dict(context_bonus=NAN), ValueError, "context_bonus"),
        (dict(context_bonus=-1.0), ValueError, "context_bonus"),
        (dict(temperature=INF), ValueError, "temperature"),
        (dict(temperature=NAN), ValueError, "temperature"),
        (dict(refine_threshold=NAN), ValueError, "refine_threshold"),
        (dict(refine_threshold=1.5), ValueError, "refine_threshold"),
        (dict(max_refined=0), ValueError, "max_refined"),
        (dict(use_ewo="yes"), TypeError, "use_ewo"),
        (dict(refine="llm"), TypeError, "refine"),
        (dict(lam=NAN), ValueError, "lam"),
        (dict(lamda=1.0), TypeError, "lamda"),
    ],
)
def test_proh_configuration_is_checked_at_construction(bad, error, message):
    with pytest.raises(error, match=message):
        _proh(HeuristicPlanner(), **bad)


def test_beam_search_refuses_a_bonus_or_weights_that_are_not_finite():
    index = HypergraphIndex(_toy())
    qv = index.embed("award")
    with pytest.raises(ValueError, match="context_bonus"):
        beam_search(index, [0], [1.0], qv, context=np.ones(4), context_bonus=NAN)
    with pytest.raises(ValueError, match="anchor_weights"):
        beam_search(index, [0], [NAN], qv)
    with pytest.raises(ValueError, match="anchor_weights"):
        beam_search(index, [0, 1], [1.0], qv)


def test_mentions_match_whole_words_longest_first():
    kh = KnowledgeHypergraph.from_statements(
        [("New York", "in", "USA", ()), ("York", "in", "UK", ()), ("Yorkshire", "in", "UK", ())]
    )
    index = HypergraphIndex(kh)
    names = [kh.entities[e] for e in index.mentions("Is new  york, or York, in the UK?")]
    assert names == ["New York", "York", "UK"]
    assert index.mentions("Yorkshires?") == [] and index.mentions("") == []


# --------------------------------------------------------------------------- metrics
def test_ece_refuses_labels_bins_and_nan_it_would_misread():
    conf = np.array([0.9, 0.2])
    for labels in ([2, -1], [np.nan, 0], [0.5, 1]):
        with pytest.raises(ValueError, match="correct must be 0/1"):
            expected_calibration_error(conf, np.array(labels))
    for bins in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="n_bins"):
            expected_calibration_error(conf, np.array([1, 0]), n_bins=bins)
    assert expected_calibration_error(conf, np.array([True, False])) == pytest.approx(0.15)


def test_answer_sets_given_as_strings_are_refused():
    with pytest.raises(TypeError, match="gold"):
        answer_f1(["abc"], "abc")
    with pytest.raises(TypeError, match="predicted"):
        answer_f1("abc", ["abc"])
    with pytest.raises(TypeError, match="gold"):
        score_probabilities(["a", "b"], np.array([0.5, 0.5]), "ab")
    with pytest.raises(TypeError, match="names"):
        answer_set("ab", np.array([0.5, 0.5]))
    assert answer_f1(("a", "b"), {"b"}) == pytest.approx(2 / 3)


def _answerer():
    rng = np.random.default_rng(0)
    model = KGEModel(
        "transe", jnp.asarray(rng.normal(size=(5, 4))), jnp.asarray(rng.normal(size=(2, 4)))
    )
    return KGEAnswerer(model, [f"e{i}" for i in range(5)], ["a", "b"])


def test_fit_temperature_without_a_usable_gold_answer_is_refused():
    ans = _answerer()
    q = KGQuestion("q", "?", "e0", ("a",), (), (), "test")
    for gold in ([["zz"]], [[]], [["e0"]]):  # unknown, none, only the topic itself
        with pytest.raises(ValueError, match="no question has a gold answer"):
            ans.fit_temperature([q], gold)
        assert ans.temperature == 1.0
    with pytest.raises(TypeError, match="answer sets"):
        ans.fit_temperature([q], ["e1"])
    assert ans.fit_temperature([q, q], [["zz"], ["e0", "e1"]]) == ans.fit_temperature([q], [["e1"]])


def test_candidate_counts_must_be_positive_ints():
    ans = _answerer()
    q = KGQuestion("q", "?", "e0", ("a",), (), (), "test")
    for k in (-1, 0, True, 2.0):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            ans.propose(q, k)
    assert len(ans.propose(q, 3).entities) == 3
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        Candidates.from_scores(["a", "b"], [0.0, 0.0], k=True)
    with pytest.raises(TypeError, match="entities"):
        Candidates.from_scores("ab", [0.0, 0.0])
    with pytest.raises(TypeError, match="entities"):
        Candidates("ab", np.log([0.5, 0.5]))


# --------------------------------------------------------------------------- batches
class NoneModel:
    def propose(self, question, k):
        return None


def test_batches_refuse_strings_and_models_that_return_no_candidates():
    for system in (_qa(Table(TABLE)), _pankrag(Table(TABLE)), _proh(HeuristicPlanner())):
        assert system.answer_batch([]) == []
        with pytest.raises(TypeError, match="not a string"):
            system.answer_batch("Who?")
    with pytest.raises(TypeError, match="returned NoneType, not Candidates"):
        _qa(NoneModel()).answer(_question("t"))
    with pytest.raises(TypeError, match="returned NoneType, not Candidates"):
        _pankrag(NoneModel()).answer(_question("t"))
    with pytest.raises(ValueError, match="1 names but 2 probabilities"):
        score_probabilities(["a"], np.array([0.2, 0.8]), ["a"])


def test_pankrag_full_injection_is_answered_and_bool_mass_refused():
    system, q = _pankrag(Table(TABLE)), _question("t", ("r1", "r2"))
    out = system.answer(q, inject={"q1": "b1"}, inject_mass=1.0)  # b2 keeps weight 0
    assert out.steps["q2"].anchors == ("b1", "b2") and out.answer == "c1"
    with pytest.raises(TypeError, match="inject_mass"):
        system.answer(q, inject={"q1": "b1"}, inject_mass=True)
