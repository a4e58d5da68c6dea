"""PankRAG: plans (levels, parallel pairs, Hasse reduction against NetworkX), planners (templated,
heuristic, LLM against the stub server), communities, the dependency-aware reranker worked by
hand, and grounded plan execution on small graphs."""

from __future__ import annotations

import dataclasses
import json

import networkx as nx
import numpy as np
import pytest
from _stub import _choice
from hypothesis import given
from hypothesis import strategies as st

from grounding import GroundingConfig, TypedGraph
from grounding.datasets import KGQuestion, kgqa_benchmark, load_kg, load_musique
from grounding.language import Endpoint, EndpointError, HashingEncoder
from grounding.plans import (
    FlatPlanner,
    HeuristicPlanner,
    LLMPlanner,
    Plan,
    PlanError,
    PredictedPathPlanner,
    RelationChainPredictor,
    SubQuestion,
    TemplatePlanner,
    plan_from_decomposition,
)
from grounding.qa import Candidates, PankRAG
from grounding.query import BlindQuestion, blind
from grounding.retrieval import (
    PCR,
    Communities,
    CommunityRetriever,
    LLMSummarizer,
    Query,
    TextIndex,
    dependency_rerank,
)
from grounding.retrieval.base import minmax
from grounding.retrieval.rerank import (
    ALPHA,
    dependency_score,
    embedding_agreement,
    graph_agreement,
)

# --------------------------------------------------------------------------- plans


@st.composite
def dags(draw):
    """A random DAG as a plan (edges only from lower to higher index, so acyclic), shuffled."""
    n = draw(st.integers(1, 9))
    edges = {(i, j) for j in range(n) for i in range(j) if draw(st.booleans())}
    order = draw(st.permutations(range(n)))
    steps = tuple(
        SubQuestion(f"s{j}", f"step {j}?", tuple(f"s{i}" for i in range(j) if (i, j) in edges))
        for j in order
    )
    return Plan("q?", steps), edges, n


@given(dags())
def test_levels_are_the_topological_generations(case):
    plan, edges, n = case
    g = nx.DiGraph()
    g.add_nodes_from(f"s{j}" for j in range(n))
    g.add_edges_from((f"s{i}", f"s{j}") for i, j in edges)
    levels = plan.levels()
    assert [set(lv) for lv in levels] == [set(gen) for gen in nx.topological_generations(g)]
    order = [s.id for s in plan.steps]
    assert all(list(lv) == sorted(lv, key=order.index) for lv in levels)  # plan order kept
    pairs = {frozenset(p) for p in plan.parallel()}
    expected = {
        frozenset((a, b))
        for a in g
        for b in g
        if a < b and not nx.has_path(g, a, b) and not nx.has_path(g, b, a)
    }
    assert pairs == expected
    reduced = plan.transitive_reduction()  # no slots: exactly the Hasse diagram
    assert set(reduced.edges()) == set(nx.transitive_reduction(g).edges())


def test_plan_validation_and_slots():
    with pytest.raises(ValueError, match="cycle"):
        Plan("q", (SubQuestion("a", "A?", ("b",)), SubQuestion("b", "B?", ("a",))))
    with pytest.raises(ValueError, match="unknown steps"):
        Plan("q", (SubQuestion("a", "A?", ("zz",)),))
    with pytest.raises(ValueError, match="not among its dependencies"):
        SubQuestion("a", "Where is {b}?")
    with pytest.raises(ValueError, match="anchors"):
        SubQuestion("a", "A?", anchors="lou_seal")
    p = plan_from_decomposition("q", ["Who wrote #9 Dream?", "Where was #1 born?"], strict=False)
    assert p.steps[0].text == "Who wrote #9 Dream?" and p.steps[1].fill({"q1": "Lennon"}) == (
        "Where was Lennon born?"
    )
    with pytest.raises(ValueError, match="not an earlier step"):
        plan_from_decomposition("q", ["Who wrote #9 Dream?"])
    with pytest.raises(ValueError, match="at least one"):
        plan_from_decomposition("q", [])
    # parallel branches joined by the last step; braces in the text are literal
    p = plan_from_decomposition("q", ["A {x}?", "B?", "C of #1 and #2?"])
    assert p.levels() == [("q1", "q2"), ("q3",)] and p.parallel() == [("q1", "q2")]
    assert p.steps[0].fill({}) == "A {x}?"
    assert json.loads(json.dumps(p.to_dict()))["steps"][2]["depends_on"] == ["q1", "q2"]


# --------------------------------------------------------------------------- planners


def test_template_planner_recovers_the_gold_chain_of_every_benchmark_question():
    for name, n in (("umls", 200), ("codex-s", 200), ("codex-m", 500)):
        bench = kgqa_benchmark(name, questions_per_hop=n)
        planner = TemplatePlanner(bench.relation_labels)
        for q in bench.questions:
            plan = planner.plan(q)
            order = [i for lv in plan.levels() for i in lv]
            assert order == [s.id for s in plan.steps]  # a chain: one step per level
            assert tuple(r for s in plan.steps for r in s.relations) == q.chain
            assert plan.steps[0].anchors == (q.topic,) and plan.final == plan.steps[-1].id
            assert plan.edges() == [(f"q{k}", f"q{k + 1}") for k in range(1, q.hops)]
    with pytest.raises(PlanError, match="relation chain"):
        planner.plan(KGQuestion("x", "What?", "a", (), (), (), "test"))
    with pytest.raises(PlanError, match="no label"):
        planner.plan(KGQuestion("x", "What?", "a", ("nope",), (), (), "test"))


def test_template_planner_text_reads_inverse_relations_backwards():
    planner = TemplatePlanner({"P27": "country of citizenship"}, {"Q42": "Douglas {Adams}"})
    q = KGQuestion("x", "?", "Q42", ("P27", "P27^-1"), (), (), "test")
    plan = planner.plan(q)
    assert plan.steps[0].fill({}) == "What is the country of citizenship of Douglas {Adams}?"
    assert (
        plan.steps[1].fill({"q1": "UK"}) == "What is the entity whose country of citizenship is UK?"
    )


def test_flat_planner_is_one_step_with_the_whole_chain():
    q = KGQuestion("x", "What is {it}?", "Q42", ("a", "b"), (), (), "test")
    (step,) = FlatPlanner().plan(q).steps
    assert step.relations == ("a", "b") and step.anchors == ("Q42",) and step.fill({}) == q.text


@pytest.mark.parametrize(
    "question, expected",
    [
        (
            "Who was in charge of the city where August Bloedner died?",
            ["What is the city where August Bloedner died?", "Who was in charge of {q1}?"],
        ),
        (
            "Who is the spouse of the director of The Day of the Locust?",
            ["What is the director of The Day of the Locust?", "Who is the spouse of {q1}?"],
        ),
        (
            "Who was in charge of Tamara Larrea's birthplace?",
            ["What is the birthplace of Tamara Larrea?", "Who was in charge of {q1}?"],
        ),
        (
            "When did the emperor who forced the tribes east die?",
            ["What is the emperor who forced the tribes east?", "When did {q1} die?"],
        ),
        ("Who wrote Hamlet?", ["Who wrote Hamlet?"]),
        ("Who is the director of Alien?", ["Who is the director of Alien?"]),  # nothing left
    ],
)
def test_heuristic_planner_cuts_innermost_descriptions(question, expected):
    plan = HeuristicPlanner().plan(question)
    assert [s.text for s in plan.steps] == expected
    assert plan.edges() == [(f"q{k}", f"q{k + 1}") for k in range(1, len(expected))]


def test_heuristic_planner_nests_to_the_right_and_stops_at_max_steps():
    q = "Most skyscrapers in the birthplace of the director of The Day of the Locust are where?"
    texts = [s.text for s in HeuristicPlanner().plan(q).steps]
    assert texts == [
        "What is the director of The Day of the Locust?",
        "What is the birthplace of {q1}?",
        "Most skyscrapers in {q2} are where?",
    ]
    assert len(HeuristicPlanner(max_steps=2).plan(q).steps) == 2
    with pytest.raises(PlanError, match="empty"):
        HeuristicPlanner().plan("  ")
    with pytest.raises(ValueError, match="max_steps"):
        HeuristicPlanner(max_steps=0)


def _llm_reply(steps) -> list:
    return [_choice(json.dumps({"steps": steps}), None)]


def test_llm_planner_two_phases_against_the_stub(server):
    decomposition = [
        {"question": "Which team is Lou Seal the mascot of?"},
        {"question": "When did #1 last win?", "abstract": False},
    ]
    rewritten = [
        {"question": "Which team has Lou Seal as mascot?"},
        {"question": "When did #1 last win the World Series?"},
    ]
    server.script = [
        (200, json.dumps({"choices": _llm_reply(decomposition)}).encode()),
        (
            200,
            json.dumps(
                {
                    "choices": [
                        _choice("```json\n" + json.dumps({"steps": rewritten}) + "\n```", None)
                    ]
                }
            ).encode(),
        ),
    ]
    planner = LLMPlanner(Endpoint(server.url, "stub", api_key_env="GROUNDING_TEST_NO_SUCH_KEY"))
    plan = planner.plan("When did Lou Seal's team last win?")
    assert [s.text for s in plan.steps] == [
        "Which team has Lou Seal as mascot?",
        "When did {q1} last win the World Series?",
    ]
    assert plan.edges() == [("q1", "q2")] and plan.fallback is None
    (_, first), (_, second) = server.requests
    assert first["temperature"] == 0.0 and "Lou Seal's team" in first["messages"][1]["content"]
    assert "1. Which team is Lou Seal the mascot of?" in second["messages"][1]["content"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("no json here", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"plan": []}), "no non-empty 'steps'"),
        (json.dumps({"steps": [{"q": "x"}]}), "no 'question' text"),
        (
            json.dumps({"steps": [{"question": "Where was #2 born?"}, {"question": "B?"}]}),
            "not an earlier step",
        ),
        (json.dumps({"steps": [{"question": "A?", "abstract": "yes"}]}), "true or false"),
    ],
)
def test_llm_planner_malformed_replies(server, content, message):
    server.reply([_choice(content, None)])
    strict = LLMPlanner(Endpoint(server.url, "stub"), rewrite=False)
    with pytest.raises(PlanError, match=message):
        strict.plan("Who?")
    flat = LLMPlanner(Endpoint(server.url, "stub"), rewrite=False, fallback="flat").plan("Who {x}?")
    assert len(flat.steps) == 1 and flat.steps[0].fill({}) == "Who {x}?"
    assert message in flat.fallback and "one step" in flat.fallback


def test_llm_planner_rewrite_must_keep_the_dependencies(server):
    two = [{"question": "A?"}, {"question": "B of #1?"}]
    server.script = [
        (200, json.dumps({"choices": _llm_reply(two)}).encode()),
        (
            200,
            json.dumps({"choices": _llm_reply([{"question": "A?"}, {"question": "B?"}])}).encode(),
        ),
    ]
    with pytest.raises(PlanError, match="changed the dependencies"):
        LLMPlanner(Endpoint(server.url, "stub")).plan("q?")
    server.script = [
        (200, json.dumps({"choices": _llm_reply(two)}).encode()),
        (200, json.dumps({"choices": _llm_reply([{"question": "A?"}])}).encode()),
    ]
    with pytest.raises(PlanError, match="1 steps for 2"):
        LLMPlanner(Endpoint(server.url, "stub")).plan("q?")


def test_llm_planner_endpoint_failures_are_never_a_silent_fallback(server):
    server.script = [(500, b'{"error": "boom"}')]
    with pytest.raises(EndpointError, match="HTTP 500"):
        LLMPlanner(Endpoint(server.url, "stub", backoff=0.01), fallback="flat").plan("q?")
    assert len(server.requests) == 3  # a 500 is retried twice (the default), then raised
    with pytest.raises(TypeError, match="Endpoint"):
        LLMPlanner("localhost:8000")
    with pytest.raises(ValueError, match="fallback"):
        LLMPlanner(Endpoint(server.url, "m"), fallback="guess")


# --------------------------------------------------------------------------- communities


def _two_cliques() -> TypedGraph:
    left, right = "abcde", "vwxyz"
    triples = [(u, "r", v) for side in (left, right) for u in side for v in side if u < v]
    triples.append(("e", "bridge", "v"))
    texts = {**{c: f"red fruit {c}" for c in left}, **{c: f"blue stone {c}" for c in right}}
    names = [*left, *right, "lonely"]
    return TypedGraph.from_triples(
        triples, entities=names, texts=[texts.get(n, "nothing") for n in names]
    )


def test_communities_split_two_cliques_and_respect_the_size_limit():
    g = _two_cliques()
    comm = Communities.build(g, max_cluster_size=10, seed=1)
    leaves = comm.at(leaf=True)
    members = np.concatenate([c.members for c in leaves])
    assert sorted(members.tolist()) == list(range(10))  # a partition of the connected nodes
    assert {frozenset(g.entities[i] for i in c.members) for c in leaves} == {
        frozenset("abcde"),
        frozenset("vwxyz"),
    }
    assert comm.membership()[g.entity_index("lonely")] == -1
    again = Communities.build(g, max_cluster_size=10, seed=1)
    assert [c.members.tolist() for c in again.communities] == [
        c.members.tolist() for c in comm.communities
    ]
    # a clique cannot be split: it stays one community above the size limit
    assert {len(c.members) for c in Communities.build(g, max_cluster_size=3).at(leaf=True)} == {5}
    assert "red fruit" in next(c.summary for c in leaves if 0 in c.members)
    assert "relations: r" in leaves[0].summary
    custom = Communities.build(g, summarize=lambda texts, rels: f"{len(texts)} members")
    assert {c.summary for c in custom.at(leaf=True)} == {"5 members"}
    with pytest.raises(ValueError, match="no edge"):
        Communities.build(TypedGraph.from_triples([("a", "r", "a")]))
    with pytest.raises(ValueError, match="max_cluster_size"):
        Communities.build(g, max_cluster_size=1)


def test_community_hierarchy_on_a_real_graph():
    """UMLS: a community is split (has children) exactly when it is larger than the limit and
    Leiden could split it; its children partition it; leaves partition the nodes."""
    g = load_kg("umls").graph()
    comm = Communities.build(g, max_cluster_size=10, seed=1)
    assert len(comm.levels) > 1
    by_id = {c.id: c for c in comm.communities}
    children: dict[int, list] = {}
    for c in comm.communities:
        if c.parent is not None:
            assert by_id[c.parent].level == c.level - 1
            children.setdefault(c.parent, []).append(c)
    for c in comm.communities:
        if c.leaf:
            assert c.id not in children
        else:
            assert len(c.members) > 10
            kids = np.concatenate([k.members for k in children[c.id]])
            assert sorted(kids.tolist()) == c.members.tolist()
    leaves = np.concatenate([c.members for c in comm.at(leaf=True)])
    assert sorted(leaves.tolist()) == list(range(g.n_nodes))


def test_community_retriever_returns_the_best_matching_community():
    g = _two_cliques()
    index = TextIndex(g)
    retriever = CommunityRetriever(index, Communities.build(g, seed=1), n_communities=1)
    got = retriever.retrieve(Query("blue stone"), k=10)
    assert set(got.nodes) == set("vwxyz") and len(set(got.scores.tolist())) == 1
    assert len(retriever.retrieve(Query("blue stone"), k=2).index) == 2
    with pytest.raises(ValueError, match="another graph"):
        CommunityRetriever(TextIndex(_two_cliques()), Communities.build(g))


# --------------------------------------------------------------------------- reranker


def test_reranker_formula_by_hand():
    assert dependency_score([0.8], [0.3], 0.75).tolist() == pytest.approx([0.675])
    assert dependency_score([1.0, 0.0], [0.0, 1.0], 0.6).tolist() == pytest.approx([0.6, 0.4])
    assert ALPHA == {"specific": 0.6, "abstract": 0.75}
    assert minmax([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5] and minmax([5.0, 5.0]).tolist() == [
        0,
        0,
    ]
    with pytest.raises(ValueError, match="alpha"):
        dependency_score([1.0], [1.0], 1.5)
    with pytest.raises(ValueError, match="shape"):
        dependency_score([1.0], [1.0, 2.0], 0.5)
    with pytest.raises(ValueError, match="finite"):
        minmax([1.0, np.inf])


def test_agreements_by_hand():
    g = TypedGraph.from_triples([("a", "r", "b"), ("c", "r", "b"), ("b", "r", "d")])
    a, b, c, d = (g.entity_index(x) for x in "abcd")
    # b is joined to a and c; d only to b; a is itself a dependency
    assert graph_agreement(g, [b, d, a], [a, c], [0.7, 0.3]).tolist() == pytest.approx(
        [1.0, 0.0, 0.7]
    )
    emb = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [-1.0, 0.0]])
    assert embedding_agreement(emb, [0, 2, 3], [0, 1], [0.5, 0.5]).tolist() == pytest.approx(
        [0.5, 0.7, 0.0]
    )
    with pytest.raises(ValueError, match="sum <= 1"):
        graph_agreement(g, [b], [a, c], [0.9, 0.3])
    with pytest.raises(ValueError, match="weights of shape"):
        graph_agreement(g, [b], [a, c], [1.0])


def test_rerank_reorders_the_pool_and_cuts_it():
    g = _two_cliques()
    index = TextIndex(g)
    pool = PCR(index).retrieve(Query("red fruit", anchor="e"), k=10)
    m = (np.asarray(pool.index) == g.entity_index("v")).astype(float)  # agree only with v
    out = dependency_rerank(pool, m, alpha=0.0, k=3)
    assert out.nodes[0] == "v" and len(out.index) == 3 and out.retriever == "pcr+rerank"
    r = minmax(pool.scores)
    assert out.scores.tolist() == sorted((1.0 * m).tolist(), reverse=True)[:3]
    same = dependency_rerank(
        pool, np.zeros(len(pool.index)), alpha=0.6, k=10
    )  # no agreement: R's order
    assert same.index.tolist() == pool.index.tolist()
    assert (
        same.provenance["relevance"] == pytest.approx(r.tolist())
        and same.provenance["alpha"] == 0.6
    )
    with pytest.raises(ValueError, match="agreement"):
        dependency_rerank(pool, np.zeros(2), 0.5, 3)


# --------------------------------------------------------------------------- execution


class TableModel:
    """A candidate model from a table: (anchor, relations) -> {answer: prior}."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def propose(self, question, k):
        self.calls.append((question.topic, question.chain))
        row = self.table.get((question.topic, question.chain))
        if not row:
            return Candidates.abstain(f"nothing known about {question.topic}")
        return Candidates.from_scores(list(row), np.log(list(row.values())), k=k)


def _chain_world():
    """t -r1-> b1 -r2-> c1 ; t -r1-> b2 (b2 has no r2 edge). The model prefers b2 at step 1,
    and from b2 proposes c2 (unsupported)."""
    g = TypedGraph.from_triples(
        [("t", "r1", "b1"), ("t", "r1", "b2"), ("b1", "r2", "c1"), ("x", "r2", "c2")],
        entities=["t", "b1", "b2", "c1", "c2", "x"],
    )
    model = TableModel(
        {
            ("t", ("r1",)): {"b1": 0.4, "b2": 0.6},
            ("b1", ("r2",)): {"c1": 0.9, "c2": 0.1},
            ("b2", ("r2",)): {"c2": 0.9, "c1": 0.1},
        }
    )
    q = KGQuestion(
        "q", "What is the r2 of the r1 of t?", "t", ("r1", "r2"), ("c1",), ("c1",), "test"
    )
    return g, model, q


def test_execution_grounds_each_step_and_marginalizes_over_anchors():
    g, model, q = _chain_world()
    system = PankRAG(
        TemplatePlanner({"r1": "r1", "r2": "r2"}),
        model,
        TextIndex(g),
        GroundingConfig(lam=50.0, kappa=1.0),
    )
    out = system.answer(q)
    first, final = out.steps["q1"], out.steps["q2"]
    # step 1: both b1 and b2 are supported (t -r1-> each): the prior's order stays
    assert first.answers == ("b2", "b1") and first.probs == pytest.approx([0.6, 0.4], abs=1e-9)
    assert first.retrieval is not None and first.result is not None and first.reason is None
    # step 2 starts from both answers with their probabilities; only b1 -r2-> c1 is a walk
    assert final.anchors == ("b2", "b1") and final.anchor_weights == pytest.approx([0.6, 0.4])
    assert final.text == "What is the r2 of b2?"  # the slot takes the top answer
    assert out.answer == "c1" and final.probs.sum() == pytest.approx(1.0)
    # the marginal sums the posterior over the trajectories d -> a, which are, in order,
    # b2 -> c2, b2 -> c1 (the model's order from b2), b1 -> c1, b1 -> c2
    assert final.result.names == ("b2->c2", "b2->c1", "b1->c1", "b1->c2")
    post = np.exp(np.asarray(final.result.log_posterior, np.float64))
    assert final.answers == ("c1", "c2")
    assert final.probs == pytest.approx([post[[1, 2]].sum(), post[[0, 3]].sum()], abs=1e-12)
    # by hand: priors 0.6*0.9, 0.6*0.1, 0.4*0.9, 0.4*0.1; only b1 -> c1 has a walk (energy
    # 0), the others the slack kappa = 1 (Eq. (19)): p ∝ prior * exp(-lam * E) (Eq. (7))
    prior = np.array([0.54, 0.06, 0.36, 0.04]) * np.exp(-50.0 * np.array([1, 1, 0, 1]))
    assert post == pytest.approx(prior / prior.sum(), rel=1e-6)
    assert set(model.calls) == {("t", ("r1",)), ("b2", ("r2",)), ("b1", ("r2",))}


def test_a_failed_step_propagates_its_reason_and_injection_moves_mass():
    g, model, q = _chain_world()
    planner = TemplatePlanner({"r1": "r1", "r2": "r2"})
    bad = KGQuestion(
        "q", "?", "x", ("r1", "r2"), ("c1",), (), "test"
    )  # the model knows nothing of x
    out = PankRAG(planner, model, TextIndex(g), GroundingConfig(lam=1.0, kappa=1.0)).answer(bad)
    assert out.answer is None and "nothing known about x" in out.steps["q1"].reason
    assert "dependency 'q1' has no answer" in out.reason
    system = PankRAG(planner, model, TextIndex(g), GroundingConfig(lam=50.0, kappa=1.0))
    hurt = system.answer(q, inject={"q1": "x"}, inject_mass=0.5)
    first = hurt.steps["q1"]
    assert first.injected and first.answers == ("x", "b2", "b1")
    assert first.probs == pytest.approx([0.5, 0.3, 0.2], abs=1e-9)
    assert "nothing known about x" not in (hurt.reason or "")  # x's branch abstains, b1/b2 answer
    assert hurt.steps["q2"].anchors == ("x", "b2", "b1")
    with pytest.raises(ValueError, match="unknown steps"):
        system.answer(q, inject={"q9": "x"})
    with pytest.raises(ValueError, match="inject_mass"):
        system.answer(q, inject={"q1": "x"}, inject_mass=0)


class FixedPlanner:
    name = "fixed"

    def __init__(self, plan):
        self._plan = plan

    def plan(self, question):
        return self._plan


def test_a_step_without_a_usable_anchor_says_why():
    g, model, q = _chain_world()
    for steps, why in (
        ((SubQuestion("q1", "Who?"),), "names no entity and depends on no step"),
        ((SubQuestion("q1", "Who?", anchors=("nobody",)),), "not entities of the graph"),
    ):
        system = PankRAG(
            FixedPlanner(Plan("Who?", steps)),
            model,
            TextIndex(g),
            GroundingConfig(lam=1.0, kappa=1.0),
        )
        out = system.answer(q)
        assert out.answer is None and why in out.reason and out.final.retrieval is None


def test_reranker_keeps_the_neighbors_of_the_likelier_dependency():
    """Step 2's pool holds the neighbors of both resolved answers; with k_nodes = 1 the
    reranker (alpha = 0: agreement only) keeps the neighbor of the likelier answer."""
    g, model, q = _chain_world()
    planner = TemplatePlanner({"r1": "r1", "r2": "r2"})
    cfg, kw = GroundingConfig(lam=1.0, kappa=1.0), dict(k_nodes=1, pool=10)
    reranked = PankRAG(planner, model, TextIndex(g), cfg, alpha=0.0, **kw).answer(q).steps["q2"]
    plain = PankRAG(planner, model, TextIndex(g), cfg, rerank=False, **kw).answer(q).steps["q2"]
    assert reranked.retrieval.retriever == "pcr+rerank" and plain.retrieval.retriever == "pcr"
    # the pool (reachable in one hop from b2, b1) is b1, b2, c1; agreement M: b2 is the
    # dependency answer of weight 0.6; b1 that of 0.4; c1 is joined to b1 (0.4)
    assert reranked.retrieval.nodes == ("b2",)
    assert reranked.retrieval.provenance["agreement"] == pytest.approx([0.6])
    assert set(plain.retrieval.index.tolist()) <= {g.entity_index(x) for x in ("b1", "b2", "c1")}
    first = PankRAG(planner, model, TextIndex(g), cfg, alpha=0.0, **kw).answer(q).steps["q1"]
    assert first.retrieval.retriever == "pcr"  # no dependency: nothing to rerank


def test_pankrag_arguments():
    g, model, _ = _chain_world()
    planner, index = FlatPlanner(), TextIndex(g)
    with pytest.raises(TypeError, match="config"):
        PankRAG(planner, model, index)
    with pytest.raises(TypeError, match="PankRAG: config must be a GroundingConfig"):
        PankRAG(planner, model, index, {"lam": 1.0, "kappa": 1.0})
    with pytest.raises(TypeError, match="(lam|kappa)"):
        PankRAG(planner, model, index, GroundingConfig(lam=1.0))
    for bad, message in (
        (dict(mode="everywhere"), "mode"),
        (dict(agreement="vibes"), "agreement"),
        (dict(alpha=2.0), "alpha"),
        (dict(k_nodes=0), "k_nodes"),
        (dict(mode="global"), "communities"),
    ):
        with pytest.raises(ValueError, match=message):
            PankRAG(planner, model, index, GroundingConfig(lam=1.0, kappa=1.0), **bad)


# --------------------------------------------------------------------------- data


def test_musique_ships_with_its_gold_decompositions(tmp_path):
    qs = load_musique()
    assert len(qs) == 3000
    assert [sum(q.hops == h for q in qs) for h in (2, 3, 4)] == [2180, 647, 173]
    plans = [plan_from_decomposition(q.text, q.decomposition, strict=False) for q in qs]
    assert all(len(p.steps) == q.hops for p, q in zip(plans, qs))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"question": "q", "answer": "a", "id": 1, "question_decomposition": []}) + "\n"
    )
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1: question_decomposition"):
        load_musique(bad)
    bad.write_text("\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2"):
        load_musique(bad)
    bad.write_text(json.dumps({"question": "q", "question_decomposition": [{"question": "a"}]}))
    with pytest.raises(ValueError, match="missing field"):
        load_musique(bad)


def test_llm_summarizer_against_the_stub(server):
    server.reply([_choice("  Red fruit, all of them.  ", None)])
    summarize = LLMSummarizer(Endpoint(server.url, "stub", retries=0), max_members=2)
    comm = Communities.build(_two_cliques(), seed=1, summarize=summarize)
    assert {c.summary for c in comm.communities} == {"Red fruit, all of them."}
    _, body = server.requests[0]
    prompt = body["messages"][0]["content"]
    assert prompt.count("fruit") + prompt.count("stone") == 2  # max_members member texts
    assert "Relations among them: r" in prompt
    server.script = [(503, b"busy")]
    with pytest.raises(EndpointError, match="HTTP 503"):
        Communities.build(_two_cliques(), summarize=summarize)


# --------------------------------------------------------------------------- blind plans


@pytest.fixture(scope="module")
def umls_blind():
    """The UMLS benchmark and a relation-path predictor fitted on its training questions."""
    bench = kgqa_benchmark("umls", questions_per_hop=60, seed=0)
    pred = RelationChainPredictor(HashingEncoder().encode, bench.relation_labels, bench.graph)
    return bench, pred.fit(bench.split("train"))


def test_predicted_path_planner_plans_the_top_path_and_refuses_gold_questions(umls_blind):
    bench, pred = umls_blind
    planner = PredictedPathPlanner(pred, bench.relation_labels)
    flat = PredictedPathPlanner(pred, bench.relation_labels, flat=True)
    template = TemplatePlanner(bench.relation_labels)
    for q in bench.split("test"):
        b = blind(q)
        top = pred.predict([b], k=3)[0][0][0]
        assert planner.predicted(b) == top
        plan = planner.plan(b)
        # the template planner's steps for the predicted path (its gold chain replaced)
        assert plan.steps == template.chain_steps(q.topic, top)
        assert tuple(r for s in plan.steps for r in s.relations) == top
        (step,) = flat.plan(b).steps
        assert step.relations == top and step.anchors == (q.topic,) and step.fill({}) == q.text
    with pytest.raises(TypeError, match="BlindQuestion"):
        planner.plan(bench.split("test")[0])  # a question with gold fields is refused
    with pytest.raises(PlanError, match="no relation path is predicted"):
        planner.plan(BlindQuestion("What is the location of it?", "no_such_entity"))
    with pytest.raises(TypeError, match="chain predictor"):
        PredictedPathPlanner(object(), bench.relation_labels)


class WalkModel:
    """A candidate model that reads only what a step gives it (anchor, relations): the
    entities the relations reach from the anchor in ``graph`` first, every other entity after,
    each with a fixed pseudo-random score."""

    def __init__(self, graph):
        self.graph = graph
        self.noise = np.random.default_rng(0).normal(size=graph.n_nodes)

    def propose(self, question, k):
        g = self.graph
        if not question.chain:
            raise ValueError("the question has no relation chain to compose")
        frontier = {g.entity_index(question.topic)}
        for r in question.chain:
            edges = g.edges_from(sorted(frontier))
            rel = np.asarray(g.relation)[edges]
            frontier = set(np.asarray(g.tail)[edges][rel == g.relation_index(r)].tolist())
        score = self.noise + 5.0 * np.isin(np.arange(g.n_nodes), sorted(frontier))
        score[g.entity_index(question.topic)] = -np.inf
        names = [e for e in g.entities]
        return Candidates.from_scores(names, score, k=k)


def _blind_pankrag(bench, pred, questions):
    """Blind PankRAG's final answers: planner and system see ``blind(q)`` only."""
    planner = PredictedPathPlanner(pred, bench.relation_labels)
    system = PankRAG(
        planner, WalkModel(bench.graph), TextIndex(bench.graph), GroundingConfig(lam=5.0, kappa=1.0)
    )
    outs = system.answer_batch([blind(q) for q in questions])
    return [(o.final.answers, np.round(o.final.probs, 12).tolist(), o.reason) for o in outs]


def test_scrambling_every_gold_field_leaves_blind_pankrag_unchanged(umls_blind):
    bench, pred = umls_blind
    test = bench.split("test")
    rng = np.random.default_rng(1)
    chains = [q.chain for q in test]
    scrambled = []
    for j, q in enumerate(test):
        other = [c for c in chains if c != q.chain]
        scrambled.append(
            dataclasses.replace(
                q,
                id=f"scrambled:{j}",
                chain=other[rng.integers(len(other))],
                answers=("nobody",),
                observed=(),
                split="train",
            )
        )
    fields = {f.name for f in dataclasses.fields(test[0])} - {"text", "topic"}
    assert fields == {"id", "chain", "answers", "observed", "split"}  # every gold field
    assert all(getattr(a, f) != getattr(b, f) for a, b in zip(test, scrambled) for f in fields)
    want = _blind_pankrag(bench, pred, test)
    assert any(a for a, _, _ in want)  # it answers something
    assert _blind_pankrag(bench, pred, scrambled) == want
    # the harness has power: the oracle (templated plan from the gold chain) does move
    oracle = PankRAG(
        TemplatePlanner(bench.relation_labels), WalkModel(bench.graph), TextIndex(bench.graph),
        GroundingConfig(lam=5.0, kappa=1.0),
    )  # fmt: skip
    moved = [o.answer for o in oracle.answer_batch(scrambled)]
    assert moved != [o.answer for o in oracle.answer_batch(test)]


# --------------------------------------------------------------------------- free text


class NeighborModel:
    """A free-text candidate model: the anchor's neighbors in ``graph`` (no relation needed)."""

    def __init__(self, graph):
        self.graph = graph

    def propose(self, question, k):
        g = self.graph
        a = g.entity_index(question.topic)
        out = np.asarray(g.tail)[g.edges_from([a])].tolist()
        names = [g.entities[j] for j in dict.fromkeys(out) if j != a]
        if not names:
            return Candidates.abstain(f"{question.topic} has no neighbor")
        return Candidates.from_scores(names, -np.arange(len(names), dtype=float), k=k)


def _every_step_answers_or_says_why(outcomes):
    for o in outcomes:
        assert o.plan is not None, o.failure
        for s in o.steps.values():
            assert bool(s.answers) != bool(s.reason), (s.text, s.answers, s.reason)
        assert o.answer is not None or o.reason


def test_free_text_end_to_end_on_codex_m_links_ids_and_abstains_with_reasons():
    """Free text through the heuristic planner on the real CoDEx-M graph (entity texts are
    Wikidata ids and types): a question naming an entity by id is linked and answered; the
    MuSiQue question naming "August Bloedner" (not a text of the graph) abstains with the
    linking reason; the TransE-like answerer that needs a relation chain says so."""
    graph = load_kg("codex-m").graph()
    index = TextIndex(graph)
    system = PankRAG(
        HeuristicPlanner(), NeighborModel(graph), index, GroundingConfig(lam=5.0, kappa=1.0)
    )
    bloedner, by_id, two_step = system.answer_batch([
        "Who was in charge of the city where August Bloedner died?",
        "Where did Q100005 die?",
        "Which country is the birthplace of Q100005's spouse in?",
    ])  # fmt: skip
    _every_step_answers_or_says_why([bloedner, by_id, two_step])
    assert bloedner.answer is None
    assert "no name or text of a graph entity is found in" in bloedner.steps["q1"].reason
    assert "dependency 'q1' has no answer" in bloedner.reason
    assert by_id.steps["q1"].anchors == ("Q100005",) and by_id.answer is not None
    assert two_step.steps["q1"].anchors == ("Q100005",) and len(two_step.plan.steps) > 1
    # a model that needs the step's relations abstains with its reason (free text has none)
    chained = PankRAG(
        HeuristicPlanner(), WalkModel(graph), index, GroundingConfig(lam=5.0, kappa=1.0)
    )
    out = chained.answer("Where did Q100005 die?")
    assert out.answer is None and "no relation chain" in out.reason


def test_free_text_end_to_end_on_musique_questions_never_fails_silently():
    """Real MuSiQue questions over the Lou Seal graph (real entity names): each step answers
    or gives its reason, and questions naming a graph entity are linked."""
    from grounding.datasets import lou_seal

    graph = lou_seal()
    system = PankRAG(
        HeuristicPlanner(),
        NeighborModel(graph),
        TextIndex(graph),
        GroundingConfig(lam=5.0, kappa=1.0),
    )
    questions = [q.text for q in load_musique()[:40]] + [
        "Which league does the team of Lou Seal play in?",
        "What city is the team whose mascot is Fredbird located in?",
    ]
    outcomes = system.answer_batch(questions)
    _every_step_answers_or_says_why(outcomes)
    lou = outcomes[-2]
    assert lou.steps["q1"].anchors == ("lou_seal",) and lou.answer is not None
    assert outcomes[-1].steps["q1"].anchors == ("fredbird",)
