"""A seeded reconstruction of the PathRAG-6 protocol (synthetic; not the released data).

:func:`generate_pathrag6` draws graphs and anchored queries in the shape of PathRAG-6 (six
domains, 30 nodes, 60 directed edges per domain) for scale and sweeps; the real data, and
its measured properties, are in :mod:`grounding.datasets.pathrag6`.
"""

from __future__ import annotations

import numpy as np

from grounding.datasets.pathrag6 import PATHRAG6_DOMAINS, RetrievalBenchmark
from grounding.graph import TypedGraph
from grounding.query import Query

__all__ = ["generate_pathrag6"]


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

    Compared with the real data (measured in the docstring of
    :mod:`grounding.datasets.pathrag6`): the real anchor is relevant in 20 of 30 queries (here
    always); real relevant nodes are 35% the anchor, 37% within 1 hop, 53% within 2 and 54%
    reachable at all, and 30% of the relevant nodes other than the anchor are reachable (median
    depth 2). Here, at the defaults (seed 0, six domains, 309 relevant pairs): 39% are the
    anchor, 51% lie within 1 hop, 52% within 2 and 57% at any depth (means over seeds 0-19: 40%,
    52%, 55%, 59%), and 29% of the non-anchor relevant nodes are reachable, mostly at depth 1
    (the defaults of ``p_intra`` and ``p_backward`` were chosen to match these fractions). Real
    edges ignore topics, pile up on the last node (74 of 360) and leave it backward (12 of 360);
    here they follow topics (``p_intra``: what puts relevant nodes in reach), do not pile up,
    and a share ``p_backward`` points backward anywhere (17 of 360 at seed 0). Median
    reachable-set size per domain: real 5 to 16 nodes, here 3.5 to 6.5; repeated (source,
    target) pairs: real 11% of edges, here 7%. Vocabulary: 89% of relevant nodes share a
    non-stop word with the query against 19% of the other nodes (real 67% against 32%).

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
        graph = TypedGraph.from_edges(ids, edges, texts=texts)
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
