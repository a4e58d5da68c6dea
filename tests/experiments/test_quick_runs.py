"""Each experiment runs in quick mode (the default suite: at ``_experiment_runs.smoke_scale``,
which shrinks PRoH's questions; ``-m slow``: quick mode's own), writes its files, and its
numbers are sane."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest
from _experiment_runs import QA, shared_tests

from experiments import EXPERIMENTS

# One worker runs this whole file (``--dist loadfile`` in pyproject.toml), so that the
# module-scoped ``runs`` fixture runs each experiment once, not once per worker; the question
# answering experiments (which share one trained answerer) run in test_qa_quick_runs.py; the
# WordNet experiment (a language model answering, minutes even at a tiny scale) runs in
# test_wordnet_llm.py under ``-m slow``, and MetaQA (two knowledge bases trained on) in
# test_metaqa.py.
NAMES = tuple(n for n in EXPERIMENTS if n not in (*QA, "wordnet_llm", "metaqa"))


(
    runs,
    results,
    test_outputs_exist_and_are_complete,
    test_every_panel_is_labeled_and_its_numbers_are_written,
) = shared_tests(NAMES)


def _stub_experiments(monkeypatch, tmp_path, calls):
    import experiments.__main__ as runner

    def fake(name):
        def main(argv):
            calls.append((name, list(argv)))
            return [tmp_path / f"{name}.{ext}" for ext in ("png", "csv", "json")]

        return type("M", (), {"main": staticmethod(main)})

    monkeypatch.setattr(runner.importlib, "import_module", lambda mod: fake(mod.split(".")[-1]))
    return runner


def test_main_runs_all_with_a_start_line_each_and_a_summary_table(tmp_path, capsys, monkeypatch):
    """``python -m experiments`` wiring, with the experiments stubbed (they are run above)."""
    calls = []
    runner = _stub_experiments(monkeypatch, tmp_path, calls)
    assert runner.main(["--full", "--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == list(EXPERIMENTS)
    assert all(argv == ["--full", "--out", str(tmp_path)] for _, argv in calls)
    out = capsys.readouterr().out
    starts = [ln for ln in out.splitlines() if ln.startswith("[")]
    assert starts[0] == f"[1/{len(EXPERIMENTS)}] {EXPERIMENTS[0]} (full) ..."
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["experiment", "seconds", "files"]
    assert [row.split()[0] for row in table[1:]] == list(EXPERIMENTS)
    assert all(f"{name}.png" in row for name, row in zip(EXPERIMENTS, table[1:]))


def test_quick_runs_the_main_job_and_all_adds_the_retrieval_systems(tmp_path, monkeypatch):
    from experiments import QUICK

    calls = []
    runner = _stub_experiments(monkeypatch, tmp_path, calls)
    assert runner.main(["--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == list(QUICK) and "grounded_qa" in QUICK
    calls.clear()
    assert runner.main(["--quick", "--all", "--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == list(EXPERIMENTS)
    assert all(argv[0] == "--quick" for _, argv in calls)
    for bad in (["--all", "--only", "proh"], ["--all", "--smoke"]):
        with pytest.raises(SystemExit):
            runner.main([*bad, "--out", str(tmp_path)])


def test_main_only_and_bad_arguments(tmp_path, capsys, monkeypatch):
    calls = []
    runner = _stub_experiments(monkeypatch, tmp_path, calls)
    assert runner.main(["--only", "prop13_tradeoff,fig2_two_worlds", "--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == ["prop13_tradeoff", "fig2_two_worlds"]
    for bad in (["--only", "nope"], ["--only", ","], ["--out", str(tmp_path / "f.png" / "x")]):
        (tmp_path / "f.png").write_bytes(b"")
        with pytest.raises(SystemExit):
            runner.main(bad)
    err = capsys.readouterr().err
    assert "unknown experiment(s) ['nope']" in err and "cannot write there" in err
    help_text = _help(runner.main)
    assert "usage: python -m experiments " in help_text and "``" not in help_text
    assert all(name in help_text for name in EXPERIMENTS) and "--only" in help_text


def test_main_smoke_seeds_and_time_left(tmp_path, capsys, monkeypatch):
    from experiments import QUICK_SECONDS, SMOKE

    assert set(QUICK_SECONDS) == set(EXPERIMENTS) and set(SMOKE) <= set(EXPERIMENTS)
    calls = []
    runner = _stub_experiments(monkeypatch, tmp_path, calls)
    assert runner.main(["--smoke", "--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == list(SMOKE)
    out = capsys.readouterr().out
    total = sum(QUICK_SECONDS[n] for n in SMOKE) / 60
    assert out.startswith(f"{len(SMOKE)} experiments, about {total:.1f} min")
    done = [ln for ln in out.splitlines() if " done in " in ln]
    assert len(done) == len(SMOKE) and "s left" in done[0] and "s left" not in done[-1]
    calls.clear()
    assert runner.main(["--only", "proh", "--seeds", "3", "--out", str(tmp_path)]) == 0
    assert calls == [("proh", ["--quick", "--out", str(tmp_path), "--seeds", "3"])]
    for bad in (["--smoke", "--full"], ["--smoke", "--only", "proh"], ["--seeds", "0"]):
        with pytest.raises(SystemExit):
            runner.main([*bad, "--out", str(tmp_path)])


def test_the_main_job_indexes_the_results_folder(tmp_path, capsys, monkeypatch):
    """README.md (people) and index.json (scripts) list each experiment run into the folder,
    what it is and its files; a later --only run keeps the other entries; an index.json that
    is not ours is written again, with a message."""
    from experiments import SMOKE, _index

    runner = _stub_experiments(monkeypatch, tmp_path, [])
    assert runner.main(["--smoke", "--out", str(tmp_path)]) == 0
    assert f"index of the results: {tmp_path / 'README.md'}" in capsys.readouterr().out
    index = json.loads((tmp_path / "index.json").read_text())
    assert list(index) == list(SMOKE)
    assert index[SMOKE[0]]["files"] == [f"{SMOKE[0]}.{e}" for e in ("png", "csv", "json")]
    assert index[SMOKE[0]]["mode"] == "quick"
    readme = (tmp_path / "README.md").read_text()
    assert f"- [{SMOKE[0]}.png]({SMOKE[0]}.png): figure" in readme
    assert readme.count("\n## ") == len(SMOKE)
    assert runner.main(["--only", "proh", "--out", str(tmp_path)]) == 0
    assert list(json.loads((tmp_path / "index.json").read_text())) == [*SMOKE, "proh"]
    (tmp_path / "index.json").write_text("[1, 2]")
    assert runner.main(["--only", "proh", "--out", str(tmp_path)]) == 0
    assert "not an index written here" in capsys.readouterr().err
    assert list(json.loads((tmp_path / "index.json").read_text())) == ["proh"]
    monkeypatch.undo()  # the real modules: each one's first sentence
    assert _index.about("thm3_tv_bound").startswith("Thm. 3: posterior stability")
    assert _index.about("kg_incomplete").endswith(".") and "\n" not in _index.about("proh")


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_runs_in_64_bit(name):
    """Each ``main`` is wrapped by ``float64`` (the test process enables 64-bit JAX globally,
    so a ``main`` without it would pass here and run part of its work in 32 bits alone)."""
    from experiments._io import float64

    main = importlib.import_module(f"experiments.{name}").main
    assert main.__code__ is float64(lambda: None).__code__


def test_time_left_scales_the_remaining_estimate_by_the_run_so_far(monkeypatch):
    import experiments.__main__ as runner

    monkeypatch.setattr(runner, "QUICK_SECONDS", {"a": 10, "b": 20, "c": 30})
    assert runner._eta(["a", "b", "c"], {"a": 20.0}) == 100.0  # twice as slow as measured
    assert runner._eta(["a", "b", "c"], {"a": 5.0, "b": 10.0}) == 15.0


def _help(main) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main(["--help"])
    return buf.getvalue()


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_each_experiment_names_itself_and_checks_its_output_directory_first(name, tmp_path):
    mod = importlib.import_module(f"experiments.{name}")
    assert f"usage: python -m experiments.{name} " in _help(mod.main)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(SystemExit):  # before any computation
        mod.main(["--quick", "--out", str(tmp_path / "file" / "out")])


def test_an_experiment_leaves_the_callers_precision_alone(tmp_path):
    """Running an experiment used to switch ``jax_enable_x64`` on for the whole process."""
    import jax

    main = importlib.import_module("experiments.prop13_tradeoff").main
    jax.config.update("jax_enable_x64", False)  # a library user's float32 process
    try:
        main(["--quick", "--out", str(tmp_path)])
        assert not jax.config.jax_enable_x64
    finally:
        jax.config.update("jax_enable_x64", True)  # the suite's setting (conftest)


def test_fig2_two_worlds(results):
    r = results["fig2_two_worlds"]
    assert r["same_observation"] is True
    w1, w2 = r["worlds"]["W1"], r["worlds"]["W2"]
    assert w1["claim_true"] is True and w2["claim_true"] is False
    for w in (w1, w2):
        assert w["claim_observed"] is False
        assert w["hard_rule_decision"] == 0
        assert w["hard_mass_claim"] == 0.0  # Prop. 3: hard support collapse
        assert all(m > 0 for m in w["soft_mass_claim"])  # finite slack keeps it
        assert w["status"][0] == "UNSUPPORTED"
        assert w["action_at_lambda_1"] == "RETRIEVE"
    assert w1["soft_mass_claim"] == w2["soft_mass_claim"]  # same R, same posterior
    assert r["thm1"]["hard_rule_F_R"] == dict(
        keeps_true_unobserved=False, rejects_false_unsupported=True, both=False
    )
    assert r["thm1"]["retain_unless_contradicted"]["both"] is False
    assert r["fully_observed_W1"]["hard_mass"][0] == pytest.approx(1.0)


def test_thm3_tv_bound(results):
    r = results["thm3_tv_bound"]
    assert r["violations_sharp"] == 0 and r["violations_paper"] == 0
    assert r["max_ratio_sharp"] <= 1.0 + 1e-12
    assert r["max_ratio_paper"] <= 1.0 + 1e-12
    assert r["max_log_ratio_over_bound"] <= 1.0 + 1e-9
    at = r["attaining"]
    assert r["attaining"]["max_abs_gap_to_sharp"] < 1e-12  # on the sharp curve
    # measured TV <= sharp bound <= paper bound, with the paper's bound strictly loose.
    assert all(t <= s + 1e-12 for t, s in zip(at["tv"], at["sharp_bound"], strict=True))
    assert all(s < p for s, p in zip(at["sharp_bound"], at["paper_bound"], strict=True))
    assert r["swapped_prior"]["max_ratio_sharp"] < 1.0


def test_prop6_soft_to_hard(results):
    r = results["prop6_soft_to_hard"]
    assert r["exact_strictly_decreasing"] is True
    assert r["measured_nonincreasing"] is True
    assert r["max_abs_error"] < 1e-14
    assert r["max_rel_error_resolved"] < 1e-9
    lou = r["lou_seal"]
    for lam in ("0.5", "2.0"):
        for k in range(2):
            tv = np.asarray(lou["measured"][lam][k])
            assert np.all(np.diff(tv) <= 1e-15)
            assert tv[-1] < 1e-12 < tv[0]
    assert lou["S_R_fully_observed"] == [True, False, False, False, False]


def test_prop13_tradeoff(results):
    r = results["prop13_tradeoff"]
    assert r["F_nondecreasing"] is True and r["G_nonincreasing"] is True
    obs, full = r["lou_seal"]["observed_R"], r["lou_seal"]["W1_fully_observed"]
    for d in (obs, full):
        assert d["F"][0] == pytest.approx(0.0, abs=1e-12)  # lambda = 0: the prior
        assert np.all(np.diff(d["mass_correct"]) >= -1e-12)
    assert full["mass_correct_limit"] > 0.99 and full["map"][-1] == "correct_2014"
    assert 0 < obs["mass_correct_limit"] < 0.5  # tied at the slack with other unsupported ones
    assert obs["map"][-1] == "unsupported_generic"


def test_kg_incomplete(results):
    r = results["kg_incomplete"]["datasets"]["umls"]
    sc = r["support_collapse"]
    assert sc["floor_violations"] == 0  # Prop. 11 soft floor, every query and lambda
    assert sc["soft_true_deleted"] == 0.0  # Prop. 3: finite slack never deletes
    assert sc["F_nondecreasing"] and sc["G_nonincreasing"]  # Prop. 13
    assert sc["hard"]["exact"] == dict(true_deleted=1.0, undefined=1.0, map_acc=0.0, mass_true=0.0)
    assert 0 < sc["hard"]["adjacent"]["true_deleted"] < 1
    for counts in r["two_worlds"]["rules"].values():  # Thm. 1: wrong in exactly one world
        assert counts["both_requirements"] == 0
        assert counts["wrong_in_W1"] + counts["wrong_in_W2"] == r["two_worlds"]["n_queries"]
    st = r["stability"]
    assert st["violations_paper"] == 0 and st["violations_sharp"] == 0  # Thm. 3
    assert st["max_sup_dE"] <= st["kappa"] + 1e-12  # slack caps the energy change
    assert r["coverage"]["max_excess_in_se"] < 4.0  # Prop. 4 (MC noise only)
    # the numbers behind the Thm. 3 and Prop. 4 panels are in the JSON, one entry per point
    assert {len(v) for v in st["scatter"].values()} == {st["n_pairs"]}
    assert set(st["scatter"]) == {"lam_omega", "tv", "sharp", "paper"}
    cov = r["coverage"]
    assert len(cov["m_q"]) == len(cov["coverage"]) == len(cov["retention"]) > 0
    assert len(r["selective"]["risk_coverage"]["risk"]) > 0
    lam_c = r["calibration"]["coverage_aware"]["lam_of_c"]
    assert np.all(np.diff(lam_c) >= 0)  # Axiom 6: lambda'(c) >= 0


def test_retrieval_pcr(results):
    r = results["retrieval_pcr"]
    tab = r["pathrag6"]
    assert set(tab) >= {"tech", "bio", "legal", "medical", "microservices", "citations", "all"}
    for dom, per in tab.items():
        if dom in ("all",) or not isinstance(per, dict) or "pcr" not in per:
            continue
        assert per["pcr"]["consistency"] == 1.0  # hard PCR: consistent by construction
    assert all(r["anchor_sensitivity"][m]["consistency"] == 1.0 for m in r["anchor_sensitivity"])
    for depth in r["umls"]["depths"].values():  # Prop. 6 on real data: soft -> hard
        last = depth["soft_curve"][-1]
        # at a large penalty soft PCR's list starts with hard PCR's whole list (and may fill
        # the remaining slots when C(a) has fewer than k nodes), so it finds at least as much
        assert last["recall"] >= depth["hard_recall"] - 1e-12
    d1 = r["umls"]["depths"]["1"]
    assert d1["frac_queries_with_unreachable_relevant"] > 0.3  # incompleteness is real
    assert d1["soft_curve"][0]["kept_lost_relevant"] > 0.0  # soft keeps some of them


def test_proh(results):
    r = results["proh"]
    assert r["n_test"] > 0 and set(r["systems"]) >= {
        "proh",
        "proh_bfs",
        "hypergraphrag",
        "binary_pcr",
    }
    for name, row in r["systems"].items():
        for h, cell in row.items():
            assert 0 <= cell["f1"] <= 1 and 0 <= cell["hit"] <= 1, (name, h)
    # DFS stops at K solutions in the tree BFS walks whole (up to the same state cap)
    assert 1 <= r["states"]["dfs"]["mean_states"] <= r["states"]["bfs"]["mean_states"]
    assert sorted(r["d_max"]) == ["1", "3"]  # quick: d_max 1 and 3 (2 and 4 with --full)
    assert set(r["oracle"]) >= {"proh", "hypergraphrag"}  # oracle (gold chain) rows stay
    for row in r["comparisons"].values():  # paired bootstrap intervals around the difference
        lo, hi = row["f1"]["ci"]
        assert lo <= row["f1"]["diff"] <= hi
    assert all(0 <= c["top1"] <= c["topk"] <= 1 for c in r["role_chains"].values() if c["n"])
    fate = r["unobserved"]
    if fate["candidates"]:  # finite slack: soft grounding keeps every true-but-unobserved answer
        assert fate["soft_keeps"] == 1.0
    # budgets: HyperGraphRAG grounds once over k hyperedges; PRoH at least once per question it
    # answers, BFS grounding no fewer steps than DFS; the curve's row at 60 is the table's row
    b = r["budgets"]
    assert b["hypergraphrag_k20"] == {"ground_calls": 1.0, "hyperedges": 20.0}
    assert 0 < b["proh"]["ground_calls"] <= b["proh_bfs"]["ground_calls"]
    assert b["proh"]["hyperedges"] > 0
    curve = r["hypergraphrag_curve"]
    assert sorted(curve, key=int) == ["20", "60"] and r["matched_k"] in (20, 60)
    assert curve["60"]["f1"] == pytest.approx(r["systems"]["hypergraphrag"]["all"]["f1"])
    d = curve["60"]["proh_minus"]
    assert d["diff"] == pytest.approx(r["systems"]["proh"]["all"]["f1"] - curve["60"]["f1"])
    # the verdict against HyperGraphRAG is decided at the matched retrieval size
    m = r["comparisons"]["proh_vs_hypergraphrag_matched"]["f1"]
    matched = curve[str(r["matched_k"])]
    assert m["diff"] == pytest.approx(r["systems"]["proh"]["all"]["f1"] - matched["f1"])
