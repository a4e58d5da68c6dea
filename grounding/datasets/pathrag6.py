r"""PathRAG-6, the benchmark of the Path-Constrained Retrieval paper, and retrieval benchmarks.

Three sources of :class:`RetrievalBenchmark` (a :class:`~grounding.TypedGraph` with node texts, its
queries with known relevant nodes, and a label saying where they come from):

- :func:`load_pathrag6`: the **real** PathRAG-6 data released with the PCR paper, shipped in
  ``data/pathrag6/`` (MIT; see its ``README.md`` and ``LICENSE``). Use it first.
- :func:`~experiments._pathrag6_reconstruction.generate_pathrag6`: a seeded
  **reconstruction** of the protocol (six domains, 30 nodes, 60 directed edges, anchored
  queries), for scale and sweeps; always labeled as such.
- :func:`~grounding.datasets.kg_retrieval.kg_retrieval_benchmark`: anchored retrieval on a real
  knowledge graph (UMLS, Nations, Kinships): the training graph is the evidence, held-out
  answers are the relevant nodes.

"Real" means *as released*, not reconstructed: the released data is itself synthetic, drawn
by the authors' script (``scripts/generate_data.py`` of their repository, Python ``random``
with seed 42: each node a random template and topic, each edge from a uniform source to a
uniform later node, clipped to the last); the 30 queries and their relevant nodes are not
made by that script (they look hand-picked: see below).

Measured properties of the real data (all six domains, 30 queries, 57 relevant (query, node)
pairs; "depth" is the directed hop distance from the query's anchor, the anchor at depth 0):

- **Graph.** Node texts are one of five templates per domain filled with one of five topic
  names (``"Introduction to cloud computing. This technology enables scalability and
  reliability."``), so many nodes share their text verbatim. Edges are untyped and almost all
  point forward in node order (348 of 360 go from a lower to a higher index; the 12 others
  leave the last node, bio's self-loop among them), and 74 of 360 end at the last node: a
  near-DAG, so reachable sets are small (median 5 to 16 nodes of 30 by domain). Edges ignore
  topics: 64 of 360 join two nodes of one topic, fewer than the about 84 expected at random.
- **Relevance.** 20 of the 30 queries (all tech queries) count their anchor as relevant. Of the
  57 relevant pairs 35% are the anchor itself, 37% are reachable within 1 hop, 53% within 2
  and 54% at any depth; 46% are unreachable. Of the 37 relevant nodes other than the anchor,
  3% are reachable within 1 hop, 27% within 2 and 30% at all (median depth 2). Tech and the
  rest differ sharply: every tech relevant node is the anchor or a node of the anchor's topic
  at depth 2 (100% reachable), while in the other five domains the three relevant nodes sit at
  fixed index offsets from the anchor (e.g. anchor 0, relevant 1, 5, 8), regardless of topic
  and text, and only 13% of them are reachable.
- **Vocabulary.** Ignoring stop words, 67% of relevant nodes share a word with the query
  against 32% of the other nodes; on tech 100% do (the query names the topic, and so does
  every node of that topic), on the other domains 37% against 33% (no lexical signal).
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from importlib.resources.abc import Traversable
from os import PathLike
from pathlib import Path
from typing import Any

from grounding.datasets._lines import bad_name, decode_utf8, excerpt
from grounding.graph import TypedGraph
from grounding.query import Query

__all__ = [
    "RetrievalBenchmark",
    "load_pathrag6",
]

#: The six domains of PathRAG-6, in the order of the paper.
PATHRAG6_DOMAINS = ("tech", "bio", "legal", "medical", "microservices", "citations")

#: The ``source`` label of the shipped real data.
PATHRAG6_SOURCE = "PathRAG-6 (real, released with the PCR paper)"


@dataclasses.dataclass(frozen=True)
class RetrievalBenchmark:
    """A text graph with anchored queries whose relevant nodes are known.

    Attributes:
        name: e.g. ``"pathrag6/tech"``, ``"pathrag6-reconstruction/tech"``, ``"umls:test"``.
        graph: the graph retrievers search.
        queries: the queries, each with its anchor and relevant node ids.
        source: where the data comes from, real or reconstructed (keep it in reports).
    """

    name: str
    graph: TypedGraph
    queries: tuple[Query, ...]
    source: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))


# ---------------------------------------------------------------------------- loading


def _entry_lines(text: str, depth: int) -> list[list[int]]:
    """Line numbers of the object entries of every array opened at nesting ``depth``
    (0: the top-level value), one list per such array in file order (valid JSON only)."""
    groups: list[list[int]] = []
    stack: list[str] = []
    line, in_str, esc = 1, False, False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            if ch == "{" and len(stack) == depth + 1 and stack[-1] == "[" and groups:
                groups[-1].append(line)
            if ch == "[" and len(stack) == depth:
                groups.append([])
            stack.append(ch)
        elif ch in "]}" and stack:
            stack.pop()
    return groups


class _JsonFile:
    """One parsed JSON file that can name the file and the line of an entry in errors."""

    def __init__(self, path: Path | Traversable):
        self.path = str(path)
        self.text = decode_utf8(path.read_bytes(), self.path, "{label}:{line}")
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{self.path}:{e.lineno}: invalid JSON: {e.msg} (column {e.colno})"
            ) from None

    def error(self, kind: str, i: int, msg: str, depth: int = 0, group: int = 0) -> ValueError:
        """A ValueError naming the file, the line of entry ``i`` (when found) and the entry."""
        groups = _entry_lines(self.text, depth)
        lines = groups[group] if group < len(groups) else []
        where = f"{self.path}:{lines[i]}" if i < len(lines) else self.path
        return ValueError(f"{where}: {kind} {i}: {msg}")


def _get(f: _JsonFile, entry: Any, key: str, kind: str, i: int, types, **at) -> Any:
    if not isinstance(entry, dict):
        raise f.error(kind, i, f"expected a JSON object, got {type(entry).__name__}", **at)
    if key not in entry:
        raise f.error(kind, i, f"missing key {key!r}", **at)
    v = entry[key]
    if isinstance(v, bool) or not isinstance(v, types):
        want = types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
        raise f.error(kind, i, f"{key!r} must be {want}, got {type(v).__name__}", **at)
    return v


def _load_domain(base: Path | Traversable, domain: str, qfile: _JsonFile, source: str):
    nfile = _JsonFile(base / domain / "nodes.json")
    efile = _JsonFile(base / domain / "edges.json")
    for f in (nfile, efile):
        if not isinstance(f.data, list):
            raise ValueError(f"{f.path}: expected a JSON list, got {type(f.data).__name__}")
    ids: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    for i, node in enumerate(nfile.data):
        nid = _get(nfile, node, "id", "node", i, str)
        text = _get(nfile, node, "text", "node", i, str)
        meta = node.get("metadata", {})
        if not isinstance(meta, dict):
            raise nfile.error("node", i, f"'metadata' must be an object, got {type(meta).__name__}")
        if meta.get("domain", domain) != domain:
            raise nfile.error(
                "node", i, f"belongs to domain {excerpt(meta['domain'])}, not {domain!r}"
            )
        why = bad_name(nid)
        if why:
            raise nfile.error("node", i, f"id {excerpt(nid)} {why}")
        if nid in seen:
            raise nfile.error("node", i, f"repeats the node id {excerpt(nid)}")
        seen.add(nid)
        ids.append(nid)
        texts.append(text)
    if not ids:
        raise ValueError(f"{nfile.path}: no nodes")
    edges: list[tuple[str, str]] = []
    for i, edge in enumerate(efile.data):
        s = _get(efile, edge, "source", "edge", i, str)
        t = _get(efile, edge, "target", "edge", i, str)
        for end in (s, t):
            if end not in seen:
                raise efile.error("edge", i, f"names an unknown node {excerpt(end)}")
        w = edge.get("weight", 1.0)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w != 1.0:
            raise efile.error(
                "edge",
                i,
                f"weight {excerpt(w)}: an unweighted graph (weight 1.0) is expected",
            )
        edges.append((s, t))
    graph = TypedGraph.from_edges(ids, edges, texts=texts)

    keys = [k for k, v in qfile.data.items() if isinstance(v, list)]
    if domain not in qfile.data:
        raise ValueError(f"{qfile.path}: no queries for domain {domain!r}")
    entries = qfile.data[domain]
    if not isinstance(entries, list):
        raise ValueError(f"{qfile.path}: the queries of {domain!r} must be a JSON list")
    at = {"depth": 1, "group": keys.index(domain)}
    queries: list[Query] = []
    qids: set[str] = set()
    for i, q in enumerate(entries):
        kind = f"{domain} query"
        qid = _get(qfile, q, "id", kind, i, str, **at)
        text = _get(qfile, q, "query", kind, i, str, **at)
        anchor = _get(qfile, q, "anchor", kind, i, (str, type(None)), **at)
        relevant = _get(qfile, q, "relevant_nodes", kind, i, list, **at)
        if qid in qids:
            raise qfile.error(kind, i, f"repeats the query id {excerpt(qid)}", **at)
        qids.add(qid)
        if anchor is not None and anchor not in seen:
            msg = f"anchor {excerpt(anchor)} is not a node of {domain!r}"
            raise qfile.error(kind, i, msg, **at)
        for r in relevant:
            if not isinstance(r, str) or r not in seen:
                msg = f"relevant node {excerpt(r)} is not a node of {domain!r}"
                raise qfile.error(kind, i, msg, **at)
        if len(set(relevant)) != len(relevant):
            raise qfile.error(kind, i, "lists a relevant node twice", **at)
        queries.append(Query(text=text, anchor=anchor, relevant=tuple(relevant), id=qid))
    return RetrievalBenchmark(f"pathrag6/{domain}", graph, tuple(queries), source)


def load_pathrag6(
    domain: str | None = None, root: str | PathLike | Traversable | None = None
) -> dict[str, RetrievalBenchmark]:
    """The real PathRAG-6 benchmark (all six domains, or one), as shipped or from ``root``.

    Layout (see ``data/pathrag6/README.md``): ``<domain>/nodes.json`` (``id``, ``text``,
    optional ``metadata.domain``), ``<domain>/edges.json`` (``source``, ``target``,
    ``weight``) and ``queries.json`` (``{domain: [{id, anchor, query, relevant_nodes}]}``).

    The graph is a directed *multigraph*, kept exactly as released: repeated
    ``(source, target)`` pairs stay parallel edges (tech has 52 distinct pairs among its 60
    edges) and self-loops stay (bio has one); reachability is unaffected, edge counts are not.
    A query's anchor may be ``null`` (no anchor). The real data is itself template text
    generated by the PCR authors (see the module docstring for its measured properties).

    Args:
        domain: one of :data:`PATHRAG6_DOMAINS` (``None``: all six).
        root: a folder in the same layout (a user copy); default the shipped data.

    Returns:
        ``{domain: RetrievalBenchmark}`` in the order of :data:`PATHRAG6_DOMAINS`.

    Raises:
        ValueError: naming the file and line for bytes that are not UTF-8 or invalid JSON;
            naming the file, the entry index and (when found) its line for a schema error: a
            missing key or a value of the wrong type, a node id that is empty, padded or holds
            a control character, a node of another domain, a repeated node or query id, an
            edge naming an unknown node, an edge weight other than 1.0, an unknown anchor or
            relevant node. Quoted values are cut to 200 characters.

    Example:
        >>> bench = load_pathrag6("tech")["tech"]
        >>> bench.graph.n_nodes, bench.graph.n_edges, len(bench.queries)
        (30, 60, 20)
        >>> bench.queries[0].anchor, bench.queries[0].relevant
        ('tech_node_000', ('tech_node_000', 'tech_node_027', 'tech_node_029'))
    """
    if domain is not None and domain not in PATHRAG6_DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; PathRAG-6 has {', '.join(PATHRAG6_DOMAINS)}")
    if root is None:
        base: Path | Traversable = resources.files("grounding.datasets") / "data" / "pathrag6"
        source = PATHRAG6_SOURCE
    else:
        base = Path(root) if isinstance(root, (str, PathLike)) else root
        source = f"PathRAG-6 format, from {base}"
    qfile = _JsonFile(base / "queries.json")
    if not isinstance(qfile.data, dict):
        raise ValueError(f"{qfile.path}: expected a JSON object {{domain: [queries]}}")
    domains = PATHRAG6_DOMAINS if domain is None else (domain,)
    return {d: _load_domain(base, d, qfile, source) for d in domains}
