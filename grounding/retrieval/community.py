r"""Communities of a graph and community (global) retrieval, as GraphRAG and PankRAG build them.

:meth:`Communities.build` runs hierarchical Leiden (``graspologic-native``'s
``hierarchical_leiden``, MIT; modularity, maximum cluster size 10 and a fixed seed, the
settings of PankRAG's public code) on the undirected graph whose edge weights count the
triples between two entities. Level 0 is the first Leiden partition; a community larger than
the maximum size is split again into communities of the next level, down to *leaf*
communities. Each community gets an extractive summary (its best-connected members' texts
and its most frequent relation labels), or one from any ``summarize`` function (e.g.
:class:`LLMSummarizer`, an OpenAI-compatible endpoint).

:class:`CommunityRetriever` is global retrieval: it ranks communities (every level, or one)
by the cosine of the query with their summaries and returns the members of the best ones.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from grounding._checks import check_int
from grounding.graph import TypedGraph
from grounding.language import Endpoint
from grounding.retrieval.base import BaseRetriever, Query, Retrieval, TextIndex, check_k, dots

__all__ = ["Community", "Communities", "CommunityRetriever", "LLMSummarizer"]


@dataclasses.dataclass(frozen=True, eq=False)
class Community:
    """One community.

    Attributes:
        id: its id (unique over all levels).
        level: 0 for the first partition, deeper levels split larger communities.
        parent: the id of the community it was split from (``None`` at level 0).
        members: ``[m]`` node indices, sorted.
        leaf: whether it is not split further.
        summary: its summary text.
    """

    id: int
    level: int
    parent: int | None
    members: np.ndarray
    leaf: bool
    summary: str = ""


class Communities:
    """The hierarchical communities of one graph (see the module docstring).

    Args:
        graph: the graph.
        communities: the communities (any order).

    References:
        - Edge et al., "From Local to Global: A GraphRAG Approach to Query-Focused
          Summarization", 2024 (arXiv:2404.16130): hierarchical Leiden
          communities and their summaries.
        - Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally
          Aware Query Resolution and Dependency-Aware Reranking Mechanism", 2025
          (arXiv:2506.11106): Sec. 2.3.
    """

    def __init__(self, graph: TypedGraph, communities: Sequence[Community]):
        self.graph = graph
        self.communities = tuple(sorted(communities, key=lambda c: (c.level, c.id)))
        if not self.communities:
            raise ValueError("no communities")

    @classmethod
    def build(
        cls,
        graph: TypedGraph,
        *,
        max_cluster_size: int = 10,
        seed: int = 0xDEADBEEF,
        relation_labels: Mapping[str, str] | None = None,
        summary_members: int = 5,
        summarize: Callable[[Sequence[str], Sequence[str]], str] | None = None,
    ) -> Communities:
        """Hierarchical Leiden communities with summaries.

        Args:
            graph: the graph (edges read in both directions; self-loops ignored).
            max_cluster_size: communities larger than this are split again (``>= 2``).
            seed: Leiden's random seed (results are deterministic given it).
            relation_labels: readable relation names for summaries (default: the names).
            summary_members: members named in an extractive summary.
            summarize: ``(member texts by degree, relation labels by count) -> summary``
                (default: extractive, ``"<members>; relations: <labels>"``).

        Raises:
            ValueError: a graph without edges between distinct nodes, or a bad size.
        """
        import graspologic_native as gn

        check_int(max_cluster_size, "max_cluster_size", 2)
        head, tail = np.asarray(graph.head), np.asarray(graph.tail)
        pairs = np.sort(np.stack([head, tail], 1), axis=1)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        if not len(pairs):
            raise ValueError("the graph has no edge between distinct nodes to cluster")
        uniq, count = np.unique(pairs, axis=0, return_counts=True)
        edges = [(str(a), str(b), float(c)) for (a, b), c in zip(uniq.tolist(), count.tolist())]
        found = gn.hierarchical_leiden(edges, max_cluster_size=max_cluster_size, seed=seed)
        members: dict[int, list[int]] = {}
        meta: dict[int, tuple[int, int | None]] = {}
        leaf: set[int] = set()
        for h in found:
            members.setdefault(h.cluster, []).append(int(h.node))
            meta[h.cluster] = (h.level, h.parent_cluster)
            if h.is_final_cluster:
                leaf.add(h.cluster)
        labels = dict(relation_labels or {})
        degree = np.bincount(np.concatenate([head, tail]), minlength=graph.n_nodes)
        texts, rel = graph.node_texts, np.asarray(graph.relation)
        summarize = summarize or _extractive(summary_members)
        out = []
        for cid in sorted(members):
            m = np.unique(np.asarray(members[cid], np.int64))
            leaving = graph.edges_from(m)
            edges_in = leaving[np.isin(tail[leaving], m, assume_unique=False)]
            names = [graph.relations[r] for r, _ in Counter(rel[edges_in].tolist()).most_common()]
            by_degree = m[np.argsort(-degree[m], kind="stable")]
            summary = summarize([texts[i] for i in by_degree], [labels.get(r, r) for r in names])
            level, parent = meta[cid]
            out.append(Community(cid, level, parent, m, cid in leaf, summary))
        return cls(graph, out)

    @property
    def levels(self) -> list[int]:
        return sorted({c.level for c in self.communities})

    def at(self, level: int | None = None, leaf: bool | None = None) -> tuple[Community, ...]:
        """The communities of one level (``None``: all), optionally only leaves or non-leaves."""
        return tuple(
            c
            for c in self.communities
            if (level is None or c.level == level) and (leaf is None or c.leaf == leaf)
        )

    def membership(self) -> np.ndarray:
        """``[n_nodes]`` the leaf community of every node (``-1``: in none, e.g. isolated)."""
        out = np.full(self.graph.n_nodes, -1, np.int64)
        for c in self.at(leaf=True):
            out[c.members] = c.id
        return out


def _extractive(n: int) -> Callable[[Sequence[str], Sequence[str]], str]:
    def summarize(member_texts: Sequence[str], relation_labels: Sequence[str]) -> str:
        text = ", ".join(member_texts[:n])
        if len(member_texts) > n:
            text += f" and {len(member_texts) - n} more"
        if relation_labels:
            text += "; relations: " + ", ".join(relation_labels[:3])
        return text

    return summarize


class LLMSummarizer:
    """A community summarizer on any OpenAI-compatible chat endpoint (pass as
    ``Communities.build(..., summarize=LLMSummarizer(Endpoint(url, model)))``).

    Raises :class:`grounding.language.EndpointError` when the endpoint fails or sends no choice.

    References:
        - Edge et al., "From Local to Global: A GraphRAG Approach to Query-Focused
          Summarization", 2024 (arXiv:2404.16130): community summaries.
    """

    PROMPT = (
        "Summarize in one sentence what this group of knowledge-graph entities has in common."
        "\nEntities: {members}\nRelations among them: {relations}\nSummary:"
    )

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        max_members: int = 20,
    ):
        if not isinstance(endpoint, Endpoint):
            raise TypeError(
                f"endpoint must be a grounding.language.Endpoint, got {endpoint!r:.100}"
            )
        self.endpoint, self.url = endpoint, endpoint.url
        self.max_members = check_int(max_members, "max_members")

    def __call__(self, member_texts: Sequence[str], relation_labels: Sequence[str]) -> str:
        prompt = self.PROMPT.format(
            members=", ".join(member_texts[: self.max_members]),
            relations=", ".join(relation_labels[:5]) or "none",
        )
        body = {
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "max_tokens": 96,
        }
        return self.endpoint.text(self.endpoint.chat(body), 0).strip()


class CommunityRetriever(BaseRetriever):
    """Global retrieval: the members of the communities whose summaries best match the query.

    Communities (of ``level``, or every level when ``None``) are ranked by the cosine of the
    query with their summary's embedding (the index's encoder); the members of the best
    ``n_communities`` are returned, scored by their community's cosine (ties: the node's own
    cosine with the query, then node index), at most ``k``.

    References:
        - Edge et al., "From Local to Global: A GraphRAG Approach to Query-Focused
          Summarization", 2024 (arXiv:2404.16130): global retrieval over community summaries.
        - Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally
          Aware Query Resolution and Dependency-Aware Reranking Mechanism", 2025
          (arXiv:2506.11106): Sec. 2.3 (community retrieval of abstract questions).
    """

    name = "community"

    def __init__(
        self,
        index: TextIndex,
        communities: Communities,
        n_communities: int = 3,
        level: int | None = None,
    ):
        super().__init__(index)
        if communities.graph is not index.graph:
            raise ValueError("the communities were built on another graph than the index's")
        self.communities = communities.at(level)
        if not self.communities:
            raise ValueError(f"no community at level {level!r}")
        self.n_communities = check_k(n_communities)
        self.summaries = index.embed_queries([c.summary or "-" for c in self.communities])

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = check_k(k)
        qv = self.index.embed_queries([query.text])[0]
        cs = dots(self.summaries, qv)
        best = np.argsort(-cs, kind="stable")[: self.n_communities]
        best_score: dict[int, float] = {}  # a node in several communities: its best one
        for j in best:
            for v in self.communities[j].members.tolist():
                best_score[v] = max(best_score.get(v, -np.inf), float(cs[j]))
        idx = np.fromiter(best_score, np.int64, len(best_score))
        s = np.fromiter(best_score.values(), np.float64, len(best_score))
        own = dots(self.index.embeddings[idx], qv)
        order = np.lexsort((idx, -own, -s))[:k]
        return self._result(query, idx[order], s[order])
