"""The grounded-QA experiment in quick mode. The default suite runs it at a smaller scale
(``_experiment_runs.smoke_scale``: UMLS and CoDEx-S); ``-m slow`` at quick mode's own (CoDEx-M,
UMLS, CoDEx-S). PankRAG and the learned retrievers: ``test_qa_systems_quick_runs.py``."""

from __future__ import annotations

import pytest
from _experiment_runs import shared_tests

NAMES = ("grounded_qa",)


(
    runs,
    results,
    test_outputs_exist_and_are_complete,
    test_every_panel_is_labeled_and_its_numbers_are_written,
) = shared_tests(NAMES)


def test_grounded_qa(results):
    r = results["grounded_qa"]
    datasets = [rep["dataset"] for rep in r["reports"]]
    assert datasets in (["codex-m", "umls", "codex-s"], ["umls", "codex-s"])  # quick, smoke
    for rep in r["reports"]:
        assert 0 < rep["lam"] < float("inf") and rep["kappa"] == 1.0
        for h in ("1", "2", "3"):
            row = rep["per_hop"][h]
            assert row["n_questions"] > 0
            for m in ("prior", "hard", "soft"):
                assert 0 <= row[m]["hits1"] <= 1 and 0 <= row[m]["aurc"] <= 1
            # the prior and soft grounding never abstain; hard grounding abstains exactly when
            # no candidate has a typed walk in the evidence (Eq. (6) undefined)
            assert row["prior"]["abstained"] == row["soft"]["abstained"] == 0
            fate = row["unobserved"]
            if fate["unobserved_candidates"]:
                # a true answer the evidence does not state has no walk in R: hard grounding
                # deletes every one, soft grounding (finite kappa) keeps every one
                assert fate["hard_deletes"] == 1.0 and fate["soft_keeps"] == 1.0
            # Thm. 3 on the real world: a certified answer is the world's answer
            assert row["certificate"]["certified_world_sound"] == 1.0
            assert len(row["lambda_sweep"]) == 33
            for m in ("hard", "soft"):  # paired against the prior on the same questions
                d = row[f"{m}_vs_prior"]
                assert d["diff"] == pytest.approx(row[m]["hits1"] - row["prior"]["hits1"])
                assert d["ci"][0] <= d["diff"] <= d["ci"][1]
    # blind against oracle over the seeds run (quick: seed 0): the pooled paired interval
    # holds the mean difference, which is the difference of the two Hits@1
    for rep in r["reports"]:
        for h in ("1", "2", "3"):
            row = r["seeds"][rep["dataset"]][h]
            assert row["seeds"] == [0]
            d = row["blind_minus_oracle"]
            assert d["ci"][0] <= d["diff"] <= d["ci"][1]
            assert abs(d["diff"] - (row["blind_hits1"][0] - row["oracle_hits1"][0])) < 1e-12
            assert row["oracle_hits1"][0] == rep["per_hop"][h]["soft"]["hits1"]
            assert row["blind_hits1"][0] == rep["blind"]["per_hop"][h]["soft"]["hits1"]
    # the blind loop against its own prior (paired), and the template parser's baseline row
    for rep in r["reports"]:
        for h in ("1", "2", "3"):
            blind_row, pooled = rep["blind"]["per_hop"][h], r["seeds"][rep["dataset"]][h]
            for m in ("hard", "soft"):
                d = blind_row[m]["vs_prior"]
                assert d["diff"] == pytest.approx(
                    blind_row[m]["hits1"] - blind_row["prior"]["hits1"]
                )
                assert d["ci"][0] <= d["diff"] <= d["ci"][1]
                assert pooled[f"{m}_minus_prior"]["diff"] == pytest.approx(d["diff"])
            assert pooled["blind"]["soft"] == blind_row["soft"]["hits1"]
            # the template parser knows the training wordings only: it reads no test question
            # (worded in held-out ways), so its loop answers none; on single-template texts
            # it equals the oracle (tests/plans/test_template_parser.py)
            for m in ("prior", "hard", "soft"):
                assert not any(blind_row["parser"][m]["hit"])
            # every other blind system against the reader's loop, on the same questions
            for n in ("lookup", "parser", "composed"):
                d = blind_row[n]["soft"]["vs_reader"]
                assert d["diff"] == pytest.approx(
                    blind_row[n]["soft"]["hits1"] - blind_row["soft"]["hits1"]
                )
                assert pooled["systems"][n] == blind_row[n]["soft"]["hits1"]
            # the path predictors are scored on the same questions against one ceiling (the
            # training chains); the reader beating the lookup is checked at a real size in
            # tests/plans/test_chain_reader.py
            paths = rep["blind_paths"]
            d = pooled["path_reader_minus_lookup"]
            assert pooled["paths_top1"]["reader"] == pytest.approx(
                paths["reader"]["per_hop"][h]["top1"]
            )
            assert d["diff"] == pytest.approx(
                paths["reader"]["per_hop"][h]["top1"] - paths["lookup"]["per_hop"][h]["top1"]
            )
            for hop, acc in paths["reader"]["per_hop"].items():
                for kind in ("lookup", "composed", "training_chains"):
                    other = paths[kind]["per_hop"][hop]
                    assert (acc["n"], acc["ceiling"]) == (other["n"], other["ceiling"])
                    assert 0 <= other["top1"] <= other["topk"] <= 1
                assert 0 <= acc["top1"] <= acc["topk"] <= 1
    # the worked example: one 2-hop question through the loop, with its supporting walks
    ex = r["reports"][0]["example"]
    names = [c["name"] for c in ex["candidates"]]
    assert ex["best"] in names and ex["action"] in ("ANSWER", "ABSTAIN", "RETRIEVE", "VERIFY")
    assert abs(sum(c["posterior"] for c in ex["candidates"]) - 1) < 1e-6
    best = ex["candidates"][names.index(ex["best"])]
    # a walk supports it (to_dict writes +inf as null): its best walks are reported
    if best["raw_energy"] is not None:
        assert best["paths"] and 0 < sum(p["weight"] for p in best["paths"]) <= 1 + 1e-9
    assert all(len(t) == 3 for p in best["paths"] for t in p["triples"])
    neg = r["reports"][datasets.index("codex-s")]["counter_evidence"]
    assert neg["n_questions"] > 0 and neg["contradicted_candidates"] > 0
    # Axiom 4: a contradicted candidate never stays on top when the counter-evidence is added
    # unless every candidate is contradicted or unsupported (contradiction is dominant)
    assert neg["known_false_top_with"] <= neg["known_false_top_without"]
