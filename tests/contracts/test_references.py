"""Every public name of the core that cites a numbered result of a paper has a References section.

A public name (one in its module's ``__all__``) whose docstring mentions an equation,
definition, axiom, proposition, theorem or corollary must carry a Google-style
``References:`` section naming a quoted title and a year. The paper the package implements
(*Grounding LLM Reasoning under Incomplete Graph Evidence*, Li & Song) states no year, so
its entries say ``n.d.``, which the check accepts in place of a four-digit year.

The upper floors (retrieval, learned retrievers, plans, question answering) implement other
published methods (PCR, PankRAG, PRoH, SubgraphRAG, GraphRAG, ...) whose docstrings need not
cite a numbered result, so there the names are listed explicitly (:data:`UPPER_FLOOR_NAMES`):
each must carry a References section with a quoted title and a year (or ``n.d.``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import types

import pytest

# The core modules, listed explicitly (the retrieval, question-answering, planning, LLM and
# dataset layers are not checked here).
CORE_MODULES = (
    "grounding.posterior",
    "grounding.energy",
    "grounding.bounds",
    "grounding.decision",
    "grounding.geometry",
    "grounding.problem",
    "grounding.evidence",
    "grounding.graph",
    "grounding.worlds",
    "grounding.hypergraph",
    "grounding.result",
    "grounding._shapes",
    "grounding._numerics",
    "grounding.regularize",
    "grounding.regularize.smoothing",
    "grounding.regularize.typed",
    "grounding.alignment",
    "grounding.alignment.sequences",
    "grounding.alignment.transport",
    "grounding.semiring",
    "grounding.semiring.fields",
    "grounding.semiring.fused",
    "grounding.semiring.kernels",
    "grounding.semiring.layout",
    "grounding.semiring.reach",
    "grounding.semiring.recursion",
    "grounding.paths",
    "grounding.paths.chains",
    "grounding.paths.costs",
    "grounding.paths.kbest",
    "grounding.paths.walks",
    "grounding.solver",
    "grounding.solver.compact",
    "grounding.solver.config",
    "grounding.solver.prepare",
    "grounding.solver.program",
    "grounding.solver.support",
    "grounding.solver.solve",
    "grounding.learn",
    "grounding.learn.least_squares",
    "grounding.learn.embedding",
    "grounding.learn.kge",
    "grounding.learn.linkpred",
    "grounding.learn.onevsall",
    "grounding.learn.reciprocal",
)

# The upper floors' public names that implement a published method, equation or algorithm.
# Left out: plumbing (records, protocols, encoders, caches, errors, prompts), the package's own
# baselines (FlatPlanner, HeuristicPlanner), and structural_tags, whose only source (the gated
# GNN retriever's write-up) has no published title or year.
UPPER_FLOOR_NAMES = {
    "grounding.language.lexical": ("BM25",),
    "grounding.language.linking": ("AnswerLinker",),
    "grounding.retrieval.pcr": ("PCR",),
    "grounding.retrieval.soft_pcr": ("SoftPCR",),
    "grounding.retrieval.metrics": (
        "relevance_at_k",
        "structural_consistency",
        "distance_penalty",
        "evaluate_retrieval",
        "answer_recall_at_k",
    ),
    "grounding.retrieval.baselines": ("VectorRetriever", "BM25Retriever", "HybridRetriever"),
    "grounding.retrieval.rerank": (
        "dependency_score",
        "graph_agreement",
        "embedding_agreement",
        "dependency_rerank",
    ),
    "grounding.retrieval.community": ("Communities", "CommunityRetriever", "LLMSummarizer"),
    "grounding.retrieval.linking": ("EntityLinker",),
    "grounding.retrieval.hyperedge_search": (
        "HypergraphIndex",
        "ewo",
        "beam_search",
        "path_answers",
        "target_hyperedges",
        "plan_context",
        "hypergraphrag",
        "LLMRelevance",
    ),
    "grounding.retrieval.learned.features": ("dde", "shortest_path_labels", "gold_facts"),
    "grounding.retrieval.learned.gnn": ("GNNConfig", "logits", "dirichlet_energy"),
    "grounding.retrieval.learned.retriever": ("TripleRetriever",),
    "grounding.retrieval.learned.schedule": ("RetrieverTrainConfig",),
    "grounding.retrieval.learned.candidates": ("QuestionCandidates",),
    "grounding.plans.dag": ("Plan", "plan_from_decomposition"),
    "grounding.plans.planners": (
        "TemplatePlanner",
        "PredictedPathPlanner",
        "LLMPlanner",
        "HypergraphTemplatePlanner",
    ),
    "grounding.prior.answerer": ("KGEAnswerer",),
    "grounding.qa.decomposed": ("PankRAG",),
    "grounding.qa.grounded": ("GroundedQA", "grounding_problem"),
    "grounding.qa.hypergraph_reasoning": ("PRoH",),
    "grounding.qa.metrics": ("risk_coverage", "expected_calibration_error"),
}

PAPER_RESULT = re.compile(
    r"Eqs?\. \(\d+|Props?\. \d+|Thm\. \d+|Theorem \d+|Proposition \d+|Axioms? \d+"
    r"|Def\. \d+|Definition \d+|Cor\. \d+|Corollary \d+"
)
YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b|\bn\.d\.")
QUOTED_TITLE = re.compile(r'"[^"]{3,}"')


def references_section(doc: str | None) -> str | None:
    """The body of the docstring's ``References:`` section, or ``None`` without one."""
    if not doc:
        return None
    lines = inspect.cleandoc(doc).splitlines()
    for i, line in enumerate(lines):
        if line.rstrip() == "References:":
            body = []
            for rest in lines[i + 1 :]:
                if rest.strip() and not rest[:1].isspace():
                    break  # the next section (or text) at the section's indent
                body.append(rest)
            return "\n".join(body).strip()
    return None


def reference_problems(module: types.ModuleType) -> list[str]:
    """``module.name: why`` for each public callable or class of ``module`` whose docstring
    cites a paper result but lacks a References section with a quoted title and a year."""
    problems = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if not (callable(obj) or inspect.isclass(obj)):
            continue
        doc = getattr(obj, "__doc__", None)
        if not isinstance(doc, str) or not PAPER_RESULT.search(doc):
            continue
        where = f"{module.__name__}.{name}"
        problems += _section_problems(
            where, references_section(doc), "cites a paper result but has no References section"
        )
    return problems


def required_reference_problems(module: types.ModuleType, names) -> list[str]:
    """``module.name: why`` for each of ``names`` that is not public in ``module`` or whose
    docstring lacks a References section with a quoted title and a year."""
    problems = []
    for name in names:
        where = f"{module.__name__}.{name}"
        if name not in getattr(module, "__all__", ()):
            problems.append(f"{where}: not in the module's __all__")
            continue
        doc = getattr(getattr(module, name), "__doc__", None)
        problems += _section_problems(where, references_section(doc), "has no References section")
    return problems


def _section_problems(where: str, section: str | None, missing: str) -> list[str]:
    """What a References section lacks: itself (``missing``), a year, a quoted title."""
    if not section:
        return [f"{where}: {missing}"]
    out = []
    if not YEAR.search(section):
        out.append(f"{where}: its References section names no year")
    if not QUOTED_TITLE.search(section):
        out.append(f"{where}: its References section quotes no title")
    return out


def _citing_names(module: types.ModuleType) -> list[str]:
    return [
        name
        for name in getattr(module, "__all__", ())
        if (callable(getattr(module, name)) or inspect.isclass(getattr(module, name)))
        and isinstance(getattr(getattr(module, name), "__doc__", None), str)
        and PAPER_RESULT.search(getattr(module, name).__doc__)
    ]


@pytest.mark.parametrize("module_name", CORE_MODULES)
def test_public_names_citing_a_paper_result_have_references(module_name):
    module = importlib.import_module(module_name)
    assert reference_problems(module) == []


@pytest.mark.parametrize("module_name", sorted(UPPER_FLOOR_NAMES))
def test_upper_floor_methods_have_references(module_name):
    module = importlib.import_module(module_name)
    assert required_reference_problems(module, UPPER_FLOOR_NAMES[module_name]) == []


def test_the_check_is_not_vacuous():
    citing = {
        id(getattr(mod, name))
        for mod in map(importlib.import_module, CORE_MODULES)
        for name in _citing_names(mod)
    }
    assert len(citing) >= 100


def _fake_module(doc: str) -> types.ModuleType:
    module = types.ModuleType("fake_core")

    def fake(x):
        return x

    fake.__doc__ = doc
    module.fake = fake
    module.__all__ = ["fake"]
    return module


def test_the_check_fails_without_references():
    module = _fake_module("""The quantity of Eq. (3).

    Returns:
        The input.
    """)
    assert reference_problems(module) == [
        "fake_core.fake: cites a paper result but has no References section"
    ]


def test_the_check_fails_without_a_year_or_a_title():
    no_year = _fake_module("""Prop. 2.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence": Prop. 2.
    """)
    assert reference_problems(no_year) == ["fake_core.fake: its References section names no year"]
    no_title = _fake_module("""Thm. 3.

    References:
        Li & Song, 2020: Thm. 3.
    """)
    assert reference_problems(no_title) == [
        "fake_core.fake: its References section quotes no title"
    ]


def test_the_check_passes_a_complete_section_and_stops_at_the_next_section():
    module = _fake_module("""Eq. (7).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (7).

    Example:
        >>> 1
        1
    """)
    assert reference_problems(module) == []
    assert references_section(module.fake.__doc__).endswith("Eq. (7).")
    uncited = _fake_module("An identity with no paper result.")
    assert reference_problems(uncited) == []


def test_the_upper_floor_check_fails_without_references():
    module = _fake_module("""PankRAG's combined score.

    Returns:
        The input.
    """)
    assert required_reference_problems(module, ["fake", "missing"]) == [
        "fake_core.fake: has no References section",
        "fake_core.missing: not in the module's __all__",
    ]
    module.fake.__doc__ = """Sec. 2.3.1.

    References:
        Li et al., "PankRAG: Enhancing Graph Retrieval", 2025.
    """
    assert required_reference_problems(module, ["fake"]) == []
    module.fake.__doc__ = module.fake.__doc__.replace("2025", "(no date)")
    assert required_reference_problems(module, ["fake"]) == [
        "fake_core.fake: its References section names no year"
    ]
