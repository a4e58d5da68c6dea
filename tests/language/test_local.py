"""The in-process language model (:class:`grounding.language.LocalLM`, SmolLM2-135M-Instruct)
against llama.cpp, the reference implementation of its file format.

``data/llamacpp_reference.json`` was written by ``scripts/llamacpp_reference.py`` with
llama-cpp-python 0.3.36 (an implementation nobody here wrote, run in its own process): the
token ids of 8 prompts (6 chat prompts under the model's template, 2 raw texts), llama.cpp's 32
most probable next tokens after each with their log-probabilities, and the log-probability of
6 complete answers. llama.cpp multiplies the 4-bit weights with activations quantized to 8
bits; ``LocalLM`` dequantizes the weights and keeps 32-bit activations, so the two differ by
rounding. Measured: next-token log-probabilities within 0.44 nats (mean 0.06-0.15 per prompt),
the same most probable token on 8 of 8 prompts, answer scores within 0.64 nats. The tolerances
below sit above those; a wrong rotary layout, attention mask or cache position moves the
log-probabilities by several nats (checked by planting each).
"""

from __future__ import annotations

import copy
import json
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf", reason="the grounding[llm] extra is not installed")
pytest.importorskip("tokenizers", reason="the grounding[llm] extra is not installed")

from grounding.language import LocalLM  # noqa: E402

REF = json.loads((Path(__file__).parent / "data" / "llamacpp_reference.json").read_text())
NEXT_TOL = 0.6  # nats, over llama.cpp's top 32 next tokens (measured max 0.44)
ANSWER_TOL = 1.0  # nats, a whole answer's log-probability (measured max 0.64)


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    return LocalLM.load(system=REF["system"])


def test_tokenizer_matches_llamacpp(lm):
    for p in REF["prompts"]:
        assert lm.encode(p["text"]) == p["ids"], p["text"][:60]


def test_next_token_logprobs_match_llamacpp(lm):
    diffs = []
    for p in REF["prompts"]:
        got = lm.next_logprobs(p["text"])
        assert got.shape == (lm.cfg.vocab,)
        assert abs(np.logaddexp.reduce(got.astype(np.float64))) < 1e-3  # normalized
        assert int(np.argmax(got)) == p["top_ids"][0], p["text"][:60]
        diffs.append(np.abs(got[p["top_ids"]] - np.asarray(p["top_logprobs"])).max())
    assert max(diffs) < NEXT_TOL, diffs


def test_answer_scores_match_llamacpp(lm):
    prompts = {lm.prompt(q): q for q in REF["questions"]}
    for a in REF["answers"]:
        got = lm.score(prompts[a["question_prompt"]], [a["answer"]])[0]
        assert abs(got - a["logprob"]) < ANSWER_TOL, a


def test_scores_do_not_depend_on_the_batch(lm):
    """An answer's score is the same alone and among longer and shorter answers (padding,
    the shared prompt cache and the batch bucket change nothing)."""
    q = "What is an oak a kind of?"
    answers = ["tree", "a large deciduous tree of the beech family", "oak", "x"]
    together = lm.score(q, answers)
    alone = np.array([lm.score(q, [a])[0] for a in answers])
    np.testing.assert_allclose(together, alone, atol=2e-3)
    assert together[0] > together[3]  # "tree" beats a stray letter


def test_many_questions_are_scored_a_group_at_a_time_with_the_same_scores(lm):
    """A list of questions longer than ``group`` is scored group by group (the cache of one
    group's prompts bounds a call's memory): the same scores as one group of all of them."""
    questions = [f"What is item {i} a kind of?" for i in range(5)]
    answers = [["tree", "a plant"][: 1 + i % 2] for i in range(5)]
    grouped = lm.score_batch(questions, answers, group=2)
    whole = lm.score_batch(questions, answers, group=16)
    assert [len(x) for x in grouped] == [len(a) for a in answers]
    for g, w in zip(grouped, whole):
        np.testing.assert_allclose(g, w, atol=2e-3)
    with pytest.raises(ValueError, match="group"):
        lm.score_batch(questions, answers, group=0)


def test_beam_answers_carry_their_scores_best_first(lm):
    q = "What is the capital of France?"
    got = lm.propose(q, 3)
    assert got and len(got) <= 3
    texts, scores = zip(*got)
    assert list(scores) == sorted(scores, reverse=True)
    np.testing.assert_allclose(lm.score(q, list(texts)), scores, atol=2e-3)
    assert "Paris" in texts[0]


def test_prompt_prefix_cache_is_exact(lm):
    """With worked examples, the shared prefix is evaluated once and reused: the scores equal
    those of the full prompt evaluated from scratch."""
    lm = copy.copy(lm)  # the same weights, its own prompt
    lm.examples, lm._prefix_cache = (("What is a rose a kind of?", "shrub"),), None
    q = "What is an oak a kind of?"
    cached = lm.score(q, ["tree", "flower"])
    lm._prefix_cache = ([], None, 0)  # no prefix: every prompt from scratch
    np.testing.assert_allclose(lm.score(q, ["tree", "flower"]), cached, atol=2e-3)


def test_bad_arguments_are_named(tmp_path, lm):
    with pytest.raises(ValueError, match="k must be"):
        lm.propose("q", 0)
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        LocalLM(tmp_path / "missing.gguf")
    with pytest.raises(ValueError, match="max_answer_tokens"):
        LocalLM(lm.path, max_answer_tokens=0)
    assert lm.score("q", []).shape == (0,)


def test_a_real_models_answers_become_candidates_out_of_graph_ones_unsupported(lm):
    """The model's own answers (full sentences here) name no entity: they stay candidates,
    out of graph; the pool's answer is scored by the model beside them; grounding keeps the
    out-of-graph ones as unsupported, with slack energy, instead of failing."""
    from grounding import EvidenceStatus, GroundingConfig, GroundingProblem, TypedGraph, ground
    from grounding.language import AnswerLinker
    from grounding.prior import LocalCandidateModel
    from grounding.query import BlindQuestion

    linker = AnswerLinker(["q90", "q456"], ["paris", "lyon"])
    model = LocalCandidateModel(lm, linker, pool=lambda q: ["Lyon", "lyon."])
    q = BlindQuestion("What is the capital of France?", "q142")
    got = model.propose(q, 3)
    assert "q456" in got.entities and got.out_of_graph
    assert set(got.entities) == {"q456", *got.out_of_graph}
    assert abs(np.logaddexp.reduce(got.log_prior)) < 1e-9
    lyon = lm.score(q.text, ["Lyon"])[0]
    texts = [t for t, _ in lm.propose(q.text, 3)]
    raw = np.append(lm.score(q.text, texts), lyon)
    want = lyon - np.logaddexp.reduce(raw)  # the pool's answer, once, among the model's own
    np.testing.assert_allclose(got.log_prior[got.entities.index("q456")], want, atol=2e-3)
    graph = TypedGraph.from_triples([("q142", "capital", "q456")])
    problem = GroundingProblem(q.text, got.entities, got.log_prior, anchors=("q142",))
    result = ground(problem, graph, GroundingConfig(lam=1.0, kappa=1.0))
    status = dict(zip(got.entities, np.asarray(result.status)))
    assert all(status[e] == EvidenceStatus.UNSUPPORTED for e in got.out_of_graph)
    assert status["q456"] == EvidenceStatus.SUPPORTED


def test_the_local_model_example_of_the_docs_runs(lm, capsys):
    """docs/examples/local_model.py, shown on the "Ground your own LLM's answers" page, runs
    as written (its own assertions included)."""
    runpy.run_path(str(Path(__file__).parents[2] / "docs" / "examples" / "local_model.py"))
    assert "decision:" in capsys.readouterr().out


def test_the_models_programs_live_in_the_bounded_registry(lm):
    """The forward pass and the cache moves are compiled in the package's one registry of
    programs: counted there under their kind, dropped by ``release_programs`` with the
    solver's, and compiled again afterwards to the same scores."""
    from grounding import programs

    before = lm.score("What is a dog?", ["an animal", "a planet"])
    assert programs.program_info()["by_kind"].get("local model", 0) >= 2
    programs.release_programs()
    assert programs.program_info()["live"] == 0
    again = lm.score("What is a dog?", ["an animal", "a planet"])
    np.testing.assert_array_equal(again, before)
    assert programs.program_info()["by_kind"]["local model"] >= 2
