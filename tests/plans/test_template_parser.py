"""The template parser (grounding.plans.template_parser) against the benchmark's own writer:
it reads every chain back off every templated text, and nothing off a text of another form."""

from __future__ import annotations

import pytest

from grounding.datasets import kgqa_benchmark
from grounding.plans import TemplateChainParser
from grounding.query import BlindQuestion, blind


@pytest.mark.parametrize("name", ["codex-m", "umls", "codex-s", "nations"])
def test_the_parser_reads_every_chain_back_off_the_templated_texts(name):
    bench = kgqa_benchmark(name, questions_per_hop=100)
    parser = TemplateChainParser(
        bench.relation_labels, dict(zip(bench.kg.entities, bench.kg.node_texts))
    )
    questions = bench.questions
    predicted = parser.predict([blind(q) for q in questions], k=5)
    for q, got in zip(questions, predicted):
        assert got and got[0] == (q.chain, 1.0), (q.text, q.chain, got)


def test_the_parser_reads_nothing_off_other_phrasings():
    parser = TemplateChainParser({"capital": "capital", "treats": "treats"}, {"fr": "France"})
    assert parser.parse("What is the capital of France?", "fr") == [("capital",)]
    for text in (
        "Which city is the capital of France?",  # another opening
        "What is France's capital?",  # another phrase for the relation
        "What is the capital of Spain?",  # another topic text
        "What is the capital of the capital of the capital of the capital of France?",  # 4 hops
    ):
        assert parser.parse(text, "fr") == [], text
    [[]] = parser.predict([BlindQuestion("Name the capital of France.", "fr")])
