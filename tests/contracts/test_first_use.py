"""What a user meets first: raw log-probabilities normalized on request (and an error that says
how), short reprs of the graph and the evidence, the stability report in words, questions
without a relation chain, the QA loop's hard posterior on uncertain evidence, and the
"ground your own LLM's answers" page's script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import grounding as g
from grounding.qa import Candidates, GroundedQA, KGEAnswerer, grounding_problem
from grounding.retrieval import PCR, TextIndex

ROOT = Path(__file__).resolve().parents[2]


def _company():
    """Alice works for acme (0.9), founded by bob (0.8); acme is based in berlin (1.0)."""
    return g.TypedGraph.from_triples(
        [("alice", "works_for", "acme"), ("acme", "founded_by", "bob"), ("acme", "based_in", "berlin")],
        reliability=[0.9, 0.8, 1.0],
        entities=["alice", "acme", "bob", "berlin", "carol"],
    )  # fmt: skip


# ------------------------------------------------------------------ raw log-probabilities
def test_from_logprobs_normalizes_over_the_candidates():
    scores = jnp.array([-0.9, -2.1, -jnp.inf, -3.0])
    p = g.GroundingProblem.from_logprobs("q", ["b", "c", "d", "e"], scores, anchors=("a",))
    np.testing.assert_allclose(p.log_prior, jax.nn.log_softmax(scores), rtol=1e-6)
    assert p.names == ("b", "c", "d", "e") and p.anchors == ("a",)
    assert float(jnp.exp(p.log_prior[2])) == 0.0  # -inf: no mass
    chains = [g.ClaimChain(("a", x), ("r",)) for x in "bc"]
    q = g.GroundingProblem.from_logprobs("q", chains, [3.0, 1.0])  # logits work too
    np.testing.assert_allclose(np.exp(q.log_prior), [1 / (1 + np.e**-2), 1 / (1 + np.e**2)], 1e-6)


@pytest.mark.parametrize(
    "scores, match",
    [
        ([-1.0], r"shape \(2,\)"),
        ([-1.0, np.nan], "NaN"),
        ([-1.0, np.inf], "NaN or \\+inf"),
        ([-np.inf, -np.inf], "nor be all -inf"),
    ],
)
def test_from_logprobs_refuses_what_has_no_normalization(scores, match):
    with pytest.raises(ValueError, match=match):
        g.GroundingProblem.from_logprobs("q", ["b", "c"], jnp.array(scores), anchors=("a",))


def test_an_unnormalized_prior_is_refused_naming_the_constructor_for_raw_scores():
    raw = jnp.array([-0.05, -3.2])  # an LLM's log-probabilities of two sampled answers
    for build in (g.GroundingProblem, g.GroundingProblem.merged):
        with pytest.raises(
            ValueError, match=r"does not normalize.*GroundingProblem\.from_logprobs"
        ):
            build("q", ["b", "c"], raw, anchors=("a",))
    with pytest.raises(ValueError, match=r"grounding\.log_normalize"):
        g.gibbs_log_posterior(raw, jnp.zeros(2), 1.0)
    with pytest.raises(ValueError, match=r"Candidates\.from_scores"):
        Candidates(("b", "c"), np.array([-0.05, -3.2]))


def test_a_problem_keeps_its_prior_where_it_was_given_and_names_each_entity_once():
    """Host data stays NumPy (the solver lays problems out on the host: no device copy per
    problem), in the dtype JAX would give it; a JAX array stays a JAX array; both ground
    alike. ``entities()`` lists each name once, in order of first mention."""
    lp = np.log([0.25, 0.75])
    chains = [g.ClaimChain(("a", None, x), ("r", "s")) for x in "bc"] + [
        g.ClaimChain(("a", "b"), ("r",))
    ]
    host = g.GroundingProblem("q", chains, np.log([0.25, 0.5, 0.25]), anchors=("a",))
    assert type(host.log_prior) is np.ndarray and host.log_prior.dtype == np.float64
    assert host.entities() == ["a", "b", "c"]
    listed = g.GroundingProblem("q", ["b", "c"], lp.tolist(), anchors=("a",))
    dev = g.GroundingProblem("q", ["b", "c"], jnp.asarray(lp), anchors=("a",))
    assert type(listed.log_prior) is np.ndarray and isinstance(dev.log_prior, jax.Array)
    with jax.enable_x64(False):
        assert g.GroundingProblem("q", ["b"], [0.0], anchors=("a",)).log_prior.dtype == np.float32
    graph = _company()
    r_host = g.ground(g.GroundingProblem("q", ["acme", "bob"], lp, anchors=("alice",), max_hops=2),
                      graph, lam=1.0, kappa=2.0)  # fmt: skip
    r_dev = g.ground(dev.__class__("q", ["acme", "bob"], jnp.asarray(lp), anchors=("alice",),
                                   max_hops=2), graph, lam=1.0, kappa=2.0)  # fmt: skip
    np.testing.assert_array_equal(r_host.log_posterior, r_dev.log_posterior)


# ------------------------------------------------------------------ reprs
def test_graph_and_evidence_print_their_size():
    graph = _company()
    assert repr(graph) == "TypedGraph(nodes=5, edges=3, relations=3)"
    assert (
        repr(g.EvidenceState(graph)) == "EvidenceState(TypedGraph(nodes=5, edges=3, relations=3))"
    )
    state = g.EvidenceState(
        graph,
        negative={("alice", "works_for", "bob")},
        functional={"works_for"},
        coverage=0.75,
        provenance={"retriever": "pcr"},
    )
    assert repr(state) == (
        "EvidenceState(TypedGraph(nodes=5, edges=3, relations=3), negative=1, "
        "functional=['works_for'], coverage=0.75, provenance=['retriever'])"
    )
    assert repr(g.TypedGraph.from_triples([])) == "TypedGraph(nodes=0, edges=0, relations=0)"


# ------------------------------------------------------------------ the stability report
def _founder_result(lam=2.0, kappa=1.0, prior=(0.4, 0.6)):
    chains = [
        g.ClaimChain(("alice", "acme", x), ("works_for", "founded_by")) for x in ("bob", "carol")
    ]
    p = g.GroundingProblem("Who founded Alice's employer?", chains, jnp.log(jnp.array(prior)))
    return g.ground(p, _company(), lam=lam, kappa=kappa)


def test_stability_says_how_far_the_evidence_must_move_and_it_is_so():
    res = _founder_result()
    r = float(res.certificate.radius)
    text = res.stability()
    assert text.startswith("alice->acme->bob stays the best candidate unless new evidence ")
    assert f"by {r:.3g} or more against a rival's" in text
    assert f"a factor {np.exp(r):.3g} in one edge's reliability" in text
    assert "osc" not in text and "TV" not in text  # the paper's symbols are in the footnote
    summary = res.summary().splitlines()
    assert summary[-2] == f"stability: {text}"
    assert summary[-1].startswith("  [paper, Thm. 3: radius = margin / lambda = ")
    # the example it gives holds: the rival's energy lowered by just under the radius keeps
    # the answer, by just over it changes it
    lp, e, b = res.log_prior, np.asarray(res.energy), int(res.best)
    for factor, same in ((1 - 1e-4, True), (1 + 1e-4, False)):
        moved = e - np.where(np.arange(len(e)) == 1 - b, factor * r, 0.0)
        assert (int(g.map_index(g.gibbs_log_posterior(lp, moved, 2.0))) == b) is same


def test_stability_without_a_guarantee_or_without_a_rival():
    vacuous = _founder_result(kappa=np.inf)  # carol has no walk and no slack: infinite energy
    assert not bool(vacuous.certificate.valid)
    assert vacuous.stability().startswith("no guarantee for ")
    at_zero = _founder_result(lam=0.0)
    assert at_zero.stability() == (
        "no change of the evidence can make another candidate best (lambda = 0)"
    )


# ------------------------------------------------------------------ questions without a chain
class FreeText:
    """A question as a user might write one: text and topic, no relation chain."""

    text = "Who founded Alice's employer?"
    topic = "alice"


class Fixed:
    """A candidate model with fixed raw scores."""

    def __init__(self, answers, scores):
        self.answers, self.scores = answers, scores

    def propose(self, question, k):
        return Candidates.from_scores(self.answers, self.scores, k=k)


def test_a_question_without_a_chain_is_grounded_as_answers():
    cands = Candidates.from_scores(["bob", "berlin"], [-0.2, -1.9])
    p = grounding_problem(FreeText(), cands)
    assert p.kind == "answer" and p.anchors == ("alice",) and p.names == ("bob", "berlin")
    q = FreeText()
    q.chain = None
    assert grounding_problem(q, cands).kind == "answer"
    q.chain = "founded_by"  # a string, whose characters would be read as relations
    with pytest.raises(TypeError, match="not a string"):
        grounding_problem(q, cands)


def test_the_kge_answerer_abstains_on_a_question_without_a_chain():
    """It composes the chain's relation maps: without one it abstains, saying why."""
    from grounding.learn import KGEModel

    m = KGEModel("transe", jnp.array([[0.0, 0], [1, 0], [3, 0]]), jnp.array([[1.0, 0]]))
    answerer = KGEAnswerer(m, ["alice", "acme", "bob"], ["works_for"])
    out = answerer.propose(FreeText(), 2)
    assert out.abstained and "no relation chain" in out.abstain_reason
    with_chain = FreeText()
    with_chain.chain = ("works_for",)
    assert answerer.propose(with_chain, 1).entities == ("acme",)


def test_the_qa_loop_answers_a_question_without_a_chain():
    graph = _company()
    qa = GroundedQA(
        Fixed(["bob", "carol"], [-0.9, -0.5]),
        PCR(TextIndex(graph)),
        g.GroundingConfig(lam=4.0, kappa=1.0),
    )
    [out] = qa.answer_batch([FreeText()])
    assert out.reason is None and out.answer == "bob"


# ------------------------------------------------------------------ the QA loop's hard posterior
def test_the_qa_loop_hard_posterior_keeps_supported_candidates_on_uncertain_evidence():
    """Edges of reliability below 1: every walk has a positive energy. The default tolerance
    (the status tolerance, kappa) keeps the supported candidate; eps = 0 keeps none, and says
    so (hard_abstained)."""
    graph, model = _company(), Fixed(["bob", "carol"], [-0.9, -0.5])
    retriever = PCR(TextIndex(graph))
    config = g.GroundingConfig(lam=4.0, kappa=1.0)
    [out] = GroundedQA(model, retriever, config).answer_batch([FreeText()])
    assert out.candidates.entities == ("carol", "bob")  # most probable first
    statuses = [g.EvidenceStatus(int(s)).name for s in out.result.status]
    assert statuses == ["UNSUPPORTED", "SUPPORTED"]
    np.testing.assert_allclose(out.probabilities("hard"), [0.0, 1.0], atol=1e-6)
    assert not bool(out.result.hard_abstained)
    [strict] = GroundedQA(model, retriever, config.replace(eps=0.0)).answer_batch([FreeText()])
    assert bool(strict.result.hard_abstained) and not strict.probabilities("hard").any()
    [tol] = GroundedQA(model, retriever, config.replace(eps_s=0.05)).answer_batch([FreeText()])
    assert bool(tol.result.hard_abstained)  # eps follows eps_s: walk energy -log(0.72) > 0.05
    [none] = GroundedQA(model, retriever, config.replace(eps=None)).answer_batch([FreeText()])
    with pytest.raises(ValueError, match="no hard posterior"):
        none.probabilities("hard")


# ------------------------------------------------------------------ the docs
def test_the_core_api_page_opens_with_what_one_calls_first():
    listed = re.findall(r"^::: grounding\.(\w+)", (ROOT / "docs/api/core.md").read_text(), re.M)
    assert listed[:6] == [
        "ground",
        "GroundingProblem",
        "ClaimChain",
        "TypedGraph",
        "EvidenceState",
        "EvidenceStatus",
    ]
    assert sorted(listed) == sorted(g.__all__)  # each public name once


def test_the_ground_your_own_page_shows_its_script_and_the_script_runs(tmp_path):
    page = (ROOT / "docs" / "ground-your-own.md").read_text()
    script = ROOT / "docs" / "examples" / "ground_your_own.py"
    shown = re.findall(r'--8<-- "docs/examples/ground_your_own\.py:(\w+)"', page)
    source = script.read_text()
    sections = re.findall(r"# --8<-- \[start:(\w+)\]", source)
    assert shown and set(shown) == set(sections), (shown, sections)
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "all checks passed" in out.stdout


@pytest.mark.parametrize(
    "entities, relations, error",
    [
        (("a", ""), ("r",), TypeError),  # an empty name
        (("a", 3), ("r",), TypeError),  # not a str
        (("a", "b"), (None,), None),  # an open relation is allowed
        (("a", "b"), ("",), TypeError),
        (("a", None, "c"), ("r", 7), TypeError),
        (("a",), ("r",), ValueError),  # T + 1 mentions for T relations
        (("a",), (), ValueError),  # T >= 1
    ],
)
def test_a_claim_chain_checks_every_mention_and_relation(entities, relations, error):
    if error is None:
        assert g.ClaimChain(entities, relations).name == "a->b"
        return
    with pytest.raises(error, match="claim chain needs|must be non-empty str or None"):
        g.ClaimChain(entities, relations)
