"""Knowledge hypergraphs and PRoH: hypergraph <-> bipartite round trips, the WD50K loader and its
questions against brute force, EWO by hand, beam search against exhaustive search, DFS against
BFS, the Hasse reduction against brute force, and grounded PRoH on a hand-built hypergraph."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _stub import _choice
from hypothesis import given
from hypothesis import strategies as st

from grounding import GroundingConfig
from grounding.datasets import hypergraph_qa_benchmark, load_wd50k, read_statements
from grounding.hypergraph import KnowledgeHypergraph, hop_relations, parse_role, role_name
from grounding.language import Endpoint, EndpointError
from grounding.plans import HypergraphTemplatePlanner, LLMPlanner, Plan, SubQuestion
from grounding.qa import PRoH
from grounding.retrieval import (
    HypergraphIndex,
    HyperPath,
    LLMRelevance,
    beam_search,
    plan_context,
)
from grounding.retrieval.hyperedge_search import ewo, path_answers

ENTS = [f"e{i}" for i in range(6)]
RELS = ["r", "s", "q"]


@st.composite
def statements(draw):
    n = draw(st.integers(1, 6))
    out = []
    for _ in range(n):
        s, o = draw(st.sampled_from(ENTS)), draw(st.sampled_from(ENTS))
        quals = draw(st.lists(st.tuples(st.sampled_from(RELS), st.sampled_from(ENTS)), max_size=3))
        out.append((s, draw(st.sampled_from(RELS)), o, tuple(quals)))
    return out


@given(statements(), st.data())
def test_hypergraph_bipartite_round_trip(stmts, data):
    w = data.draw(st.lists(st.floats(0.05, 1.0), min_size=len(stmts), max_size=len(stmts)))
    kh = KnowledgeHypergraph.from_statements(stmts, reliability=w)
    g = kh.to_bipartite()
    # one node per entity and per statement; two edges (one each way) per member
    assert g.n_nodes == kh.n_entities + len(stmts) and g.n_edges == 2 * len(kh.member)
    back = KnowledgeHypergraph.from_bipartite(g)
    assert back.entities == kh.entities
    assert [back.statement(h) for h in range(back.n_edges)] == [tuple(s) for s in stmts]
    np.testing.assert_allclose(back.reliability, w)
    # a walk entity -> statement -> entity costs the statement's reliability once (Eq. (8))
    for (_, _, v), wt in zip(g.triples(), np.asarray(g.reliability)):
        into = v.startswith("statement:")
        assert wt == (w[int(v.split(":")[1])] if into else 1.0)
    # incidence and the transpose against the statements
    inc = kh.incidence().toarray()
    for h, (s, _, o, quals) in enumerate(stmts):
        assert set(np.flatnonzero(inc[h])) == {
            kh.entity_index(x) for x in (s, o, *(v for _, v in quals))
        }
    for e in range(kh.n_entities):
        assert kh.edges_of([e]).tolist() == np.flatnonzero(inc[:, e]).tolist()


def test_hypergraph_validation_roles_and_xgi():
    kh = KnowledgeHypergraph.from_statements([("a", "r", "b", (("q", "c"),))])
    assert parse_role(role_name(2, "q")) == (2, "q") and hop_relations(
        "subject:r", "qualifier:q"
    ) == (
        "subject:r",
        "qualifier:q^-1",
    )
    with pytest.raises(ValueError, match="not a role name"):
        parse_role("speaker:r")
    with pytest.raises(ValueError, match="unknown entity"):
        KnowledgeHypergraph.from_statements([("a", "r", "b", ())], entities=["a"])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        KnowledgeHypergraph.from_statements([("a", "r", "b", ())], reliability=[0.0])
    with pytest.raises(KeyError, match="unknown entity"):
        kh.entity_index("zz")
    x = kh.to_xgi()
    assert [sorted(x.edges.members(h)) for h in x.edges] == [["a", "b", "c"]]
    assert kh.hyperedge_text(0) == "a r b; q c"


def test_wd50k_ships_and_bad_lines_name_file_and_line(tmp_path):
    d = load_wd50k()
    assert (d.train.n_edges, d.valid.n_edges, d.test.n_edges) == (22738, 3279, 5297)
    assert d.train.entities == d.test.entities and d.train.n_entities == 18791
    assert len(d.train.relations) == 278 and sum("(" in t for t in d.train.texts) == 4716
    assert all(len(d.train.statement(h)[3]) >= 1 for h in range(0, d.train.n_edges, 97))  # n-ary
    labeled = sum(lab != rel for lab, rel in zip(d.train.relation_labels, d.train.relations))
    assert labeled == 53  # CoDEx's labels where it knows the property
    bad = tmp_path / "s.txt"
    bad.write_text("Q1,P1,Q2,P3\n")
    with pytest.raises(ValueError, match=r"s.txt, line 1: odd number of qualifier fields"):
        read_statements(bad)
    bad.write_text("Q1,P1,Q2\nQ1,P1\n")
    with pytest.raises(ValueError, match=r"line 2: a statement needs s,r,o"):
        read_statements(bad)
    bad.write_text("Q1,,Q2\n")
    with pytest.raises(ValueError, match="empty field"):
        read_statements(bad)


def test_hypergraph_questions_against_brute_force():
    data = load_wd50k()
    bench = hypergraph_qa_benchmark(questions_per_hop=20, hops=(2, 3, 5), data=data)
    world = [
        s
        for part in (data.train, data.valid, data.test)
        for s in map(part.statement, range(part.n_edges))
    ]
    train = [data.train.statement(h) for h in range(data.train.n_edges)]

    def members(s):
        subj, r, obj, quals = s
        return [
            (subj, f"subject:{r}"),
            (obj, f"object:{r}"),
            *((v, f"qualifier:{q}") for q, v in quals),
        ]

    def reach(stmts, topic, roles):
        frontier = {topic}
        for a, b in roles:
            frontier = {
                e2
                for s in stmts
                for e, ra in members(s)
                if ra == a and e in frontier
                for e2, rb in members(s)
                if rb == b and e2 != e
            }
        return frontier - {topic}

    fitting = train + [data.valid.statement(h) for h in range(data.valid.n_edges)]
    for q in bench.questions[::7]:
        assert set(q.answers) == reach(world, q.topic, q.roles)
        assert set(q.observed) == reach(train, q.topic, q.roles) <= set(q.answers)
        # what a system may fit on: train + valid statements, never a test one
        assert set(bench.fitting_answers(q)) == reach(fitting, q.topic, q.roles)
        assert len(q.chain) == 2 * q.hops and q.topic not in q.answers
    assert {q.hops for q in bench.questions} == {2, 3, 5}
    assert {q.split for q in bench.questions} == {"train", "valid", "test"}
    with pytest.raises(ValueError, match="hops"):
        hypergraph_qa_benchmark(hops=(0,), data=data)
    with pytest.raises(ValueError, match="wording"):
        hypergraph_qa_benchmark(wording="plain", data=data)


def test_hypergraph_test_questions_are_worded_apart_from_training_ones():
    """Held-out wording (the default): train/valid hops use wordings 0-3, test hops 4-5, frames
    likewise; chains, answers and splits do not depend on the wording; no text doubles a
    preposition; wording "single" is the one template."""
    from grounding.datasets.wd50k import HOP_WORDINGS
    from grounding.query import FRAMES

    data = load_wd50k()
    held = hypergraph_qa_benchmark(questions_per_hop=30, hops=(2, 3), data=data)
    single = hypergraph_qa_benchmark(questions_per_hop=30, hops=(2, 3), data=data, wording="single")
    assert held.wording == "held-out" and single.wording == "single"
    strip = [(q.id, q.topic, q.roles, q.answers, q.observed, q.split) for q in held.questions]
    assert strip == [(q.id, q.topic, q.roles, q.answers, q.observed, q.split)
                     for q in single.questions]  # fmt: skip

    def stems(ids):  # the fixed words of the given hop wordings
        return [w.split("{")[1].split("}")[1].strip() for w in (HOP_WORDINGS[i] for i in ids)]

    test_words, train_words = stems((4, 5)), stems((0, 1, 2, 3))
    for q in held.questions:
        opening = q.text.split(" ")[0]
        frames = (3, 4) if q.split == "test" else (0, 1, 2)
        assert opening in {FRAMES[f].split(" ")[0] for f in frames}, q.text
        words = test_words if q.split == "test" else train_words
        other = train_words if q.split == "test" else test_words
        assert any(w in q.text for w in words) and not any(w in q.text for w in other), q.text
        assert " of of " not in q.text and " in in " not in q.text
    for q in single.questions:
        assert q.text.startswith("What is the ") and "of the statement whose" in q.text


# --------------------------------------------------------------------------- retrieval


def _toy():
    """alice won prize1 for film1; film1 was directed by bob; bob won prize2 for film2;
    carol acted in film1. Texts make the question words match the right statements."""
    stmts = [
        ("alice", "award", "prize1", (("for_work", "film1"),)),
        ("film1", "director", "bob", (("studio", "acme"),)),
        ("bob", "award", "prize2", (("for_work", "film2"),)),
        ("carol", "cast", "film1", (("role", "hero"),)),
    ]
    return KnowledgeHypergraph.from_statements(stmts)


def test_ewo_by_hand():
    kh = _toy()
    inc = kh.incidence()
    rho = np.zeros(kh.n_entities)
    rho[kh.entity_index("film1")] = 0.5
    rho[kh.entity_index("bob")] = 0.25
    # statement 0 shares film1 with statements 1 and 3; statement 1 shares bob with 2
    np.testing.assert_allclose(ewo(inc, 0, rho), [0.0, 0.5, 0.0, 0.5])
    np.testing.assert_allclose(ewo(inc, 1, rho), [0.5, 0.0, 0.25, 0.5])
    np.testing.assert_allclose(ewo(inc, 1, None), [1.0, 0.0, 1.0, 1.0])


def _exhaustive(index, anchors, weights, qv, max_depth, use_ewo=True):
    kh, inc = index.hypergraph, index.incidence.toarray()
    sigma = index.edge_relevance(qv)
    rho = index.entity_relevance(qv) if use_ewo else np.ones(kh.n_entities)
    w = np.zeros(kh.n_entities)
    np.add.at(w, anchors, weights)
    out = {}

    def grow(path, score):
        out[path] = score
        if len(path) == max_depth:
            return
        for h2 in range(kh.n_edges):
            shared = inc[path[-1]] * inc[h2]
            if h2 not in path and shared.sum() > 0:
                grow((*path, h2), score + sigma[h2] + (shared * rho).sum())

    for h in range(kh.n_edges):
        if inc[h][anchors].any():
            grow((h,), sigma[h] + inc[h] @ w)
    return out


@pytest.mark.parametrize("use_ewo", [True, False])
def test_beam_search_equals_exhaustive_search_when_wide_enough(use_ewo):
    kh = _toy()
    index = HypergraphIndex(kh)
    qv = index.embed("Who directed the film alice won the award for?")
    anchors = [kh.entity_index("alice")]
    paths = beam_search(index, anchors, [1.0], qv, width=10_000, max_depth=3, use_ewo=use_ewo)
    expected = _exhaustive(index, anchors, [1.0], qv, 3, use_ewo)
    assert {p.edges: pytest.approx(p.score) for p in paths} == expected
    narrow = beam_search(index, anchors, [1.0], qv, width=1, max_depth=3, use_ewo=use_ewo)
    # width 1: one path per depth, each the best extension of the one before
    assert [len(p.edges) for p in sorted(narrow, key=lambda p: len(p.edges))] == [1, 2, 3]
    assert all(p.edges in expected and p.score == pytest.approx(expected[p.edges]) for p in narrow)
    with pytest.raises(ValueError, match="anchor"):
        beam_search(index, [], [], qv)


def test_path_answers_and_plan_context():
    kh = _toy()
    index = HypergraphIndex(kh)
    paths = [HyperPath((0,), 1.0), HyperPath((0, 1), 3.0)]
    ents, scores = path_answers(index, paths, exclude=[kh.entity_index("alice")])
    # members of the last hyperedges; score = the path's mean score (3/2 beats 1/1); ties by
    # entity index (film1, bob, acme were met in that order)
    assert [kh.entities[e] for e in ents] == ["film1", "bob", "acme", "prize1"]
    np.testing.assert_allclose(scores, [1.5, 1.5, 1.5, 1.0])
    qv = index.embed("award")
    keep, sketch = plan_context(index, [kh.entity_index("alice")], qv, depth=1, width=1)
    assert keep.tolist() == [True, False, False, False] and sketch == index.edge_texts[0]
    keep, _ = plan_context(index, [kh.entity_index("alice")], qv, targets=[2], depth=1, width=10)
    assert keep[2] and keep[0]  # the target, and alice's statement


# --------------------------------------------------------------------------- PRoH


class _Q:
    def __init__(self, text, topic, roles):
        self.text, self.topic, self.roles = text, topic, roles


def test_proh_answers_a_two_hop_question_and_dfs_equals_bfs():
    kh = _toy()
    index = HypergraphIndex(kh)
    q = _Q(
        "Who is the director of the film for which alice received an award?",
        "alice",
        (("subject:award", "qualifier:for_work"), ("subject:director", "object:director")),
    )
    cfg = GroundingConfig(lam=20.0, kappa=1.0, eps=0.0)
    kw = dict(max_solutions=50, max_states=1000, branch=3)
    dfs = PRoH(HypergraphTemplatePlanner(kh), index, cfg, search="dfs", **kw).answer(q)
    bfs = PRoH(HypergraphTemplatePlanner(kh), index, cfg, search="bfs", **kw).answer(q)
    assert dfs.answer == "bob" and dfs.probs.sum() == pytest.approx(1.0)

    def key(out):
        return sorted((tuple(sorted(s.chosen.items())), round(s.score, 9)) for s in out.solutions)

    assert key(dfs) == key(bfs) and len(dfs.solutions) >= 1
    # step 1 grounds the claim alice -subject:award-> * -qualifier:for_work^-1-> film1
    first = dfs.solutions[0].chosen["q1"]
    assert first == "film1"
    k2 = PRoH(
        HypergraphTemplatePlanner(kh),
        index,
        GroundingConfig(lam=20.0, kappa=1.0),
        search="dfs",
        branch=3,
    )
    assert len(k2.answer(q).solutions) <= 2  # K = 2 by default
    lost = PRoH(HypergraphTemplatePlanner(kh), index, GroundingConfig(lam=1.0, kappa=1.0)).answer(
        _Q("?", "nobody", q.roles)
    )
    assert lost.answer is None and "in no hyperedge" in lost.reason


def test_proh_arguments():
    index = HypergraphIndex(_toy())
    planner = HypergraphTemplatePlanner(index.hypergraph)
    with pytest.raises(TypeError, match="config"):
        PRoH(planner, index)
    with pytest.raises(TypeError, match="PRoH: config must be a GroundingConfig"):
        PRoH(planner, index, {"lam": 1.0, "kappa": 1.0})
    with pytest.raises(TypeError, match="(lam|kappa)"):
        PRoH(planner, index, GroundingConfig(kappa=1.0))
    for bad, message in ((dict(search="astar"), "search"), (dict(width=0), "width"),
                         (dict(temperature=0.0), "temperature")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            PRoH(planner, index, GroundingConfig(lam=1.0, kappa=1.0), **bad)


def test_hasse_reduction_equals_brute_force_on_random_dags():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 8))
        edges = {(i, j) for j in range(n) for i in range(j) if rng.random() < 0.5}
        plan = Plan(
            "q",
            tuple(
                SubQuestion(f"s{j}", "?", tuple(f"s{i}" for i in range(j) if (i, j) in edges))
                for j in range(n)
            ),
        )

        def paths(u, v, avoid_direct, edges=edges):
            stack = [u]
            seen = set()
            while stack:
                x = stack.pop()
                for a, b in edges:
                    if a == x and (a, b) != ((u, v) if avoid_direct else None) and b not in seen:
                        if b == v:
                            return True
                        seen.add(b)
                        stack.append(b)
            return False

        kept = {(i, j) for i, j in edges if not paths(i, j, avoid_direct=True)}
        got = {(int(a[1:]), int(b[1:])) for a, b in plan.transitive_reduction().edges()}
        assert got == kept


def test_llm_planner_sees_the_plan_context(server):
    server.reply([_choice(json.dumps({"steps": [{"question": "Who?"}]}), None)])
    LLMPlanner(Endpoint(server.url, "stub"), rewrite=False).plan(
        "Who?", context="alice award prize1"
    )
    ((_, body),) = server.requests
    assert "alice award prize1" in body["messages"][1]["content"]
    assert LLMPlanner.accepts_context is True


def test_llm_relevance_against_the_stub(server):
    server.reply([_choice("```json\n[0.9, 0.1]\n```", None)])
    refine = LLMRelevance(Endpoint(server.url, "stub"))
    np.testing.assert_allclose(refine("Who directed film1?", ["bob", "acme"]), [0.9, 0.1])
    ((_, body),) = server.requests
    assert "1. bob\n2. acme" in body["messages"][0]["content"]
    for bad in ("[0.5]", "[2.0, 0.1]", "not json", '{"a": 1}', "[true, 0.1]"):
        server.reply([_choice(bad, None)])
        with pytest.raises(
            EndpointError, match="relevance scores: the reply is not JSON|numbers in"
        ):
            refine("q?", ["bob", "acme"])


def test_proh_refines_the_most_relevant_entities():
    kh = _toy()
    index = HypergraphIndex(kh)
    calls = []

    def refine(question, texts):
        calls.append((question, list(texts)))
        return [1.0] * len(texts)

    q = _Q("Who is the director of film1?", "alice", (("subject:award", "qualifier:for_work"),))
    PRoH(HypergraphTemplatePlanner(kh), index, GroundingConfig(lam=1.0, kappa=1.0), refine=refine,
         refine_threshold=0.0, max_refined=3).answer(q)  # fmt: skip
    assert calls and all(len(texts) <= 3 for _, texts in calls)
    assert all(t in index.entity_context for _, texts in calls for t in texts)
    # the refined relevance is what the beam search weighs overlaps with
    qv = index.embed("film1")
    rho = np.zeros(kh.n_entities)
    rho[kh.entity_index("film1")] = 1.0
    a = [kh.entity_index("alice")]
    with_rho = beam_search(index, a, [1.0], qv, width=100, max_depth=2, relevance=rho)
    expected = _exhaustive_with(index, a, qv, rho)
    assert {p.edges: pytest.approx(p.score) for p in with_rho} == expected


def _exhaustive_with(index, anchors, qv, rho):
    inc = index.incidence.toarray()
    sigma = index.edge_relevance(qv)
    out = {}
    for h in range(inc.shape[0]):
        if inc[h][anchors].any():
            s0 = sigma[h] + inc[h][anchors].sum()
            out[(h,)] = s0
            for h2 in range(inc.shape[0]):
                shared = inc[h] * inc[h2]
                if h2 != h and shared.sum() > 0:
                    out[(h, h2)] = s0 + sigma[h2] + (shared * rho).sum()
    return out


# --------------------------------------------------------------------------- blind PRoH


class _WeightedPlanner:
    """Two one-step plans with probabilities (a ``plans(question, k)`` planner)."""

    name = "weighted"

    def __init__(self, kh, weighted):
        self.template, self.weighted = HypergraphTemplatePlanner(kh), weighted

    def plans(self, question, k):
        return [(self.template.plan(_Q(question.text, question.topic, r)), w)
                for r, w in self.weighted][:k]  # fmt: skip

    def plan(self, question):
        return self.plans(question, 1)[0][0]


def test_proh_weighs_each_plan_by_its_probability():
    """Plans from ``plans(question, k)`` start their trajectories at ``log w``: the answer
    distribution mixes the plans' final distributions by ``w`` (one-step plans)."""
    kh = _toy()
    index = HypergraphIndex(kh)
    award = (("subject:award", "qualifier:for_work"),)  # alice -> film1
    prize = (("subject:award", "object:award"),)  # alice -> prize1
    planner = _WeightedPlanner(kh, [(award, 0.75), (prize, 0.25)])
    out = PRoH(planner, index, GroundingConfig(lam=20.0, kappa=1.0, eps=0.0)).answer(
        _Q("award?", "alice", ())
    )
    assert sorted(s.score for s in out.solutions) == pytest.approx(np.log([0.25, 0.75]))
    mass = dict(zip(out.answers, out.probs))
    one = {
        r: PRoH(
            _WeightedPlanner(kh, [(r, 1.0)]), index, GroundingConfig(lam=20.0, kappa=1.0, eps=0.0)
        ).answer(_Q("award?", "alice", ()))
        for r in (award, prize)
    }
    for a in mass:
        want = sum(w * dict(zip(one[r].answers, one[r].probs)).get(a, 0.0)
                   for r, w in ((award, 0.75), (prize, 0.25)))  # fmt: skip
        assert mass[a] == pytest.approx(want)
    empty = PRoH(_WeightedPlanner(kh, []), index, GroundingConfig(lam=1.0, kappa=1.0)).answer(
        _Q("award?", "alice", ())
    )
    assert empty.answer is None and "gave no plan" in empty.reason


@pytest.fixture(scope="module")
def wd50k_blind():
    from grounding.language import HashingEncoder
    from grounding.plans import RoleChainPredictor

    bench = hypergraph_qa_benchmark(questions_per_hop=10, hops=(2, 3))
    index = HypergraphIndex(bench.evidence)
    pred = RoleChainPredictor(bench.evidence, HashingEncoder().encode, label_weight=2.0)
    return bench, index, pred.fit(bench.split("train"))


def test_role_chains_read_the_role_mentions_and_walk_the_evidence(wd50k_blind):
    from grounding.language import HashingEncoder
    from grounding.plans import RoleChainPredictor, role_chain_accuracy
    from grounding.query import BlindQuestion, blind

    bench, _, pred = wd50k_blind
    kh = bench.evidence
    test = bench.split("test")
    for q in test:  # worded by the held-out test wordings, read by the role phrases alone
        gold = sorted(pred.role_text(r).lower() for pair in q.roles for r in pair)
        assert sorted(pred.mentions(q.text)) == gold, q.text
        assert pred.hop_count(q.text) == q.hops
    preds = pred.predict([blind(q) for q in test], k=3)
    for q, chains in zip(test, preds):
        probs = [w for _, w in chains]
        assert probs == sorted(probs, reverse=True) and sum(probs) == pytest.approx(1.0)
        assert all(len(c) == q.hops for c, _ in chains)
        plays = {
            role_name(int(k), kh.relations[int(r)])
            for h in kh.edges_of([kh.entity_index(q.topic)]).tolist()
            for e, k, r in zip(*kh.members(h))
            if kh.entities[int(e)] == q.topic
        }
        if plays:  # the first hop leaves the topic in a role it plays in the evidence
            assert all(c[0][0] in plays for c, _ in chains)
    acc = role_chain_accuracy(pred, test, k=3)
    assert sorted(acc) == [2, 3] and all(len(r["per_hop"]) == h for h, r in acc.items())
    assert all(0 <= r["top1"] <= r["topk"] <= 1 for r in acc.values())
    with pytest.raises(TypeError, match="BlindQuestion"):
        pred.predict(test[:1])  # a question with gold fields is refused, not read
    with pytest.raises(ValueError, match="names no role"):
        pred.predict([BlindQuestion("Who was in charge of the city?", test[0].topic)])
    with pytest.raises(ValueError, match="not fitted"):
        RoleChainPredictor(kh, HashingEncoder().encode).predict([blind(test[0])])
    with pytest.raises(ValueError, match="temperature"):
        RoleChainPredictor(kh, HashingEncoder().encode, temperature=0.0)


def test_role_chain_planner_gives_the_oracle_plan_when_the_chain_is_right(wd50k_blind):
    from grounding.plans import RoleChainPlanner
    from grounding.query import blind

    bench, _, pred = wd50k_blind
    planner = RoleChainPlanner(pred)
    oracle = HypergraphTemplatePlanner(bench.evidence)
    right = 0
    for q in bench.split("test"):
        [(roles, _)] = pred.predict([blind(q)], k=1)[0]
        if roles == q.roles:
            right += 1
            assert planner.plan(blind(q)).to_dict() == oracle.plan(q).to_dict()
        plans = planner.plans(blind(q), 2)
        assert [p.to_dict() for p, _ in plans] == [
            oracle.plan(_Q(q.text, q.topic, r)).to_dict() for r, _ in pred.predict([blind(q)], 2)[0]
        ]
    assert right > 0
    with pytest.raises(TypeError, match="BlindQuestion"):
        planner.plans(bench.split("test")[0])


def test_scrambling_every_gold_field_leaves_blind_proh_and_hypergraphrag_unchanged(wd50k_blind):
    """The experiment's blind systems (``experiments.proh.run_blind``) get gold-bearing questions
    and must pass on ``blind(q)`` only: scrambling the role chain, the answers, the observed
    answers and the split changes none of their predictions, nor the relations their
    candidates claim."""
    import dataclasses

    from experiments.proh import run_blind

    bench, index, pred = wd50k_blind
    test = list(bench.split("test")[:3])
    pool = [q.roles for q in bench.split("train")]
    rng = np.random.default_rng(0)
    scrambled = [
        dataclasses.replace(
            q, roles=pool[rng.integers(len(pool))], answers=("nobody",), observed=(), split="train"
        )  # fmt: skip
        for q in test
    ]
    assert all(a.roles != b.roles for a, b in zip(test, scrambled))
    want, _, chains, _, claims = run_blind(index, pred, test, 5.0, variants=("proh",))
    got, _, chains2, _, claims2 = run_blind(index, pred, scrambled, 5.0, variants=("proh",))
    assert chains == chains2 and set(want) == {"proh", "hypergraphrag"}
    assert claims == claims2  # every candidate claims the same (predicted) relations
    for system in want:
        for (n1, p1), (n2, p2) in zip(want[system], got[system]):
            assert n1 == n2, system
            np.testing.assert_array_equal(p1, p2)
    assert any(len(n) for n, _ in want["proh"]) and any(len(n) for n, _ in want["hypergraphrag"])


def test_proh_on_free_text_abstains_with_its_reason_instead_of_failing(wd50k_blind):
    """Free-text planners on blind WD50K questions and free text: every question gets an outcome;
    one without answers says why (linking or planning)."""
    from grounding.plans import FlatPlanner, HeuristicPlanner, RoleChainPlanner
    from grounding.query import BlindQuestion, blind

    bench, index, pred = wd50k_blind
    free = BlindQuestion("Who was in charge of the city where August Bloedner died?", "Q5")
    questions = [*(blind(q) for q in bench.split("test")[:2]), free]
    for planner in (HeuristicPlanner(), FlatPlanner(), RoleChainPlanner(pred)):
        outs = PRoH(planner, index, GroundingConfig(lam=1.0, kappa=1.0)).answer_batch(questions)
        for o in outs:
            assert (o.answer is not None) != bool(o.reason), (planner.name, o.reason)
    [out] = PRoH(RoleChainPlanner(pred), index, GroundingConfig(lam=1.0, kappa=1.0)).answer_batch(
        [free]
    )
    assert out.answer is None and "planner" in out.reason and "names no role" in out.reason
    [out] = PRoH(HeuristicPlanner(), index, GroundingConfig(lam=1.0, kappa=1.0)).answer_batch(
        [free]
    )
    assert out.answer is None and "names no entity the hypergraph holds" in out.reason


def test_role_chains_need_the_nesting_and_the_walk_to_read_held_out_wordings():
    """On 40 unseen questions (valid: training wordings; test: held-out wordings), the full
    predictor's top-1 chain is right for at least 80 % (0.875 measured); dropping the nesting
    term or the walk term costs at least 0.1 each (measured 0.70 and 0.625)."""
    from grounding.language import HashingEncoder
    from grounding.plans import RoleChainPredictor, role_chain_accuracy

    bench = hypergraph_qa_benchmark(questions_per_hop=100, hops=(2, 3))
    unseen = bench.split("valid") + bench.split("test")

    def top1(**weights):
        p = RoleChainPredictor(bench.evidence, HashingEncoder().encode, label_weight=2.0,
                               **weights).fit(bench.split("train"))  # fmt: skip
        acc = role_chain_accuracy(p, unseen, 3)
        return sum(r["top1"] * r["n"] for r in acc.values()) / len(unseen)

    full = top1()
    assert full >= 0.8
    assert top1(order_weight=0.0) <= full - 0.1
    assert top1(walk_weight=0.0) <= full - 0.1
