"""The four QA systems on shared parts: given one GroundingConfig, the same statuses and
hard posteriors on the same evidence."""

from __future__ import annotations

import numpy as np
import pytest
from _systems import WORLD_PRIOR, four_systems

from grounding import GroundingConfig, ground


def _statuses(result):
    from grounding import EvidenceStatus

    return {a: EvidenceStatus(int(s)).name for a, s in zip(result.answers, result.status)}


_S, _U = "SUPPORTED", "UNSUPPORTED"


@pytest.mark.parametrize(
    "settings, want, hard_kept",
    [
        # the default eps follows the support tolerance (kappa): prize1 and prize2 are kept
        ({}, dict(prize1=_S, prize2=_S, film1=_U), {"prize1", "prize2"}),
        # the strict rule keeps only the walk of energy 0
        ({"eps": 0.0}, dict(prize1=_S, prize2=_S, film1=_U), {"prize1"}),
        # a support tolerance below log 2 (and the hard one following it) drops prize2
        ({"eps_s": 0.5}, dict(prize1=_S, prize2=_U, film1=_U), {"prize1"}),
        # no hard posterior at all
        ({"eps": None}, dict(prize1=_S, prize2=_S, film1=_U), None),
    ],
)
def test_the_four_systems_given_one_config_agree_on_one_question(settings, want, hard_kept):
    """GroundedQA, BlindQA, PankRAG and PRoH on the same facts with the same config: the same
    status per answer entity, the same presence of a hard posterior, and the same hard
    feasible set (exactly the candidates the config's hard tolerance keeps); PRoH's result is
    also ``ground`` of its own problem on its own evidence with that config."""
    config = GroundingConfig(lam=2.0, kappa=1.0, **settings)
    outs, bipartite = four_systems(config)
    for name, out in outs.items():
        assert out.reason is None, (name, out.reason)
        [result] = out.groundings()
        assert _statuses(result) == want, name
        assert sorted(result.answers) == sorted(WORLD_PRIOR), name
        if hard_kept is None:
            assert result.hard_log_posterior is None and result.hard_abstained is None, name
            with pytest.raises(ValueError, match="no hard posterior"):
                out.answer_probabilities("hard")
            continue
        assert result.hard_log_posterior is not None, name
        hard = dict(zip(result.answers, np.exp(np.asarray(result.hard_log_posterior))))
        assert {a for a, p in hard.items() if p > 0} == hard_kept, (name, hard)
        names, probs = out.answer_probabilities("hard")
        assert {a for a, p in zip(names, probs) if p > 0} == hard_kept, name
        assert probs.sum() == pytest.approx(1.0), name
    # PRoH's evidence is the bipartite graph of the hyperedges it visited (both, here): its
    # result is ground's on its own problem with the same config
    final = outs["PRoH"].solutions[0].final
    ref = ground(final.problem, bipartite, config=config)
    np.testing.assert_array_equal(np.asarray(final.result.status), np.asarray(ref.status))
    np.testing.assert_allclose(final.result.log_posterior, ref.log_posterior, atol=1e-12)
    assert (final.result.hard_log_posterior is None) == (ref.hard_log_posterior is None)
    if ref.hard_log_posterior is not None:
        np.testing.assert_allclose(
            final.result.hard_log_posterior, ref.hard_log_posterior, atol=1e-12
        )
    # the three systems with the model's prior agree on the posterior too
    posts = {
        name: dict(zip(*out.groundings()[0].answer_probabilities("soft")))
        for name, out in outs.items()
        if name != "PRoH"
    }
    for name, post in posts.items():
        for a, p in posts["GroundedQA"].items():
            assert post[a] == pytest.approx(p, abs=1e-12), (name, a)


def test_each_system_releases_its_programs_after_a_batch_when_asked(monkeypatch):
    """``release_programs=True`` on any of the four systems: each releases once after its
    batch (no compiled program live afterwards), and the grounded posteriors are those of the
    same system keeping its programs."""
    from grounding import programs

    config = GroundingConfig(lam=2.0, kappa=1.0)
    calls = []
    release = programs.release_programs
    monkeypatch.setattr(programs, "release_programs", lambda: calls.append(1) or release())
    kept, _ = four_systems(config)
    assert programs.program_info()["live"] > 0 and not calls
    released, _ = four_systems(config, release_programs=True)
    assert len(calls) == 4 and programs.program_info()["live"] == 0
    for name in kept:
        [a], [b] = kept[name].groundings(), released[name].groundings()
        np.testing.assert_array_equal(a.log_posterior, b.log_posterior, err_msg=name)
    with pytest.raises(TypeError, match="release_programs"):
        four_systems(config, release_programs="yes")
