"""MetaQA as shipped: the knowledge base (full, the random half, any seeded fraction), the dev and
test questions with their types, checksums checked, and malformed input named by file and
line. The counts come from the data's README (the files as released), not from the loader."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pytest

from grounding.datasets import load_metaqa, metaqa_chain, metaqa_kb, read_metaqa_questions
from grounding.datasets import metaqa as module
from grounding.query import BlindQuestion

DATA = Path(module.__file__).parent / "data" / "metaqa"
#: Lines per file, as the data's README lists them.
QUESTIONS = {("dev", 1): 9992, ("dev", 2): 14872, ("dev", 3): 14274,
             ("test", 1): 9947, ("test", 2): 14872, ("test", 3): 14274}  # fmt: skip


def test_the_knowledge_base_and_its_half():
    full, half = metaqa_kb("full"), metaqa_kb("half")
    assert len(full) == len(set(full)) == 129_503 and len(half) == len(set(half)) == 64_751
    assert set(half) <= set(full)
    assert {r for _, r, _ in full} == set(module.METAQA_RELATIONS)
    # the shipped half is the fraction 0.5 of the full base drawn with seed 0
    assert set(metaqa_kb(0.5, seed=0)) == set(half)
    quarter = metaqa_kb(0.25, seed=1)
    assert len(set(quarter)) == int(0.25 * 129_503) and set(quarter) <= set(full)
    assert quarter == metaqa_kb(0.25, seed=1) != metaqa_kb(0.25, seed=2)
    assert set(metaqa_kb(1.0)) == set(full)


@pytest.mark.parametrize(("split", "hops"), list(QUESTIONS))
def test_questions_per_hop_with_their_types(split, hops):
    qs = load_metaqa(hops, split)
    assert len(qs) == QUESTIONS[split, hops]
    for q in qs[:: max(1, len(qs) // 500)]:
        assert f"[{q.topic}]" in q.text and q.answers and q.hops == hops
        # a type names the hops' entity kinds: hops + 1 of them
        assert q.qtype.count("_to_") == hops, q.qtype
    assert len({q.id for q in qs}) == len(qs)


def test_every_one_hop_topic_and_answer_is_in_the_full_base():
    names = {x for h, _, t in metaqa_kb("full") for x in (h, t)}
    for q in load_metaqa(1, "test"):
        assert q.topic in names and set(q.answers) <= names, q


def test_a_system_sees_the_text_and_topic_only():
    q = load_metaqa(2, "test")[0]
    b = q.blind()
    assert isinstance(b, BlindQuestion) and (b.text, b.topic) == (q.text, q.topic)
    assert not hasattr(b, "answers")


def test_any_file_in_the_question_format(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("who directed [Heat]\tMichael Mann\nwhat genre is [Heat]\n\n", encoding="utf-8")
    qs = read_metaqa_questions(f, hops=1)
    assert [(q.topic, q.answers, q.hops) for q in qs] == [
        ("Heat", ("Michael Mann",), 1),
        ("Heat", (), 1),
    ]
    assert qs[0].id == f"{f}:1"
    g = tmp_path / "mine.txt.gz"
    g.write_bytes(gzip.compress(f.read_bytes()))
    assert [q.text for q in read_metaqa_questions(g)] == [q.text for q in qs]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"who directed Heat\tMichael Mann\n", "line 1: a question names its topic in one pair"),
        (b"ok [Heat]\tx\n[A] and [B]\ty\n", "line 2: a question names its topic in one pair"),
        (b"who directed [Heat]\tMichael Mann||Someone\n", "line 1: the answer '' is empty"),
        (b"who directed [ Heat]\tx\n", "line 1: the topic ' Heat' has leading"),
        (b"who directed [Heat]\t\xff\n", "line 1: not UTF-8"),
        (b"\n\n", "no question"),
    ],
)
def test_a_malformed_question_file_is_named_with_its_line(tmp_path, content, match):
    f = tmp_path / "bad.txt"
    f.write_bytes(content)
    with pytest.raises(ValueError, match=match) as err:
        read_metaqa_questions(f)
    assert "bad.txt" in str(err.value)


def test_bad_arguments():
    with pytest.raises(ValueError, match="hops must be 1, 2 or 3"):
        load_metaqa(4)
    with pytest.raises(ValueError, match="split must be"):
        load_metaqa(1, "train")
    for kb in ("quarter", 0.0, 1.5, float("nan"), True):
        with pytest.raises(ValueError, match="kb must be"):
            metaqa_kb(kb)
    with pytest.raises(ValueError, match="seed"):
        metaqa_kb(0.5, seed=-1)


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """A copy of the shipped folder the loader reads instead (its caches emptied around)."""
    root = tmp_path / "metaqa"
    shutil.copytree(DATA, root)
    caches = (module._sums, module._kb_file, module._questions)
    for c in caches:
        c.cache_clear()
    monkeypatch.setattr(module, "_root", lambda: root)
    yield root
    for c in caches:
        c.cache_clear()


def _rewrite(root: Path, name: str, text: str, *, fix_sum: bool) -> None:
    raw = gzip.compress(text.encode("utf-8"))
    (root / name).write_bytes(raw)
    if fix_sum:
        sums = (root / "SHA256SUMS").read_text(encoding="utf-8").split("\n")
        digest = hashlib.sha256(raw).hexdigest()
        sums = [f"{digest}  ./{name}" if s.endswith(f"./{name}") else s for s in sums]
        (root / "SHA256SUMS").write_text("\n".join(sums), encoding="utf-8")


def test_a_damaged_file_fails_its_checksum(copy):
    _rewrite(copy, "kb_half.txt.gz", "Heat|directed_by|Michael Mann\n", fix_sum=False)
    with pytest.raises(ValueError, match=r"metaqa/kb_half.txt.gz: SHA-256 differs"):
        metaqa_kb("half")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Heat|directed_by|Michael Mann\nHeat|directed_by\n", "line 2: expected subject"),
        ("Heat|directed_by|Michael Mann\nHeat|budget|1\n", "line 2: unknown relation 'budget'"),
        ("Heat|directed_by| Michael Mann\n", "line 1: the name ' Michael Mann' has leading"),
    ],
)
def test_a_malformed_base_line_is_named(copy, text, match):
    _rewrite(copy, "kb.txt.gz", text, fix_sum=True)
    with pytest.raises(ValueError, match=f"metaqa/kb.txt.gz, {match}"):
        metaqa_kb("full")


def test_questions_and_types_must_pair_up(copy):
    _rewrite(copy, "1-hop/qa_dev_qtype.txt.gz", "actor_to_movie\n", fix_sum=True)
    with pytest.raises(ValueError, match="more questions than question types"):
        load_metaqa(1, "dev")


def test_the_chain_a_question_type_names():
    assert metaqa_chain("movie_to_director") == ("directed_by",)
    assert metaqa_chain("tag_to_movie") == ("has_tags^-1",)
    assert metaqa_chain("movie_to_writer_to_movie_to_year") == (
        "written_by",
        "written_by^-1",
        "release_year",
    )
    for bad in ("movie", "actor_to_director", "movie_to_movie", "movie_to_budget", None):
        with pytest.raises(ValueError, match="not a MetaQA question type"):
            metaqa_chain(bad)


def test_the_chain_reaches_the_answers_in_the_full_base():
    """Walking a 1-hop question's chain from its topic over the full base reaches its answers
    (the README: every 1-hop answer is the topic's neighbour by the question's relation)."""
    adj: dict = {}
    for h, r, t in metaqa_kb("full"):
        adj.setdefault((h, r), set()).add(t)
        adj.setdefault((t, r + "^-1"), set()).add(h)
    qs = load_metaqa(1, "test")
    reached = [set(q.answers) <= adj.get((q.topic, q.chain[0]), set()) for q in qs]
    assert sum(reached) >= 0.999 * len(qs)


def test_the_graph_has_every_triple_both_ways_over_the_full_vocabulary():
    from grounding.datasets import metaqa_entities, metaqa_graph, metaqa_kb

    full, half = metaqa_graph("full"), metaqa_graph("half")
    assert full.entities == half.entities == metaqa_entities()
    assert len(metaqa_entities()) == 42_856 and list(metaqa_entities()) == sorted(metaqa_entities())
    assert full.n_edges == 2 * len(metaqa_kb("full")) and half.n_edges == 2 * len(metaqa_kb("half"))
    h, r, t = metaqa_kb("half")[0]
    assert half.has_triple((h, r, t)) and half.has_triple((t, r + "^-1", h))
    assert metaqa_graph("half") is half  # memoized
    for q in load_metaqa(3, "dev")[:50]:
        assert all(rel in full.relations for rel in q.chain)
