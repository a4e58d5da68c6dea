"""PankRAG and the learned retrievers in quick mode, under ``-m slow`` (and in the main job): both
need CoDEx-M and together take about three minutes even at a reduced scale, mostly
compiling. They share one trained answerer, so one worker runs them together
(``--dist loadfile``). Their systems are tested in the default suite on small worlds
(``tests/qa/test_decomposed.py``, ``tests/retrieval/test_learned.py``)."""

from __future__ import annotations

import pytest
from _experiment_runs import shared_tests

pytestmark = pytest.mark.slow

NAMES = ("pankrag", "learned_retrievers")


(
    runs,
    results,
    test_outputs_exist_and_are_complete,
    test_every_panel_is_labeled_and_its_numbers_are_written,
) = shared_tests(NAMES, smoke=False)


def test_pankrag(results):
    r = results["pankrag"]
    split = r["musique_split"]
    assert (split["dev"], split["test"]) == (1000, 2000)
    for part, n in (("dev", 1000), ("test", 2000)):
        chain = r["planning"][part]["two-step chain"]
        # the constant two-step chain is exactly right on every two-hop question, never on others
        assert chain["2"]["exact_dag"] == 1.0 and chain["3"]["hop_accuracy"] == 0.0
        assert chain["all"]["n"] == n
        heur = r["planning"][part]["heuristic"]["all"]
        assert 0 < heur["exact_dag"] <= heur["hop_accuracy"] <= 1 and 0 < heur["edge_f1"] <= 1
    # FanOutQA: 278 of the 310 human graphs fan out; a chain never does
    fan = r["planning"]["fanoutqa"]
    assert fan["two-step chain"]["all"]["n"] == 310
    assert fan["two-step chain"]["all"]["gold_fan_out"] == pytest.approx(278 / 310)
    assert fan["two-step chain"]["all"]["fan_out_recall"] == 0.0
    assert 0 <= fan["heuristic"]["all"]["fan_out_recall"] <= 1
    two_hop = sum(r["planning"][p]["two-step chain"]["2"]["n"] for p in ("dev", "test"))
    assert two_hop == 2180  # the split partitions the 3,000 questions
    kg = r["kg"]
    assert kg["n_test"] > 0 and 0 < kg["lam"] < float("inf") and 0 < kg["blind_lam"] < float("inf")
    for name, row in kg["systems"].items():
        for h in ("1", "2", "3", "all"):
            assert 0 <= row[h]["hit"] <= 1 and 0 <= row[h]["f1"] <= 1, name
        assert row["ms_per_question"] > 0
        assert row["kind"] == ("blind" if name.endswith("_blind") else "oracle (gold chain)")
    # a one-hop question's plan is the question itself (same text, anchor and relation)
    systems = kg["systems"]
    assert systems["pankrag"]["1"] == systems["no_dag"]["1"] == systems["no_rerank"]["1"]
    # blind: the predicted path's one step is one step either way (the flat row differs only by
    # its larger budget, so only the reranker ablation must match on one-hop questions)
    assert systems["pankrag_blind"]["1"] == systems["no_rerank_blind"]["1"]
    assert kg["matched_budget"]["blind"]["k_candidates"] == 100  # 5 anchors of 20 candidates
    # one answer passed on: one answerer call per step, fewer than PankRAG's five per step
    calls = {s: systems[s]["budget"]["answerer_calls"] for s in systems}
    assert 1 <= calls["pankrag_beam1_blind"] <= 3 and calls["flat_blind"] == 1
    assert calls["pankrag_beam1_blind"] < calls["pankrag_blind"]
    # the reader's baseline plans PankRAG too, compared with the reader's plan question by question
    assert (
        "pankrag_lookup_blind" in systems
        and "against_pankrag_blind" in systems["pankrag_lookup_blind"]
    )
    prop = r["error_propagation"]
    assert prop["n_questions"] > 0
    for s in ("rerank", "no_rerank"):
        assert prop[s]["damage"] == pytest.approx(
            prop[s]["clean_hits1"] - prop[s]["injected_hits1"]
        )
    assert r["communities"]["n"] > 0
    n = kg["n_test"]
    for ref, key in (("pankrag", "against_pankrag"), ("pankrag_blind", "against_pankrag_blind")):
        for row in systems.values():  # the paired counts add up to the Hits@1 difference
            if key not in row:
                continue
            d = row[key]
            diff = systems[ref]["all"]["hit"] - row["all"]["hit"]
            assert d["only_pankrag"] - d["only_other"] == round(diff * n)
            assert d["diff"] == pytest.approx(diff) and d["n"] == n
            assert d["ci"][0] <= d["diff"] <= d["ci"][1]
            assert d["resolved"] == (not d["ci"][0] <= 0 <= d["ci"][1])
            assert 0 < d["sign_test_p"] <= 1
    assert all("against_pankrag" in systems[s] for s in systems if s != "pankrag")
    assert all("against_pankrag_blind" in systems[s] for s in ("flat_blind", "no_rerank_blind"))
    speed = r["speed"]
    assert speed["ms_per_question_first_run"] > 0 and speed["ms_per_question_compiled"] > 0
    # over the seeds run (quick: seed 0 alone), the pooled comparisons are seed 0's
    over = r["seeds"]
    assert over["seeds"] == [0]
    for name, row in over["systems"].items():
        assert row["hits1"] == [pytest.approx(systems[name]["all"]["hit"])]
        for key in ("against_pankrag", "against_pankrag_blind"):
            if key in row:
                assert row[key]["diff"] == pytest.approx(systems[name][key]["diff"])


def test_learned_retrievers(results):
    r = results["learned_retrievers"]
    learned = {"subgraphrag", "gated", "ungated", "semantic", "no_anchor_tags"}
    for dataset, rep in r["datasets"].items():
        assert rep["n_test"] > 0 and rep["n_train"] % 3 == 0  # as many per hop count
        for name, table in rep["recall"].items():
            for h in ("1", "2", "3", "all"):
                for kind in ("triple", "answer"):
                    means = [table[h][f"{kind}@{k}"][0] for k in (50, 100, 200, 400)]
                    # recall@K never falls as K grows (the same ranking, cut later)
                    assert all(0 <= a <= b <= 1 for a, b in zip(means, means[1:])), (
                        dataset,
                        name,
                        h,
                    )
                    assert all(table[h][f"{kind}@{k}"][1] >= 0 for k in (50, 100, 200, 400))
        for h, c in rep["ceiling"].items():
            assert 0 <= c <= 1, (dataset, h)
            for name in learned & set(rep["recall"]):  # ranked among the shared candidates
                assert rep["recall_over_ceiling"][name][h] <= 1 + 1e-9, (dataset, name, h)
        for runs in rep["training"].values():
            for run in runs:
                assert run["n_train"] > 0 and run["n_skipped"] >= 0 and run["epochs"] >= 1
                assert run["question_epochs_per_second"] > 0 and run["ms_per_question_scored"] > 0
                assert run["stopped"] or run["epochs"] == r["scale"]["epochs"]
        down = rep["downstream"]
        assert 0 < down["lam_blind"] < float("inf") and 0 < down["lam_oracle"] < float("inf")
        for name in ("subgraphrag", "gated", "pcr"):
            row = down[name]
            assert 0 <= row["blind_hits1"] <= 1 and 0 <= row["oracle_hits1"] <= 1, name
            d = row["blind_vs_oracle"]
            assert d["diff"] == pytest.approx(row["blind_hits1"] - row["oracle_hits1"])
        for c in [*rep["comparisons"].values(), *down["gated_vs_subgraphrag"].values()]:
            for d in c.values() if "all" in c else [c]:
                assert d["ci"][0] <= d["diff"] <= d["ci"][1]
                assert d["resolved"] == (not d["ci"][0] <= 0 <= d["ci"][1])
    codex = r["datasets"]["codex-m"]["recall"]
    ablations = {"semantic", "no_anchor_tags"} if r["scale"]["ablations"] else set()
    assert {"subgraphrag", "gated", "ungated", "pcr", "soft_pcr", *ablations} <= set(codex)
    assert set(r["transfer"]) == {f"{a}:{m}" for a in ("codex-m->umls", "umls->codex-m")
                                  for m in ("subgraphrag", "gated")}  # fmt: skip
    smooth, layers = r["oversmoothing"], r["oversmoothing_layers"]
    gates = {"structural", "semantic", "mean"} if layers == 4 else {"structural", "mean"}
    assert set(smooth) == gates
    assert all(len(e) == layers + 1 and all(x >= 0 for x in e) for e in smooth.values())
    assert r["peak_rss_mib"] > 0
