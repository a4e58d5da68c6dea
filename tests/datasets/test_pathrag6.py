"""PathRAG-6 (shipped real data), its seeded reconstruction, and KG retrieval benchmarks."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from experiments._pathrag6_reconstruction import generate_pathrag6
from grounding.datasets import (
    RetrievalBenchmark,
    kg_retrieval_benchmark,
    load_kg,
    load_pathrag6,
)
from grounding.datasets.pathrag6 import PATHRAG6_DOMAINS

SHIPPED = Path(str(resources.files("grounding.datasets") / "data" / "pathrag6"))
ORIGINAL = Path("/work/shared/data/pathrag6")
DATA_FILES = [
    "LICENSE",
    "queries.json",
    *(f"{d}/{f}" for d in PATHRAG6_DOMAINS for f in ("nodes.json", "edges.json")),
]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def real() -> dict[str, RetrievalBenchmark]:
    return load_pathrag6()


# ---------------------------------------------------------------------------- shipped data


def test_shipped_data_loads(real):
    assert list(real) == list(PATHRAG6_DOMAINS)
    for domain, b in real.items():
        assert b.name == f"pathrag6/{domain}"
        assert "real" in b.source and "reconstruction" not in b.source
        assert b.graph.n_nodes == 30 and b.graph.n_edges == 60
        assert b.graph.relations == ("related_to",)
        for q in b.queries:
            assert q.anchor is not None and b.graph.has_entity(q.anchor)
            assert q.relevant and all(b.graph.has_entity(r) for r in q.relevant)
            assert q.text and q.id.startswith(domain)
    assert sum(len(b.queries) for b in real.values()) == 30
    assert len(real["tech"].queries) == 20
    assert all(len(real[d].queries) == 2 for d in PATHRAG6_DOMAINS[1:])
    ids = [q.id for b in real.values() for q in b.queries]
    assert len(set(ids)) == len(ids)


def test_shipped_multigraph_quirks_are_kept(real):
    tech, bio = real["tech"].graph, real["bio"].graph
    assert len(set(zip(tech.head.tolist(), tech.tail.tolist()))) == 52  # 52 distinct of 60
    loops = np.flatnonzero(bio.head == bio.tail)
    assert len(loops) == 1 and bio.entities[bio.head[loops[0]]] == "bio_node_029"
    assert sum(int((b.graph.head == b.graph.tail).sum()) for b in real.values()) == 1


def test_single_domain_and_unknown_domain(real):
    one = load_pathrag6("bio")
    assert list(one) == ["bio"] and one["bio"].queries == real["bio"].queries
    with pytest.raises(ValueError, match="unknown domain"):
        load_pathrag6("physics")


def test_shipped_files_match_the_release():
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    listed = dict(
        (name, digest) for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M)
    )
    assert sorted(listed) == sorted(DATA_FILES)
    assert (SHIPPED / "LICENSE").read_text().startswith("MIT License")
    assert "## In this package" in readme and "load_pathrag6" in readme
    for name in DATA_FILES:
        assert _sha(SHIPPED / name) == listed[name], name
    if ORIGINAL.is_dir():  # the read-only source of the copy, where present
        for name in DATA_FILES:
            assert _sha(SHIPPED / name) == _sha(ORIGINAL / name), name
        original = (ORIGINAL / "README.md").read_bytes()
        assert (SHIPPED / "README.md").read_bytes().startswith(original)
        assert hashlib.sha256(original).hexdigest() in readme


def test_root_override_reads_a_user_copy(tmp_path):
    shutil.copytree(SHIPPED, tmp_path / "copy")
    b = load_pathrag6("tech", root=tmp_path / "copy")["tech"]
    assert b.source.startswith("PathRAG-6 format") and str(tmp_path) in b.source
    assert b.queries == load_pathrag6("tech")["tech"].queries


# ---------------------------------------------------------------------------- malformed files


def _tiny(root: Path) -> None:
    """A minimal valid tech domain: three nodes, two edges, two queries."""
    nodes = [{"id": f"n{i}", "text": f"node {i}", "metadata": {"domain": "tech"}} for i in range(3)]
    edges = [{"source": "n0", "target": "n1", "weight": 1.0}, {"source": "n1", "target": "n2"}]
    queries = {
        "tech": [
            {"id": "q1", "anchor": "n0", "query": "first", "relevant_nodes": ["n1"]},
            {"id": "q2", "anchor": None, "query": "second", "relevant_nodes": ["n2", "n0"]},
        ]
    }
    (root / "tech").mkdir(parents=True, exist_ok=True)
    for name, data in (("tech/nodes.json", nodes), ("tech/edges.json", edges)):
        (root / name).write_text(json.dumps(data, indent=2))
    (root / "queries.json").write_text(json.dumps(queries, indent=2))


def _edit(root: Path, name: str, fn) -> Path:
    path = root / name
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data, indent=2))
    return path


def test_tiny_valid_copy_loads(tmp_path):
    _tiny(tmp_path)
    b = load_pathrag6("tech", root=tmp_path)["tech"]
    assert b.graph.entities == ("n0", "n1", "n2") and b.graph.n_edges == 2
    assert [q.anchor for q in b.queries] == ["n0", None]
    assert b.queries[1].relevant == ("n2", "n0")


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text().splitlines()
    return 1 + next(i for i, line in enumerate(lines) if needle in line)


def test_broken_json_names_file_and_line(tmp_path):
    _tiny(tmp_path)
    path = tmp_path / "tech" / "edges.json"
    text = path.read_text().splitlines()
    text[4] = text[4] + ","  # a trailing comma inside the first edge object
    path.write_text("\n".join(text))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}:\d+: invalid JSON") as e:
        load_pathrag6("tech", root=tmp_path)
    assert re.search(rf"{re.escape(str(path))}:(5|6):", str(e.value))


@pytest.mark.parametrize(
    "name, edit, pattern, entry",
    [
        ("tech/nodes.json", lambda d: d[1].pop("text"), r"node 1: missing key 'text'", 1),
        (
            "tech/nodes.json",
            lambda d: d[2]["metadata"].update(domain="bio"),
            r"node 2: belongs to domain 'bio'",
            2,
        ),
        (
            "tech/edges.json",
            lambda d: d[1].update(target="nowhere"),
            r"edge 1: names an unknown node 'nowhere'",
            1,
        ),
        (
            "tech/edges.json",
            lambda d: d[0].update(weight=2.0),
            r"edge 0: weight 2.0: an unweighted graph",
            0,
        ),
        (
            "queries.json",
            lambda d: d["tech"][1].update(id="q1"),
            r"tech query 1: repeats the query id 'q1'",
            1,
        ),
        (
            "queries.json",
            lambda d: d["tech"][0].update(anchor="ghost"),
            r"tech query 0: anchor 'ghost' is not a node",
            0,
        ),
        (
            "queries.json",
            lambda d: d["tech"][1]["relevant_nodes"].append("ghost"),
            r"tech query 1: relevant node 'ghost' is not a node",
            1,
        ),
        (
            "queries.json",
            lambda d: d["tech"][0].update(query=7),
            r"tech query 0: 'query' must be str, got int",
            0,
        ),
    ],
)
def test_schema_errors_name_file_entry_and_line(tmp_path, name, edit, pattern, entry):
    _tiny(tmp_path)
    path = _edit(tmp_path, name, edit)
    with pytest.raises(ValueError, match=pattern) as e:
        load_pathrag6("tech", root=tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:")
    # the line named is the opening brace of the offending entry
    lines = path.read_text().splitlines()
    braces = [i + 1 for i, line in enumerate(lines) if line.strip() == "{"]
    if name == "queries.json":
        braces = braces[1:]  # the first brace opens the top-level object
    assert msg.startswith(f"{path}:{braces[entry]}: ")


def test_non_utf8_file_names_file_and_line(tmp_path):
    _tiny(tmp_path)
    path = tmp_path / "tech" / "nodes.json"
    text = path.read_text().replace("node 2", "caf\u00e9")
    path.write_bytes(text.encode("latin-1"))
    line = 1 + next(i for i, x in enumerate(path.read_bytes().split(b"\n")) if b"caf" in x)
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}:{line}: not UTF-8 text"):
        load_pathrag6("tech", root=tmp_path)


@pytest.mark.parametrize(
    "bad_id, why",
    [(" n0", "has leading or trailing whitespace"), ("n\x000", "holds the control character")],
)
def test_bad_node_id_is_blamed_on_its_node(tmp_path, bad_id, why):
    """A padded node id is an error at that node's entry (not at an edge naming the node)."""
    _tiny(tmp_path)
    path = _edit(tmp_path, "tech/nodes.json", lambda d: d[0].update(id=bad_id))
    line = _line_of(path, '"id": ' + json.dumps(bad_id)) - 1  # the entry's opening brace
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}:{line}: node 0: id .* {why}"):
        load_pathrag6("tech", root=tmp_path)


@pytest.mark.parametrize(
    "name, edit",
    [
        ("tech/nodes.json", lambda d: d[1].update(id=" n" * 5_000_000)),
        ("tech/nodes.json", lambda d: d[1]["metadata"].update(domain=["x"] * 1_000_000)),
        ("tech/edges.json", lambda d: d[1].update(target="n" * 5_000_000)),
        ("tech/edges.json", lambda d: d[1].update(weight=[2.0] * 1_000_000)),
        ("queries.json", lambda d: d["tech"][0].update(anchor="n" * 5_000_000)),
        ("queries.json", lambda d: d["tech"][0].update(relevant_nodes=[["n"] * 1_000_000])),
    ],
)
def test_schema_errors_quote_a_bounded_excerpt(tmp_path, name, edit):
    _tiny(tmp_path)
    path = _edit(tmp_path, name, edit)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}:\d+: ") as e:
        load_pathrag6("tech", root=tmp_path)
    assert len(str(e.value)) < 400 + len(str(path)), str(e.value)[:500]


def test_missing_domain_in_queries(tmp_path):
    _tiny(tmp_path)
    path = _edit(tmp_path, "queries.json", lambda d: d.update(bio=d.pop("tech")))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: no queries for domain 'tech'"):
        load_pathrag6("tech", root=tmp_path)


# ---------------------------------------------------------------------------- reconstruction


def test_reconstruction_shape_and_labels():
    gen = generate_pathrag6(seed=3)
    assert list(gen) == list(PATHRAG6_DOMAINS)
    for domain, b in gen.items():
        assert b.name == f"pathrag6-reconstruction/{domain}"
        assert b.source == "reconstruction (synthetic, seed=3)"
        g = b.graph
        assert g.n_nodes == 30 and g.n_edges == 60 and len(b.queries) == 20
        assert not np.any(g.head == g.tail)
        assert all(t for t in g.node_texts) and len({q.id for q in b.queries}) == 20
        for q in b.queries:
            assert q.anchor in q.relevant and all(g.has_entity(r) for r in q.relevant)


def test_reconstruction_relevant_nodes_are_one_topic():
    from experiments._pathrag6_reconstruction import _VOCAB

    for domain, b in generate_pathrag6(seed=0).items():
        names = [name for name, _ in _VOCAB[domain]]
        assert 10 <= len(names) <= 15
        for q in b.queries:
            shared = set(names)
            for r in q.relevant:
                shared &= {n for n in names if n in b.graph.node_texts[b.graph.entity_index(r)]}
            assert shared, q  # every relevant node names the query's topic
            others = set(b.graph.entities) - set(q.relevant)
            assert not any(
                shared <= {n for n in names if n in b.graph.node_texts[b.graph.entity_index(v)]}
                for v in others
            )


def test_reconstruction_is_deterministic_given_the_seed():
    a, b, c = generate_pathrag6(seed=7), generate_pathrag6(seed=7), generate_pathrag6(seed=8)
    for d in PATHRAG6_DOMAINS:
        assert a[d].graph.node_texts == b[d].graph.node_texts and a[d].queries == b[d].queries
        assert np.array_equal(a[d].graph.head, b[d].graph.head)
        assert np.array_equal(a[d].graph.tail, b[d].graph.tail)
    assert any(
        a[d].queries != c[d].queries or not np.array_equal(a[d].graph.head, c[d].graph.head)
        for d in PATHRAG6_DOMAINS
    )


def test_reconstruction_sizes_and_reachability_like_the_real_data():
    gen = generate_pathrag6(seed=0, n_nodes=12, n_edges=20, n_queries=5)
    assert all(b.graph.n_nodes == 12 and b.graph.n_edges == 20 for b in gen.values())
    assert all(len(b.queries) == 5 for b in gen.values())
    # default size: some, not all, relevant nodes are reachable from the anchor (real: 54%)
    reach = []
    for b in generate_pathrag6(seed=0).values():
        for q in b.queries:
            r = set(b.graph.reachable(b.graph.entity_index(q.anchor)).tolist())
            reach += [b.graph.entity_index(v) in r for v in q.relevant]
    assert 0.4 < np.mean(reach) < 0.75
    with pytest.raises(ValueError, match="n_nodes"):
        generate_pathrag6(n_nodes=0)
    with pytest.raises(ValueError, match="p_intra"):
        generate_pathrag6(p_intra=1.5)


# ---------------------------------------------------------------------------- knowledge graphs


def test_kg_retrieval_benchmark_on_nations():
    kg = load_kg("nations")
    b = kg_retrieval_benchmark("nations", "test")
    assert b.name == "nations:test" and "real" in b.source
    g = b.graph
    assert g.entities == kg.entities and g.n_edges == len(kg.train)
    train = {tuple(map(int, t)) for t in kg.train}
    world = {tuple(map(int, t)) for t in kg.all_triples()}
    ent = {e: i for i, e in enumerate(kg.entities)}
    rel = {r.replace("_", " "): i for i, r in enumerate(kg.relations)}
    pairs = set()
    for i, q in enumerate(b.queries):
        assert q.id == f"nations:test:{i}"
        h = ent[q.anchor]
        head_text = kg.entities[h].replace("_", " ")
        assert q.text.startswith(head_text + " ")
        r = rel[q.text[len(head_text) + 1 :]]
        assert (h, r) not in pairs  # one query per (h, r)
        pairs.add((h, r))
        assert q.relevant and len(set(q.relevant)) == len(q.relevant)
        for t in q.relevant:
            assert t in ent  # a real entity
            assert (h, r, ent[t]) in world and (h, r, ent[t]) not in train
        # every answer the graph does not state is relevant
        expected = {t for (hh, rr, t) in world - train if (hh, rr) == (h, r)}
        assert {ent[t] for t in q.relevant} == expected
    assert pairs == {(int(h), int(r)) for h, r, _ in kg.test}


def test_kg_retrieval_benchmark_subsample_is_seeded():
    full = kg_retrieval_benchmark("nations", "valid")
    a = kg_retrieval_benchmark("nations", "valid", max_queries=10, seed=1)
    b = kg_retrieval_benchmark("nations", "valid", max_queries=10, seed=1)
    assert len(a.queries) == 10 and a.queries == b.queries
    by_text = {(q.text, q.anchor): q.relevant for q in full.queries}
    assert all(by_text[(q.text, q.anchor)] == q.relevant for q in a.queries)
    with pytest.raises(ValueError, match="split"):
        kg_retrieval_benchmark("nations", "train")


def test_error_line_in_a_later_domain_of_the_real_queries(tmp_path):
    shutil.copytree(SHIPPED, tmp_path / "copy")
    path = tmp_path / "copy" / "queries.json"
    text = path.read_text()
    assert text.count('"anchor": "bio_node_012"') == 1
    path.write_text(text.replace('"anchor": "bio_node_012"', '"anchor": "ghost"'))
    line = _line_of(path, '"id": "bio_002"') - 1  # the entry's opening brace
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}:{line}: bio query 1: anchor"):
        load_pathrag6("bio", root=tmp_path / "copy")
