"""A model file is untrusted input (:class:`grounding.language.LocalLM` on crafted GGUF files):
its chat template runs in jinja2's immutable sandbox under a budget, every failure to read it
names the file and what is wrong, a replaced file is read again, a call's work is bounded (beam
width, answers, the model's context), and one question the tokenizer cannot read fails alone.
Tiny GGUF files (``tests/_gguf.py``, written with the ``gguf`` package) keep it fast."""

from __future__ import annotations

import os

import numpy as np
import pytest
from _gguf import CHATML, write_tiny_gguf

pytest.importorskip("gguf", reason="the grounding[llm] extra is not installed")

from grounding.language import LocalLM  # noqa: E402
from grounding.language.local import MAX_ANSWERS, MAX_BEAM  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return LocalLM(write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf"),
                   max_answer_tokens=3)  # fmt: skip


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ cycler.__init__.__globals__.os.mkdir(target) }}", "unsafe"),
        ("{{ ().__class__.__base__.__subclasses__() }}", "unsafe"),
        ("{% for i in range(10**12) %}x{% endfor %}", "with 1000000000000"),
        (
            "{% set l = range(1000) %}{% for a in l %}{% for b in l %}{% for c in l %}{% endfor %}"
            "{% endfor %}{% endfor %}",
            "runs past 200,000 steps",
        ),
        ("{{ 'x' * 1000000000 }}", "repeats a sequence"),
        ("{{ 'x'.ljust(10**9) }}", "with 1000000000"),
        (
            "{% for i in range(50) %}{{ 'y' * 99999 }}{% endfor %}",
            "more than 1,000,000 characters",
        ),
        ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "recurses too deep"),
        ("{{ raise_exception('system messages are not supported') }}", "refuses the conversation"),
        ("{% for %}", "does not compile"),
    ],
)
def test_a_hostile_chat_template_is_refused_by_name_and_does_nothing(tmp_path, template, message):
    target = tmp_path / "made_by_the_template"
    path = write_tiny_gguf(
        tmp_path / "evil.gguf", template=template.replace("target", repr(str(target)))
    )
    with pytest.raises(ValueError, match=message) as err:
        LocalLM(path)  # the template is rendered once when the model is loaded
    assert str(path) in str(err.value) and not target.exists()


@pytest.mark.parametrize(
    ("defect", "message"),
    [
        (dict(arch="gpt2"), "architecture 'gpt2'"),
        (dict(drop="blk.0.attn_q.weight"), "no tensor 'blk.0.attn_q.weight'"),
        (dict(drop="output_norm.weight"), "no tensor 'output_norm.weight'"),
        (
            dict(reshape="blk.0.ffn_down.weight"),
            r"'blk.0.ffn_down.weight' has shape \[16, 8\] where the header implies \[8, 16\]",
        ),
        (dict(reshape="blk.0.attn_norm.weight"), r"'blk.0.attn_norm.weight' has shape \[16\]"),
        (dict(nan_in="blk.0.attn_k.weight"), "'blk.0.attn_k.weight' holds non-finite weights"),
        (dict(nan_in="token_embd.weight"), "'token_embd.weight' holds non-finite weights"),
    ],
)
def test_a_broken_model_file_is_refused_naming_the_file_and_the_defect(tmp_path, defect, message):
    path = write_tiny_gguf(tmp_path / "m.gguf", **defect)
    with pytest.raises(ValueError, match=message) as err:
        LocalLM(path)
    assert str(err.value).startswith(str(path))


def test_a_file_that_is_not_a_whole_gguf_file_is_refused_by_name(tmp_path):
    data = write_tiny_gguf(tmp_path / "good.gguf").read_bytes()
    for name, blob, message in (
        ("empty", b"", "not a GGUF file"),
        ("zip", b"PK\x03\x04" + data[4:], "not a GGUF file"),
        ("truncated", data[: len(data) // 2], "truncated or corrupt"),
        ("header_only", data[:64], "truncated or corrupt"),
    ):
        path = tmp_path / f"{name}.gguf"
        path.write_bytes(blob)
        with pytest.raises(ValueError, match=message) as err:
            LocalLM(path)
        assert str(path) in str(err.value), name
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        LocalLM(tmp_path / "missing.gguf")


def test_a_model_file_replaced_on_disk_is_read_again(tmp_path):
    path = write_tiny_gguf(tmp_path / "m.gguf", seed=0)
    first = LocalLM(path)
    before, digest = first.score("What is it?", ["ab"]), first.sha256
    assert LocalLM(path).sha256 == digest  # the same file: read once
    write_tiny_gguf(path, seed=1)  # replaced: other weights under the same name
    second = LocalLM(path)
    assert second.sha256 != digest and second.size == path.stat().st_size
    assert not np.allclose(second.score("What is it?", ["ab"]), before)


def test_a_call_is_bounded_by_the_beam_the_answers_and_the_context(tmp_path, tiny):
    with pytest.raises(ValueError, match=f"k must be at most {MAX_BEAM}"):
        tiny.propose("What?", MAX_BEAM + 1)
    for k in (0, True, 2.0):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            tiny.propose("What?", k)
    with pytest.raises(ValueError, match=f"1025 answers \\(at most {MAX_ANSWERS}\\)"):
        tiny.score("What?", ["a"] * (MAX_ANSWERS + 1))
    short = LocalLM(write_tiny_gguf(tmp_path / "short.gguf", context=80), max_answer_tokens=3)
    assert short.context == 80
    ok = short.score("Q?", ["a"])  # fits
    assert ok.shape == (1,)
    with pytest.raises(
        ValueError, match=r"question 1 .* exceed the context of short.gguf \(80 tokens\)"
    ):
        short.score_batch(["Q?", "Q" * 40], [["a"], ["a"]])
    with pytest.raises(ValueError, match="exceed the context"):
        short.score("Q?", ["a" * 40])
    with pytest.raises(ValueError, match="exceed the context"):
        short.propose_batch(["Q?", "Q" * 40], 2)


def test_bare_strings_bytes_and_unreadable_text_are_refused_by_name(tiny):
    with pytest.raises(TypeError, match="questions must be a sequence of str, not a single str"):
        tiny.propose_batch("What?", 2)
    with pytest.raises(TypeError, match=r"questions\[0\] must be a str, got bytes"):
        tiny.score_batch([b"What?"], [["a"]])
    with pytest.raises(TypeError, match=r"answers\[0\] must be a sequence of str"):
        tiny.score("What?", "ab")
    with pytest.raises(TypeError, match="a question must be a str"):
        tiny.prompt(b"What?")
    with pytest.raises(
        ValueError, match=r"question 0 \('What\\ud800\?'\): the tokenizer cannot read"
    ):
        tiny.score("What\ud800?", ["a"])
    with pytest.raises(TypeError, match="examples must be"):
        LocalLM(tiny.path, examples=[("q", b"a")])


def test_one_question_the_tokenizer_cannot_read_fails_alone_in_a_batch_of_fifty(tiny):
    """Fifty questions through GroundedQA with the in-process model, one holding a lone
    surrogate: that question fails with its reason, the other 49 are answered as if it were
    not there (the model runs the batch, then the failing one alone)."""
    from grounding import GroundingConfig, TypedGraph
    from grounding.language import AnswerLinker
    from grounding.prior import LocalCandidateModel
    from grounding.qa import GroundedQA
    from grounding.query import BlindQuestion
    from grounding.retrieval import PCR, TextIndex

    graph = TypedGraph.from_triples([("t", "r", "ab"), ("t", "r", "b")])
    model = LocalCandidateModel(tiny, AnswerLinker(graph.entities), pool=lambda q: ["ab", "b"])
    qs = [BlindQuestion(f"What does t reach {i}?", "t") for i in range(50)]
    qs[23] = BlindQuestion("What does t reach \ud800?", "t")
    qa = GroundedQA(model, PCR(TextIndex(graph), max_hops=1), GroundingConfig(lam=1.0, kappa=1.0),
                    k_candidates=2, k_nodes=3)  # fmt: skip
    outs = qa.answer_batch(qs)
    assert len(outs) == 50 and outs[23].result is None
    assert "the tokenizer cannot read" in outs[23].reason
    assert all(o.reason is None and o.result is not None for j, o in enumerate(outs) if j != 23)
    model.cache_clear()
    alone = qa.answer_batch(qs[:23] + qs[24:])
    for a, b in zip(alone, outs[:23] + outs[24:]):
        np.testing.assert_allclose(a.result.log_posterior, b.result.log_posterior, atol=1e-6)


def test_the_template_budget_leaves_a_tracer_in_place(tiny):
    """Rendering under the budget restores whatever trace function was set (a debugger's or a
    coverage tool's)."""
    import sys

    def mine(frame, event, arg):
        return None

    sys.settrace(mine)
    try:
        tiny.prompt("What?")
        assert sys.gettrace() is mine
    finally:
        sys.settrace(None)


def test_the_default_template_renders_as_jinja_renders_it(tiny):
    """The sandbox changes nothing for a well-behaved template: the same prompt as jinja2's
    plain environment gives."""
    import jinja2

    want = (
        jinja2.Environment()
        .from_string(CHATML)
        .render(messages=tiny._messages("What?"), add_generation_prompt=True)
    )
    assert tiny.prompt("What?") == want
    assert os.path.basename(str(tiny.path)) == "tiny.gguf"
