"""The MetaQA experiment at a tiny scale: the answer-file format of ``--questions``, and that no
test question reaches a fitted choice (test answers scrambled: every fitted setting is the
same)."""

from __future__ import annotations

import json
import random

import pytest

from grounding.datasets import metaqa as metaqa_data

#: (two kinds and two beams: the build chooses among four priors, as ``--full`` does)
TINY_SIZE = dict(
    test_per_hop=5, fit_per_hop=20, dev_per_hop=60, kinds=("complex", "transe"), beams=(0, 8),
    dim=8, epochs=1, sweep_per_hop=5,
)  # fmt: skip


@pytest.fixture(scope="module")
def experiment():
    from experiments import metaqa

    return metaqa


@pytest.fixture(scope="module")
def tiny(experiment):
    return experiment.Size(**TINY_SIZE)


@pytest.fixture(scope="module")
def half_system(experiment, tiny):
    """The tiny system on the half base (seed 0), built once for this file."""
    return experiment.build("half", tiny, 0, lambda s: None)


def test_answers_file_has_one_record_per_question_in_order(
    experiment, tiny, half_system, tmp_path, capsys
):
    questions = tmp_path / "q.txt"
    questions.write_text(
        "who directed [Kismet]\tWilliam Dieterle\n"
        "which movies did [Tom Hanks] star in\n"
        "\n"
        "what language is [No Such Movie Anywhere] in\tEnglish\n",
        encoding="utf-8",
    )
    built = []

    def build(kb, size, seed, log):  # the file's system (the same arguments), built once
        built.append((kb, size, seed))
        return half_system

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "QUICK", tiny)
        patch.setattr(experiment, "build", build)
        experiment.main(
            ["--questions", str(questions), "--hops", "1", "--kb", "half", "--out", str(tmp_path)]
        )
    assert built == [("half", tiny, 0)]
    lines = (tmp_path / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(x) for x in lines]
    assert [r["topic"] for r in records] == ["Kismet", "Tom Hanks", "No Such Movie Anywhere"]
    keys = {"question", "topic", "chain", "answer", "decision", "candidates"}
    assert all(set(r) == keys for r in records)
    first = records[0]
    assert first["question"] == "who directed [Kismet]" and isinstance(first["chain"], list)
    assert 1 <= len(first["candidates"]) <= 10
    assert first["answer"] == first["candidates"][0]["name"]
    for c in first["candidates"]:
        assert set(c) == {"name", "prior", "posterior", "status"}
        assert 0 <= c["prior"] <= 1 and 0 <= c["posterior"] <= 1
        assert c["status"] in {"SUPPORTED", "CONTRADICTED", "UNSUPPORTED", "OUT_OF_SCHEMA"}
    posts = [c["posterior"] for c in first["candidates"]]
    assert posts == sorted(posts, reverse=True)
    # a topic the knowledge base does not name: no answer, and the reason
    last = records[2]
    assert last["answer"] is None and last["candidates"] == []
    assert last["decision"].startswith("FAILED") and "No Such Movie Anywhere" in last["decision"]


def test_no_test_question_reaches_a_fitted_setting(experiment, tiny, half_system):
    """Two builds, the second with every test question's answers scrambled: the fitted
    classifier, prior kind, temperatures and lambda are identical."""
    real = metaqa_data._questions

    def scrambled(hops, split):
        qs = real(hops, split)
        if split != "test":
            return qs
        names = [a for q in qs for a in q.answers]
        random.Random(7).shuffle(names)
        it = iter(names)
        return tuple(
            metaqa_data.MetaQAQuestion(
                q.id, q.text, q.topic, tuple(next(it) for _ in q.answers), q.hops, q.qtype
            )
            for q in qs
        )

    plain = half_system.fitted
    assert len(plain["kinds"]) == 4 and plain["kind"] in plain["kinds"]  # a choice was made
    assert all(v["fit_soft_hits1"] is not None for v in plain["kinds"].values())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metaqa_data, "_questions", scrambled)
        assert metaqa_data.load_metaqa(1, "test")[0].answers != real(1, "test")[0].answers
        changed = experiment.build("half", tiny, 0, lambda s: None).fitted
    assert changed == plain


@pytest.mark.slow
def test_quick_run_at_a_tiny_size_writes_its_tables_figure_and_final_line(
    experiment, tiny, tmp_path, capsys
):
    """The whole run (both knowledge bases, the sweep) at a tiny size: about 2-3 minutes."""
    from _experiment_runs import check_panels

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "QUICK", tiny)
        paths = experiment.main(["--quick", "--out", str(tmp_path)])
    assert {p.name for p in paths} >= {"metaqa.json", "metaqa.csv", "metaqa.png"}
    check_panels({"metaqa": (tmp_path, paths)}, "metaqa")
    data = json.loads((tmp_path / "metaqa.json").read_text())
    for kb in ("half", "full"):
        for h in ("1", "2", "3"):
            row = data["tables"][kb][h]
            assert {"prior", "hard", "soft", "oracle", "published", "misses"} <= set(row)
            assert abs(sum(row["misses"].values()) - (1 - row["soft"]["hits1"])) < 1e-9
    last = capsys.readouterr().out.strip().splitlines()[-1]
    keys = [kv.split("=")[0] for kv in last.split()]
    assert keys == [
        *(f"{kb}_hits1_{h}hop" for kb in ("half", "full") for h in (1, 2, 3)),
        *(f"half_prior_hits1_{h}hop" for h in (1, 2, 3)),
        "llm_prior_hits1",
        "llm_soft_hits1",
    ]


def test_the_language_models_pool_is_walk_ends_of_the_predicted_chain_then_the_prior(
    experiment, half_system
):
    """The names SmolLM2 scores beside its own answers come from the base in use and the
    blind question: first the ends of the top predicted chain's walks (best by the KGE prior),
    then the prior's best; never the topic, never a repeat."""
    pool = experiment.llm_pool(half_system, 10)
    walks = experiment.ChainWalks(half_system.graph, revisit=experiment.REVISIT)
    for q in experiment.sample_of_test(1, 5) + experiment.sample_of_test(2, 5):
        names = pool(q.blind())
        [chains] = half_system.classifier.predict([q.blind()], 1)
        _, [ends], _ = walks.walk(q.topic, [chains[0][0]])
        ends = set(ends) - {q.topic}
        assert len(names) == len(set(names)) == 10 and q.topic not in names
        is_end = [e in ends for e in names]
        assert is_end == sorted(is_end, reverse=True) and sum(is_end) == min(len(ends), 10)
        scores = half_system.answerer.log_scores(q.topic, chains[0][0])
        ix = {e: i for i, e in enumerate(half_system.answerer.entities)}
        for part in (names[: sum(is_end)], names[sum(is_end) :]):  # each best first
            got = [scores[ix[e]] for e in part]
            assert got == sorted(got, reverse=True)


@pytest.mark.slow
def test_the_language_model_rows_at_a_tiny_size(experiment, half_system):
    """SmolLM2 on 2 questions per hop, grounded on the half base: every reported row."""
    pytest.importorskip("gguf", reason="the grounding[llm] extra is not installed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "LLM_FIT", 1)
        out = experiment.llm_rows({"half": half_system}, 2, lambda s: None)
    for h in experiment.LLM_HOPS:
        row = out["half"][h]
        assert {"prior", "soft", "hard", "first", "soft_vs_prior", "copy_rate"} <= set(row)
        o = row["overturned"]
        assert o["n"] == 2 and o["wrong_to_right"] + o["right_to_wrong"] <= 2
        assert 0 <= row["right_priors"] <= 2
