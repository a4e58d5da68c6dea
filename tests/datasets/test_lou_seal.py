"""The Lou Seal running example (Sec. 5.4, Thm. 1, Fig. 2)."""

from __future__ import annotations

import numpy as np
import pytest

from grounding import EvidenceStatus
from grounding.datasets import lou_seal_evidence
from grounding.datasets.lou_seal import STAND_IN_PRIOR
from grounding.examples import lou_seal_example
from grounding.paths import chain_path_energies
from grounding.worlds import hard_rule_requirements, truth


# ----------------------------------------------------------------------------- example
@pytest.fixture(scope="module")
def ex():
    return lou_seal_example()


def test_observed_state_lacks_the_championship_edge(ex):
    assert ex.world_1.has_triple(ex.claim)
    assert not ex.observed.has_triple(ex.claim)
    assert not any(h == ex.claim[0] and r == ex.claim[1] for h, r, _ in ex.observed.triples())
    # R is W1 minus exactly that edge.
    assert sorted(ex.observed.triples()) == sorted(t for t in ex.world_1.triples() if t != ex.claim)


def test_two_worlds_have_identical_observations_and_disagree_on_the_claim(ex):
    alt = (ex.claim[0], ex.claim[1], ex.alternative_tail)
    assert ex.world_2.has_triple(alt) and not ex.world_2.has_triple(ex.claim)
    o1, o2 = ex.observe(ex.world_1), ex.observe(ex.world_2)
    assert sorted(o1.graph.triples()) == sorted(o2.graph.triples()) == sorted(ex.observed.triples())
    assert o1.negative == o2.negative and o1.functional == o2.functional
    assert truth(ex.world_1, ex.claim) and not truth(ex.world_2, ex.claim)


def test_thm1_hard_rule_cannot_satisfy_both_requirements(ex):
    keeps, rejects = hard_rule_requirements(
        ex.hard_rule, [ex.world_1, ex.world_2], ex.observe, ex.claim
    )
    assert (keeps, rejects) == (False, True)  # rejected in both worlds: wrong in W1
    assert ex.hard_rule(lou_seal_evidence(ex.world_1), ex.claim) == 1  # kept once observed


def test_candidate_statuses_and_slack_energies(ex):
    names = ex.names
    st_r = [EvidenceStatus(int(s)) for s in np.asarray(ex.grounded_R.status)]
    assert st_r[names.index("correct_2014")] is EvidenceStatus.UNSUPPORTED
    assert st_r[names.index("wrong_team_drift")] is EvidenceStatus.CONTRADICTED
    assert st_r[names.index("relation_reversal")] is EvidenceStatus.CONTRADICTED
    assert st_r[names.index("unsupported_generic")] is EvidenceStatus.UNSUPPORTED
    e = np.asarray(ex.grounded_R.energy)
    assert np.all(np.isfinite(e))  # finite slack everywhere
    assert e[ex.correct_index] == pytest.approx(ex.kappa)
    full = ex.ground(lou_seal_evidence(ex.world_1))
    assert EvidenceStatus(int(full.status[ex.correct_index])) is EvidenceStatus.SUPPORTED
    assert float(full.energy[ex.correct_index]) <= ex.eps_s
    # The correct route is the lowest-energy candidate once its edge is observed.
    assert int(np.argmin(np.asarray(full.energy))) == ex.correct_index


def test_jitted_chain_energy_matches_eager_enumeration(ex):
    """The example's compiled grounding equals Eq. (11) by explicit walk enumeration."""
    g = ex.world_1
    for k, c in enumerate(ex.candidates):
        psi = np.asarray(ex.embeddings)[[g.entity_index(e) for e in c.entities]]
        rels = [g.relation_index(r) for r in c.relations]
        _, e = chain_path_energies(
            g, ex.embeddings, ex.relation_map, psi, rels, alpha=ex.alpha, xi=ex.xi
        )
        expected = float(np.min(np.asarray(e))) if e.shape[0] else np.inf
        got = float(ex.ground(lou_seal_evidence(g)).raw_energy[k])
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_example_is_deterministic_and_prior_is_a_declared_stand_in(ex):
    again = lou_seal_example()
    np.testing.assert_array_equal(np.asarray(again.embeddings), np.asarray(ex.embeddings))
    np.testing.assert_array_equal(
        np.asarray(again.grounded_R.energy), np.asarray(ex.grounded_R.energy)
    )
    assert ex.embeddings.shape == (ex.world_1.n_nodes, 8)
    assert "stand-in" in ex.prior_note
    assert sum(STAND_IN_PRIOR.values()) == pytest.approx(1.0)
    np.testing.assert_allclose(
        np.exp(np.asarray(ex.log_prior)), [STAND_IN_PRIOR[n] for n in ex.names]
    )
