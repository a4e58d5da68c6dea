"""The learned triple retrievers' experiment (SubgraphRAG and the structurally gated GNN) in
quick mode. It trains its own question-answering answerer (memoized per process), so it has a
file of its own and can run on another test worker than the grounded-QA and PankRAG runs. The
default suite runs it at a smaller scale (``_experiment_runs.smoke_scale``); ``-m slow`` at
quick mode's own."""

from __future__ import annotations

import pytest
from _experiment_runs import LEARNED, shared_tests

NAMES = LEARNED


(
    runs,
    results,
    test_outputs_exist_and_are_complete,
    test_every_panel_is_labeled_and_its_numbers_are_written,
) = shared_tests(NAMES)


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
