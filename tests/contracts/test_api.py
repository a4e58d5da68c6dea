"""The public API: a small top level (what a user calls first), every other name in a
namespace whose ``__all__`` holds only things a user calls (no helpers, prompt strings or
constants), and no deprecated locations left."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import jax.numpy as jnp
import pytest

import grounding

#: The modules the top level draws from (problem, evidence, graph, solver, result, decision,
#: posterior); every other public name lives in a namespace.
TOP_LEVEL_HOMES = {
    "grounding.problem",
    "grounding.evidence",
    "grounding.graph",
    "grounding.solver",
    "grounding.solver.solve",
    "grounding.solver.config",
    "grounding.result",
    "grounding.decision",
    "grounding.posterior",
}
NAMESPACES = (
    "bounds", "geometry", "paths", "semiring", "energy", "worlds", "regularize", "alignment",
    "retrieval", "retrieval.learned", "qa", "prior", "plans", "language", "learn", "datasets",
    "plot",
    "testing",
)  # fmt: skip


def test_the_top_level_is_small_and_drawn_from_the_core_modules():
    assert len(grounding.__all__) <= 40
    assert len(set(grounding.__all__)) == len(grounding.__all__)
    for n in grounding.__all__:
        obj = getattr(grounding, n)
        if inspect.isclass(obj) or inspect.isfunction(obj):  # not a type alias (Triple)
            assert obj.__module__ in TOP_LEVEL_HOMES, (n, obj.__module__)


@pytest.mark.parametrize("mod", NAMESPACES)
def test_every_namespace_all_resolves_without_clashes_and_holds_no_helpers(mod):
    m = importlib.import_module(f"grounding.{mod}")
    names = getattr(m, "__all__", [])
    assert len(set(names)) == len(names), mod
    for n in names:
        obj = getattr(m, n)
        assert not n.startswith("_"), f"grounding.{mod}.{n}"
        assert not n.startswith("check_"), f"grounding.{mod}.{n}: a helper"
        assert not (n.isupper() and not inspect.isclass(obj)), f"grounding.{mod}.{n}: a constant"
        assert not n.endswith("_PROMPT"), f"grounding.{mod}.{n}: a prompt string"


@pytest.mark.parametrize(
    "old",
    ["grounding.kge", "grounding.linkpred", "grounding.retrieval.graph",
     "grounding.retrieval.retrievers", "grounding.retrieval.proh",
     "grounding.retrieval.planner", "grounding.qa.pankrag", "grounding.qa.proh",
     "grounding.qa.loop", "grounding.qa.openai", "grounding.qa.hypergraph", "grounding.llm",
     "grounding.retrieval.text", "grounding.retrieval.path_constrained",
     "grounding.retrieval.learned._training",
     "grounding.qa.candidates", "grounding.qa.answerer", "grounding.qa.linking",
     "grounding.qa.remote_model", "grounding.qa.local_model"],
)  # fmt: skip
def test_old_module_locations_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


@pytest.mark.parametrize(
    "module, name",
    [("grounding.qa._checks", "check_ground_kwargs"), ("grounding.qa._checks", "SUPPORT_TOLERANCE"),
     ("grounding.qa.grounded", "ground_many"), ("grounding.qa.grounded", "ground_each"),
     ("grounding.qa.grounded", "ground_live"), ("grounding.qa.grounded", "compact_evidence"),
     ("grounding.retrieval.base", "compact_evidence_batch"),
     ("grounding.retrieval", "compact_evidence_batch"),
     ("grounding.solver.prepare", "bucket"), ("grounding.alignment._common", "bucket")],
)  # fmt: skip
def test_removed_names_are_gone(module, name):
    """The old grounding keywords of the systems, the per-system grounding loops and the
    duplicate compactions and buckets are gone (one way each: ``GroundingConfig``,
    ``ground_batch``, ``grounding.solver.compact.compact_evidence``, ``grounding._shapes``);
    ``prepare`` may still import ``bucket``, but does not export it."""
    m = importlib.import_module(module)
    assert name not in getattr(m, "__all__", ())
    if name != "bucket" or module != "grounding.solver.prepare":
        assert not hasattr(m, name), f"{module}.{name}"


def test_the_qa_floor_shares_one_pipeline_and_one_calibration():
    """The names every system is built from live in ``grounding.qa.pipeline``; the one outcome
    protocol and the one calibration are public in ``grounding.qa``, and every system's outcome
    implements the protocol (with ``groundings()`` for the calibration)."""
    from grounding import qa
    from grounding.qa import calibration, outcome, pipeline

    for n in ("QUESTION_ERRORS", "failure", "unknown_entities", "claim_chains",
              "retrieve_or_fail", "ground_or_fail", "Retrievers"):  # fmt: skip
        assert n in pipeline.__all__, n
        assert callable(getattr(pipeline, n)) or isinstance(getattr(pipeline, n), tuple), n
    assert qa.fit_lambda is calibration.fit_lambda and qa.Outcome is outcome.Outcome
    for cls in (qa.QAOutcome, qa.BlindOutcome, qa.PankRAGOutcome, qa.PRoHOutcome):
        for member in ("answer", "answer_probabilities", "groundings"):
            assert hasattr(cls, member), (cls.__name__, member)


def test_the_pipeline_api():
    for n in ("ground", "ground_batch", "GroundingProblem", "GroundingResult", "edge_cost"):
        assert n in grounding.__all__
    fields = {f.name for f in dataclasses.fields(grounding.GroundingResult)}
    assert {"log_posterior", "energy", "status", "action", "paths", "certificate"} <= fields


def test_parameter_renames_keep_positional_calls():
    e, lw = jnp.array([1.0, 2.0]), jnp.log(jnp.array([0.5, 0.5]))
    assert float(grounding.energy.aggregate_paths(e, lw, 0.0)) == 1.0
    assert float(grounding.energy.revision_objective(1.0, 2.0, 3.0, 1.0, 1.0)) == 0.5 + 2.0 + 3.0


def test_enums_print_their_names_and_stay_integers():
    """``Action``/``EvidenceStatus`` print as names (they printed as ``0``) and remain the
    integer codes stored in JAX arrays."""
    from grounding import Action, EvidenceStatus

    assert str(Action.ANSWER) == "ANSWER" and f"{Action.RETRIEVE:>9}" == " RETRIEVE"
    assert str(EvidenceStatus.UNSUPPORTED) == "UNSUPPORTED"
    assert int(Action.VERIFY) == 3 and Action(2) is Action.RETRIEVE
    assert int(jnp.asarray(EvidenceStatus.CONTRADICTED)) == 1
