"""Datasets: the Lou Seal running example of the paper and a general TSV triple loader."""

from grounding.datasets.lou_seal import (
    ANTISYMMETRIC,
    CANDIDATES,
    FUNCTIONAL,
    STAND_IN_PRIOR,
    ClaimChain,
    Grounded,
    LouSealExample,
    fit_translation_embeddings,
    load_triples,
    lou_seal,
    lou_seal_evidence,
    lou_seal_example,
)

__all__ = [
    "load_triples",
    "lou_seal",
    "lou_seal_example",
    "lou_seal_evidence",
    "fit_translation_embeddings",
    "ClaimChain",
    "Grounded",
    "LouSealExample",
    "CANDIDATES",
    "STAND_IN_PRIOR",
    "FUNCTIONAL",
    "ANTISYMMETRIC",
]
