"""Question plans: a question in, a sub-question DAG out.

- :mod:`~grounding.plans.dag`: :class:`SubQuestion`, :class:`Plan` (validation, Hasse
  reduction, topological levels) and :func:`plan_from_decomposition`;
- :mod:`~grounding.plans.planners`: the planners behind one protocol
  (``plan(question) -> Plan``): templated (binary KG and hypergraph), flat, heuristic free
  text, and any OpenAI-compatible LLM;
- :mod:`~grounding.plans.relation_chains`: relation chains predicted from a blind question's
  text by prototypes of the training questions (:class:`RelationChainPredictor`);
- :mod:`~grounding.plans.composed_chains`: chains composed relation by relation by a beam
  over the graph (:class:`ComposedChainPredictor`), which can propose chains no training
  question used;
- :mod:`~grounding.plans.chain_reader`: chains read from the question's words
  (:class:`ChainReader`: relation mentions, their order and direction read from position,
  checked against the graph) and the label-lookup baseline a reader is measured against
  (:class:`LabelLookup`);
- :mod:`~grounding.plans.chain_classifier`: chains classified from the question's word
  n-grams and its topic's relations (:class:`ChainClassifier`, softmax regression), and the
  split that holds out whole wordings for its validation (:func:`wording_split`);
- :mod:`~grounding.plans.template_parser`: the templated benchmark's chains read back off
  its texts (:class:`TemplateChainParser`), exact on the wordings it knows and on none other;
- :mod:`~grounding.plans.role_chains`: role chains predicted from a blind hypergraph question
  (:class:`RoleChainPredictor`) and the plans built on them (:class:`RoleChainPlanner`).
"""

from grounding.plans.chain_classifier import ChainClassifier, wording_split
from grounding.plans.chain_reader import ChainReader, LabelLookup
from grounding.plans.composed_chains import ComposedChainPredictor
from grounding.plans.dag import Plan, SubQuestion, plan_from_decomposition
from grounding.plans.planners import (
    FlatPlanner,
    HeuristicPlanner,
    HypergraphTemplatePlanner,
    LLMPlanner,
    PlanError,
    Planner,
    PredictedPathPlanner,
    TemplatePlanner,
)
from grounding.plans.relation_chains import RelationChainPredictor, chain_accuracy
from grounding.plans.role_chains import RoleChainPlanner, RoleChainPredictor, role_chain_accuracy
from grounding.plans.template_parser import TemplateChainParser

__all__ = [
    "Plan",
    "SubQuestion",
    "plan_from_decomposition",
    "Planner",
    "PlanError",
    "TemplatePlanner",
    "HypergraphTemplatePlanner",
    "FlatPlanner",
    "PredictedPathPlanner",
    "HeuristicPlanner",
    "LLMPlanner",
    "RelationChainPredictor",
    "ComposedChainPredictor",
    "ChainReader",
    "LabelLookup",
    "ChainClassifier",
    "wording_split",
    "TemplateChainParser",
    "chain_accuracy",
    "RoleChainPredictor",
    "RoleChainPlanner",
    "role_chain_accuracy",
]
