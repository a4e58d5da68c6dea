"""The WordNet experiment (a real language model's answers grounded on WN18RR) end to end at
a tiny scale: its files, its figure's panels, its final line, and the blind contract (the
model and the pool see the question text and topic only). Slow (about 1-3 minutes: the model
answers 10 questions, TransE trains an epoch): ``pytest -m slow
tests/experiments/test_wordnet_llm.py``; the default suite checks the model itself
(``tests/language/test_local.py``)."""

from __future__ import annotations

import json

import pytest
from _experiment_runs import check_outputs, check_panels

pytestmark = pytest.mark.slow

pytest.importorskip("gguf", reason="the grounding[llm] extra is not installed")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from experiments import wordnet_llm

    out = tmp_path_factory.mktemp("wordnet_llm")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wordnet_llm, "QUICK", wordnet_llm.Scale(60, 3, 2, 16, 1))
        seen = []
        real = wordnet_llm.LocalCandidateModel.propose_batch

        def spy(self, questions, k):
            seen.extend(questions)
            return real(self, questions, k)

        patch.setattr(wordnet_llm.LocalCandidateModel, "propose_batch", spy)
        paths = wordnet_llm.main(["--quick", "--out", str(out)])
    return out, paths, seen


def test_outputs_panels_and_final_line(run, capsys):
    out, paths, _ = run
    runs = {"wordnet_llm": (out, paths)}
    check_outputs(runs, "wordnet_llm")
    check_panels(runs, "wordnet_llm")
    report = json.loads((out / "wordnet_llm.json").read_text())
    for key in ("1hop", "2hop", "all"):
        for name in ("llm_prior", "llm_soft", "llm_hard", "kge_prior"):
            assert 0.0 <= report[key][name]["hits1"] <= 1.0
        assert 0.0 <= report[key]["out_of_graph"] <= 1.0
    assert report["all"]["llm_soft"]["n"] == 6  # 3 test questions per hop count


def test_the_model_sees_blind_questions_only(run):
    """What reaches the model carries a text and a topic, no answers and no chain."""
    from grounding.query import BlindQuestion

    _, _, seen = run
    assert seen and all(type(q) is BlindQuestion for q in seen)
