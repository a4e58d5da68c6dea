r"""PathRAG-6, the benchmark of the Path-Constrained Retrieval paper, and retrieval benchmarks.

Three sources of :class:`RetrievalBenchmark` (a :class:`~grounding.retrieval.TextGraph`, its
queries with known relevant nodes, and a label saying where they come from):

- :func:`load_pathrag6`: the **real** PathRAG-6 data released with the PCR paper, shipped in
  ``data/pathrag6/`` (MIT; see its ``README.md`` and ``LICENSE``). Use it first.
- :func:`generate_pathrag6`: a seeded **reconstruction** of the protocol (six domains, 30
  nodes, 60 directed edges, anchored queries), for scale and sweeps; always labelled as such.
- :func:`kg_retrieval_benchmark`: anchored retrieval on a real knowledge graph (UMLS, Nations,
  Kinships): the training graph is the evidence, held-out answers are the relevant nodes.

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
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported lazily at run time: the retrieval layer is heavier than datasets
    from grounding.retrieval.graph import Query, TextGraph

__all__ = [
    "PATHRAG6_DOMAINS",
    "RetrievalBenchmark",
    "load_pathrag6",
    "generate_pathrag6",
    "kg_retrieval_benchmark",
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
    graph: TextGraph
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
        self.text = path.read_text(encoding="utf-8")
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
    from grounding.retrieval.graph import Query, TextGraph

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
            raise nfile.error("node", i, f"belongs to domain {meta['domain']!r}, not {domain!r}")
        if nid in seen:
            raise nfile.error("node", i, f"repeats the node id {nid!r}")
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
                raise efile.error("edge", i, f"names an unknown node {end!r}")
        w = edge.get("weight", 1.0)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w != 1.0:
            raise efile.error(
                "edge", i, f"weight {w!r}: an unweighted graph (weight 1.0) is expected"
            )
        edges.append((s, t))
    graph = TextGraph.from_edges(ids, texts, edges)

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
            raise qfile.error(kind, i, f"repeats the query id {qid!r}", **at)
        qids.add(qid)
        if anchor is not None and anchor not in seen:
            raise qfile.error(kind, i, f"anchor {anchor!r} is not a node of {domain!r}", **at)
        for r in relevant:
            if not isinstance(r, str) or r not in seen:
                raise qfile.error(kind, i, f"relevant node {r!r} is not a node of {domain!r}", **at)
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
        ValueError: naming the file and line for invalid JSON; naming the file, the entry index
            and (when found) its line for a schema error: a missing key or a value of the wrong
            type, a node of another domain, a repeated node or query id, an edge naming an
            unknown node, an edge weight other than 1.0, an unknown anchor or relevant node.

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


# ---------------------------------------------------------------------------- reconstruction

# Hand-written topic vocabularies of the reconstruction: 12 topics per domain, each
# "name: term, term, ..." with 3-5 terms. Written for this package (PathRAG-6 uses 5 topics
# per domain and no terms beyond the topic name).
_VOCAB_TEXT: dict[str, tuple[str, ...]] = {
    "tech": (
        "cloud computing: virtual machines, autoscaling, object storage, serverless functions, region failover",
        "machine learning: gradient descent, overfitting, feature engineering, cross-validation, hyperparameters",
        "databases: query planner, secondary index, transactions, normalization, write-ahead log",
        "networking: routing tables, packet loss, TCP handshake, bandwidth, subnets",
        "distributed systems: consensus, leader election, vector clocks, partition tolerance, quorum",
        "operating systems: process scheduler, virtual memory, page faults, system calls, kernel modules",
        "computer security: encryption, authentication, certificates, firewalls, vulnerabilities",
        "compilers: parsing, register allocation, intermediate representation, type checking",
        "version control: commits, branches, merge conflicts, rebasing",
        "web development: HTML templates, stylesheets, browser rendering, cookies, frontend frameworks",
        "storage systems: RAID arrays, SSD wear, file systems, block devices, snapshots",
        "observability: log aggregation, dashboards, alert thresholds, error rates",
    ),
    "bio": (
        "genetics: alleles, mutations, genotype, heredity, chromosomes",
        "cell biology: mitochondria, cell membrane, organelles, cytoskeleton",
        "biochemistry: enzyme kinetics, ATP synthesis, protein folding, substrates, cofactors",
        "ecology: food webs, predators, habitats, biodiversity, niches",
        "neuroscience: synapses, neurotransmitters, action potentials, cortex",
        "evolution: natural selection, speciation, phylogeny, fitness, adaptation",
        "microbiology: bacteria, antibiotic resistance, biofilms, viruses, plasmids",
        "molecular biology: transcription, messenger RNA, ribosomes, promoters",
        "botany: photosynthesis, chloroplasts, pollination, root systems, stomata",
        "physiology: homeostasis, hormones, blood pressure, respiration",
        "developmental biology: embryos, stem cells, differentiation, morphogen gradients",
        "marine biology: coral reefs, plankton, ocean acidification, kelp forests",
    ),
    "legal": (
        "contract law: offer, acceptance, consideration, breach, damages",
        "intellectual property: patents, copyright, trademarks, licensing, infringement",
        "employment law: wrongful dismissal, minimum wage, workplace discrimination, overtime",
        "taxation: income tax, deductions, value added tax, tax audits, capital gains",
        "corporate governance: board of directors, fiduciary duty, shareholder votes, audit committees",
        "criminal law: mens rea, plea bargains, sentencing, burden of proof, indictment",
        "data protection: personal data, consent, data breaches, data controllers, retention periods",
        "family law: custody, divorce, alimony, adoption",
        "property law: easements, mortgages, title deeds, tenancy, zoning",
        "competition law: monopolies, cartels, merger review, market dominance, price fixing",
        "civil procedure: discovery, summary judgment, jurisdiction, appeals, class actions",
        "international law: treaties, sovereignty, extradition, arbitration tribunals",
    ),
    "medical": (
        "cardiology: arrhythmia, heart failure, coronary arteries, hypertension, stents",
        "oncology: tumors, chemotherapy, metastasis, radiation therapy, biopsies",
        "neurology: stroke, epilepsy, migraine, neuropathy, dementia",
        "pediatrics: vaccination schedules, growth charts, neonatal care, childhood asthma",
        "immunology: antibodies, allergies, autoimmune disease, inflammation, vaccines",
        "endocrinology: insulin, diabetes, thyroid, cortisol",
        "pulmonology: inhalers, COPD, lung function, oxygen therapy, pneumonia",
        "gastroenterology: endoscopy, liver enzymes, irritable bowel, ulcers",
        "infectious disease: antibiotics, sepsis, viral load, contact tracing, fever",
        "psychiatry: depression, anxiety, antidepressants, psychotherapy",
        "dermatology: eczema, psoriasis, melanoma, skin lesions",
        "pharmacology: dosage, drug interactions, half-life, side effects, drug metabolism",
    ),
    "microservices": (
        "API design: REST endpoints, versioning, OpenAPI schemas, pagination, rate limits",
        "service mesh: sidecar proxies, mutual TLS, traffic shifting, Istio",
        "container orchestration: Kubernetes pods, rolling deployments, node pools, Helm charts",
        "event-driven architecture: message brokers, event sourcing, Kafka topics, consumer groups",
        "distributed tracing: trace context, spans, sampling rates, OpenTelemetry",
        "service discovery: service registry, DNS lookups, health checks, load balancers",
        "resilience patterns: circuit breakers, retry budgets, bulkheads, timeouts, fallbacks",
        "data management: database per service, saga pattern, eventual consistency, transactional outbox",
        "continuous delivery: build pipelines, canary releases, blue-green deployment, artifact registries",
        "service security: OAuth tokens, API gateways, secret rotation, JSON web tokens",
        "configuration management: feature flags, config servers, environment variables",
        "monitoring: latency percentiles, error budgets, service level objectives, Prometheus metrics",
    ),
    "citations": (
        "deep learning: convolutional layers, backpropagation, dropout, batch normalization, residual connections",
        "natural language processing: tokenization, language models, named entity recognition, machine translation",
        "computer vision: object detection, image segmentation, optical flow, feature maps",
        "reinforcement learning: policy gradients, reward shaping, Q-learning, exploration",
        "graph neural networks: message passing, node embeddings, graph convolutions, link prediction",
        "generative models: diffusion models, variational autoencoders, adversarial training, likelihood",
        "optimization: Adam optimizer, learning rate schedules, convergence, stochastic gradients",
        "information retrieval: BM25, dense retrieval, query expansion, reranking",
        "speech processing: acoustic models, speech recognition, spectrograms, speaker verification",
        "causal inference: counterfactuals, confounders, instrumental variables, treatment effects",
        "federated learning: client aggregation, differential privacy, communication rounds, non-IID data",
        "robotics: motion planning, grasping, SLAM, inverse kinematics",
    ),
}


def _parse_topic(line: str) -> tuple[str, tuple[str, ...]]:
    name, terms = line.split(": ")
    return name, tuple(terms.split(", "))


_VOCAB = {d: tuple(_parse_topic(t) for t in ts) for d, ts in _VOCAB_TEXT.items()}

_NODE_TEMPLATES = (
    "Introduction to {topic}: the role of {a} and {b}.",
    "Advanced concepts in {topic}, from {a} to {b}.",
    "Implementation details for {topic}, with attention to {a} and {b}.",
    "Common pitfalls in {topic} involve {a} and {b}.",
    "A case study of {topic}: how {a} affects {b}.",
    "Survey of {topic}, covering {a} and {b}.",
)

_QUERY_TEMPLATES = (  # each echoes a node template, as real queries echo real node texts
    "Give an introduction to {a} in {topic}.",
    "What are advanced concepts of {topic}?",
    "What are the implementation details of {a}?",
    "What are common pitfalls with {a} and {b}?",
    "Is there a case study on {a} in {topic}?",
    "How does {a} relate to {b}?",
)

#: Probability that an edge of the reconstruction joins two nodes of one topic (else a
#: uniform pair); chosen so that relevant nodes are about as reachable as in the real data.
RECONSTRUCTION_P_INTRA = 0.15

#: Probability that an edge of the reconstruction points backward in node order.
RECONSTRUCTION_P_BACKWARD = 0.05


def generate_pathrag6(
    seed: int = 0,
    n_nodes: int = 30,
    n_edges: int = 60,
    n_queries: int = 20,
    *,
    p_intra: float = RECONSTRUCTION_P_INTRA,
    p_backward: float = RECONSTRUCTION_P_BACKWARD,
) -> dict[str, RetrievalBenchmark]:
    """A seeded RECONSTRUCTION of the PathRAG-6 protocol (synthetic; not the released data).

    Per domain of :data:`PATHRAG6_DOMAINS`: ``n_nodes`` nodes spread evenly over 12
    hand-written topics (2-3 nodes each at the default size), each node's text a template
    filled with its topic's name and two of its terms; ``n_edges`` directed untyped edges,
    each drawn inside the source's topic with probability ``p_intra`` (else between two
    uniform distinct nodes) and then oriented from the lower to the higher node index, as
    almost all real edges are, except with probability ``p_backward`` (parallel edges can
    occur, self-loops cannot); ``n_queries`` queries, each a template filled with a topic's
    name and terms, anchored at a random node of the topic, whose relevant nodes are all the
    topic's nodes, the anchor included (nodes before the anchor in node order are mostly
    unreachable from it, as in the real data, where 46% of relevant nodes are unreachable).

    Compared with the real data (measured in the module docstring): the real anchor is
    relevant in 20 of 30 queries (here always); real relevant nodes are 35% the anchor, 37%
    within 1 hop, 53% within 2 and 54% reachable at all, and 30% of the relevant nodes other
    than the anchor are reachable (median depth 2). Here, at the defaults (seed 0, six
    domains, 309 relevant pairs): 39% are the anchor, 51% lie within 1 hop, 52% within 2 and
    57% at any depth (means over seeds 0-19: 40%, 52%, 55%, 59%), and 29% of the non-anchor
    relevant nodes are reachable, mostly at depth 1 (the defaults of ``p_intra`` and
    ``p_backward`` were chosen to match these fractions). Real edges ignore topics, pile up on
    the last node (74 of 360) and leave it backward (12 of 360); here they follow topics
    (``p_intra``: what puts relevant nodes in reach), do not pile up, and a share
    ``p_backward`` points backward anywhere (17 of 360 at seed 0). Median reachable-set size
    per domain: real 5 to 16 nodes, here 3.5 to 6.5; repeated (source, target) pairs: real
    11% of edges, here 7%. Vocabulary: 89% of relevant nodes share a non-stop word with the
    query against 19% of the other nodes (real 67% against 32%).

    Deterministic given the arguments: the whole run draws from one
    ``np.random.default_rng(seed)``.

    Returns:
        ``{domain: RetrievalBenchmark}`` named ``pathrag6-reconstruction/<domain>``, whose
        ``source`` reads ``"reconstruction (synthetic, seed=...)"``.

    Example:
        >>> b = generate_pathrag6(seed=0)["bio"]
        >>> b.graph.n_nodes, b.graph.n_edges, len(b.queries), b.source
        (30, 60, 20, 'reconstruction (synthetic, seed=0)')
    """
    from grounding.retrieval.graph import Query, TextGraph

    for arg, v, lo in (
        ("n_nodes", n_nodes, 1),
        ("n_edges", n_edges, 0),
        ("n_queries", n_queries, 0),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{arg} must be an int >= {lo}, got {v!r}")
    for arg, p in (("p_intra", p_intra), ("p_backward", p_backward)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{arg} must lie in [0, 1], got {p!r}")
    rng = np.random.default_rng(seed)
    source = f"reconstruction (synthetic, seed={seed})"
    out: dict[str, RetrievalBenchmark] = {}
    for domain in PATHRAG6_DOMAINS:
        topics = _VOCAB[domain]
        topic_of = rng.permutation(np.arange(n_nodes) % len(topics))
        members = [np.flatnonzero(topic_of == k) for k in range(len(topics))]
        ids = [f"{domain}_node_{i:03d}" for i in range(n_nodes)]
        texts = []
        for k in topic_of:
            name, terms = topics[k]
            a, b = rng.choice(len(terms), 2, replace=False)
            tmpl = _NODE_TEMPLATES[rng.integers(len(_NODE_TEMPLATES))]
            texts.append(tmpl.format(topic=name, a=terms[a], b=terms[b]))
        edges = []
        for _ in range(n_edges):
            s = int(rng.integers(n_nodes))
            same = members[topic_of[s]]
            if n_nodes == 1:
                t = s
            elif rng.random() < p_intra and len(same) > 1:
                t = int(rng.choice(same[same != s]))
            else:
                t = int(rng.integers(n_nodes - 1))
                t += t >= s  # uniform over the other nodes
            lo, hi = min(s, t), max(s, t)
            s, t = (hi, lo) if rng.random() < p_backward else (lo, hi)
            edges.append((ids[s], ids[t]))
        graph = TextGraph.from_edges(ids, texts, edges)
        used = [k for k in range(len(topics)) if len(members[k])]
        queries = []
        for j in range(n_queries):
            k = used[rng.integers(len(used))]
            name, terms = topics[k]
            a, b = rng.choice(len(terms), 2, replace=False)
            tmpl = _QUERY_TEMPLATES[rng.integers(len(_QUERY_TEMPLATES))]
            text = tmpl.format(topic=name, a=terms[a], b=terms[b])
            text = text[0].upper() + text[1:]
            anchor = ids[int(rng.choice(members[k]))]
            relevant = tuple(ids[i] for i in members[k])
            queries.append(
                Query(text=text, anchor=anchor, relevant=relevant, id=f"{domain}_{j + 1:03d}")
            )
        out[domain] = RetrievalBenchmark(
            f"pathrag6-reconstruction/{domain}", graph, tuple(queries), source
        )
    return out


# ---------------------------------------------------------------------------- knowledge graphs


def kg_retrieval_benchmark(
    name: str = "umls", split: str = "test", max_queries: int | None = None, seed: int = 0
) -> RetrievalBenchmark:
    """Anchored retrieval on a real knowledge graph: find the held-out answers of ``(h, r, ?)``.

    The graph is the training split (the observed evidence), directed, node texts the entity
    names with ``_`` read as a space. Each distinct ``(h, r)`` of the held-out ``split`` gives
    one query, text ``"<h> <r>"``, anchored at ``h``; its relevant nodes are every ``t'`` with
    ``(h, r, t')`` in train + valid + test but not in train (the true answers the evidence
    does not state; at least the held-out ``t``), sorted by entity id. Queries keep the order
    of first appearance in the split; ``max_queries`` keeps a seeded random subset of them (in
    that order). Ids are ``"<name>:<split>:<i>"``.

    Some relevant nodes are truly unreachable from the anchor in the observed graph. On UMLS,
    test split (measured with :meth:`TextGraph.reachable`): 362 queries, 1,103 relevant
    (query, node) pairs (3.05 per query); 47.4% of the pairs (523) are unreachable within 1
    hop (for 140 queries no relevant node is), 1.1% (12) within 2 hops and 0.09% (1 pair:
    ``classification isa -> intellectual_product``) at any depth. Valid split: 46.7%, 1.3%,
    0.2%. Nations: every relevant node is within 1 hop (its training graph is nearly
    complete). Kinships: none is within 1 hop (each ordered pair of people carries exactly one
    kinship term, so a held-out pair has no training edge at all) and all are within 2.

    Raises:
        ValueError: for an unknown dataset, a split other than ``"valid"`` or ``"test"`` (train
            answers are all stated by the graph), or a negative ``max_queries``.

    Example:
        >>> b = kg_retrieval_benchmark("nations", max_queries=5)
        >>> len(b.queries), b.queries[0].id, b.graph.n_nodes
        (5, 'nations:test:0', 14)
    """
    from grounding.datasets.kg import load_kg
    from grounding.retrieval.graph import Query, TextGraph

    if split not in ("valid", "test"):
        raise ValueError(f"split must be 'valid' or 'test', got {split!r}")
    if max_queries is not None and max_queries < 0:
        raise ValueError(f"max_queries must be >= 0 or None, got {max_queries!r}")
    kg = load_kg(name)
    graph = TextGraph.from_typed_graph(kg.graph("train"))
    train = {(int(h), int(r), int(t)) for h, r, t in kg.train}
    answers: dict[tuple[int, int], set[int]] = {}
    for h, r, t in kg.all_triples():
        if (int(h), int(r), int(t)) not in train:
            answers.setdefault((int(h), int(r)), set()).add(int(t))
    pairs = list(dict.fromkeys((int(h), int(r)) for h, r, _ in kg.split(split)))
    if max_queries is not None and max_queries < len(pairs):
        keep = np.sort(np.random.default_rng(seed).choice(len(pairs), max_queries, replace=False))
        pairs = [pairs[i] for i in keep]
    text = [e.replace("_", " ") for e in kg.entities]
    rel_text = [r.replace("_", " ") for r in kg.relations]
    queries = tuple(
        Query(
            text=f"{text[h]} {rel_text[r]}",
            anchor=kg.entities[h],
            relevant=tuple(kg.entities[t] for t in sorted(answers[(h, r)])),
            id=f"{kg.name}:{split}:{i}",
        )
        for i, (h, r) in enumerate(pairs)
    )
    return RetrievalBenchmark(
        f"{kg.name}:{split}",
        graph,
        queries,
        f"{kg.name} knowledge graph (real), train split as evidence",
    )
