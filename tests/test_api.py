"""The public API: the flat namespace is generated from each module's ``__all__``, the
pipeline names exist, every name of the previous release still resolves, and every moved or
renamed name warns (DeprecationWarning) and still works."""

from __future__ import annotations

import collections
import dataclasses
import importlib
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import grounding

# The public names of the previous release (before the pipeline/layout change).
PREVIOUS = {
    "grounding": """Action BilinearEnergy EdgeIndex EvidenceState EvidenceStatus Identity
        IsotonicCalibrator Linear Rotation TopPaths Translation TypedGraph UNREACHABLE
        aggregate_paths aggregation_bounds amplification best_path_energy chain_energy
        chain_path_energies classify_claim classify_status concentration_tv_bound
        constraint_tradeoff coverage_any_path coverage_independent decide edge_residuals
        edge_usage energy_field energy_perturbation_delta entity_cost enumerate_walks euclidean
        expected_energy gibbs_log_posterior hard_feasible hard_limit_tv hard_log_posterior
        hoeffding_failure_bound hoeffding_sample_size hop_distances hop_energy_fields
        kl_divergence kl_objective kl_objective_decomposition log_odds log_partition
        log_ratio_bound manhattan map_index map_probability_lower_bound margin_condition
        oscillation pairwise_ranking_condition path_energy path_posterior projection revise
        revision_objective selective_rule simple_paths slack_energy soft_floor status_energy
        support_region suppression_log_ratio_bound top_paths tv_bound tv_bound_delta
        tv_bound_delta_sharp tv_bound_sharp tv_distance typed_residual unified_objective
        variational_path_objective walk_nodes""",
    "grounding.retrieval": """BM25 BM25Retriever EmbeddingCache Encoder HashingEncoder
        HybridRetriever PCR Query Retrieval Retriever SentenceTransformerEncoder SoftPCR
        TextIndex UNREACHABLE VectorRetriever default_encoder distance_penalty get_encoder minmax
        recall_at_k relevance_at_k structural_consistency tokenize""",
    "grounding.datasets": """ANTISYMMETRIC FUNCTIONAL KGSplits KG_DATASETS PATHRAG6_DOMAINS
        RetrievalBenchmark STAND_IN_PRIOR generate_pathrag6 kg_retrieval_benchmark load_kg
        load_kg_splits load_pathrag6 load_triples lou_seal lou_seal_evidence read_triples""",
    "grounding.regularize": """adjacency fit_typed fit_untyped identity_map laplacian
        laplacian_energy laplacian_spectrum linear_map minimize pairwise_smoothness
        reversal_residual rotation_map spectral_energy translation_map typed_residual_regularizer""",
    "grounding.geometry": """BilinearEnergy Identity Linear Metric Rotation Translation
        edge_residuals entity_cost euclidean get_metric manhattan typed_residual""",
    "grounding.semiring": "EdgeIndex UNREACHABLE edge_usage energy_field hop_distances hop_energy_fields",
    "grounding.paths": "TopPaths chain_energy chain_path_energies enumerate_walks simple_paths top_paths walk_nodes",
    "grounding.evidence": "EvidenceState EvidenceStatus Triple TypedGraph",
    "grounding.worlds": """HidingObservation coverage_monte_carlo entity_dropout
        hard_rule_requirements independent_edge_retention relation_dropout truth two_world_witness""",
    "grounding.learn": """DEFAULTS KGEModel KINDS TrainConfig TrainResult init_model load_checkpoint
        save_checkpoint train Ranks filtered_ranks rank_metrics""",
}


def test_flat_namespace_is_the_union_of_the_modules_all():
    names = [n for m in grounding.FLAT_MODULES for n in m.__all__]
    assert grounding.__all__ == names
    dupes = [n for n, c in collections.Counter(names).items() if c > 1]
    assert not dupes, f"names in two modules' __all__: {dupes}"
    for m in grounding.FLAT_MODULES:
        for n in m.__all__:
            assert getattr(grounding, n) is getattr(m, n), n


def test_every_subpackage_all_resolves_without_clashes():
    for mod in ("retrieval", "datasets", "learn", "regularize", "alignment", "semiring", "paths"):
        m = importlib.import_module(f"grounding.{mod}")
        assert len(set(m.__all__)) == len(m.__all__), mod
        for n in m.__all__:
            assert hasattr(m, n), f"grounding.{mod}.{n}"


def test_the_pipeline_api():
    for n in ("ground", "ground_batch", "GroundingProblem", "GroundingResult", "edge_cost"):
        assert n in grounding.__all__
    fields = {f.name for f in dataclasses.fields(grounding.GroundingResult)}
    assert {"log_posterior", "energy", "status", "action", "paths", "certificate"} <= fields


@pytest.mark.parametrize("module", sorted(PREVIOUS))
def test_every_previous_public_name_still_resolves(module):
    m = importlib.import_module(module)
    for name in PREVIOUS[module].split():
        assert hasattr(m, name), f"{module}.{name}"


def _fresh(module: str):
    """Import ``module`` anew (module-level deprecation warnings fire once per import)."""
    sys.modules.pop(module, None)
    return importlib.import_module(module)


@pytest.mark.parametrize(
    ("module", "name", "check"),
    [
        ("grounding.datasets", "lou_seal_example", lambda f: f().grounded_R.names[0] == "correct_2014"),
        ("grounding.datasets", "LouSealExample", lambda c: c.__name__ == "LouSealExample"),
        ("grounding.datasets", "CANDIDATES", lambda c: len(c) == 5),
        ("grounding.datasets", "ClaimChain", lambda f: f("x", ("a", "b"), ("r",)).name == "x"),
        ("grounding.datasets", "Grounded", lambda c: c is grounding.GroundingResult),
        ("grounding.datasets", "fit_translation_embeddings", callable),
        ("grounding.regularize", "BuiltinMap", lambda f: f("translation", np.ones((1, 2)))(0, np.zeros(2)).tolist() == [1.0, 1.0]),
        ("grounding.regularize", "RelationMap", lambda t: t is grounding.RelationMap),
        ("grounding.learn.kge", "evaluate", lambda f: f is grounding.learn.evaluate_link_prediction),
        ("grounding.retrieval", "evaluate", lambda f: f.__name__ == "evaluate_retrieval"),
    ],
)  # fmt: skip
def test_moved_names_warn_and_work(module, name, check):
    m = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=name):
        obj = getattr(m, name)
    assert check(obj)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("grounding.kge", "grounding.learn.kge"),
        ("grounding.linkpred", "grounding.learn.linkpred"),
    ],
)
def test_moved_modules_warn_and_are_the_new_modules(old, new):
    with pytest.warns(DeprecationWarning, match=old):
        m = _fresh(old)
    assert m is importlib.import_module(new)


def test_old_retrieval_modules_and_textgraph_warn_and_work():
    for old in ("grounding.retrieval.graph", "grounding.retrieval.retrievers"):
        with pytest.warns(DeprecationWarning, match=old):
            m = _fresh(old)
    assert m.PCR is grounding.retrieval.PCR
    tg = grounding.retrieval.TextGraph
    with pytest.warns(DeprecationWarning, match="TextGraph.from_edges"):
        g = tg.from_edges(["a", "b"], ["A.", "B."], [("a", "b")])
    assert isinstance(g, grounding.TypedGraph) and g.node_texts == ("A.", "B.")
    with pytest.warns(DeprecationWarning, match="TextGraph"):
        g2 = tg(["a", "b"], ["A.", "B."], [0], [1], [0])
    assert g2.triples() == g.triples()
    with pytest.warns(DeprecationWarning, match="from_typed_graph"):
        assert tg.from_typed_graph(g) is g


def test_soft_pcr_temperature_keyword_warns_and_works():
    g = grounding.TypedGraph.from_edges(["a", "b"], [("a", "b")], texts=["cloud", "graph"])
    index = grounding.retrieval.TextIndex(g)
    with pytest.warns(DeprecationWarning, match="prior_temperature"):
        soft = grounding.retrieval.SoftPCR(index, temperature=0.2)
    assert soft.prior_temperature == 0.2 == soft.temperature


def test_parameter_renames_keep_positional_calls():
    e, lw = jnp.array([1.0, 2.0]), jnp.log(jnp.array([0.5, 0.5]))
    assert float(grounding.aggregate_paths(e, lw, 0.0)) == 1.0
    assert float(grounding.revision_objective(1.0, 2.0, 3.0, 1.0, 1.0)) == 0.5 + 2.0 + 3.0


def test_enums_print_their_names_and_stay_integers():
    """``Action``/``EvidenceStatus`` print as names (they printed as ``0``) and remain the
    integer codes stored in JAX arrays."""
    from grounding import Action, EvidenceStatus

    assert str(Action.ANSWER) == "ANSWER" and f"{Action.RETRIEVE:>9}" == " RETRIEVE"
    assert str(EvidenceStatus.UNSUPPORTED) == "UNSUPPORTED"
    assert int(Action.VERIFY) == 3 and Action(2) is Action.RETRIEVE
    assert int(jnp.asarray(EvidenceStatus.CONTRADICTED)) == 1
