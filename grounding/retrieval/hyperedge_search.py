r"""Retrieval over knowledge hypergraphs for PRoH, and the HyperGraphRAG baseline.

After *PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
Generation* (arXiv:2510.12434), whose code is not released; the definitions below are this
package's where the paper gives none (each says so).

- :class:`HypergraphIndex`: embeddings of every entity and hyperedge, the incidence matrix
  and the bipartite graph (what :func:`grounding.ground` scores).
- Relevance to a (sub-)question :math:`q`: a hyperedge's :math:`\sigma(h) = \cos(\phi(q),
  \phi(\text{text}(h)))` (its statement text); an entity's :math:`\rho(e) = \max(0, \cos(\phi(q),
  \phi(\text{context}(e))))`, where an entity's *context* is its text and the labels of the
  roles it plays (chosen here: the paper refines entity scores with an LLM above a threshold,
  which an offline run cannot; with id-only entity texts the roles carry the signal).
- **Entity-Weighted Overlap** :func:`ewo`: :math:`\mathrm{EWO}(h, h') = \sum_{e\in h\cap h'}
  \rho(e)` (all overlaps equal, :math:`|h\cap h'|`, without EWO).
- **Beam search** :func:`beam_search`: hyperedge paths from the anchors, each extension
  :math:`h\to h'` scored :math:`\sigma(h') + \mathrm{EWO}(h, h') + \beta[h'\in C]` (``C`` the
  plan context), the first hyperedge :math:`\sigma(h_1) + \sum_{a\in h_1} w_a`; a path's score
  is the sum; the ``width`` best paths survive each depth up to ``max_depth``.
- **Plan context** :func:`plan_context`: a ``depth``-hop sketch around the anchors (topic
  entities and target hyperedges) keeping, per hop, the ``width`` hyperedges of largest
  :math:`\sigma(h) + \text{mean}_{e\in h}\rho(e)` (low-scoring directions pruned).
- **HyperGraphRAG** :func:`hypergraphrag`: the public baseline's one-hop retrieval, the top 60
  hyperedges by similarity to the question, their members as candidates.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from grounding.evidence import EvidenceState
from grounding.hypergraph import KnowledgeHypergraph
from grounding.language import Encoder, Endpoint, EndpointError, HashingEncoder, json_content
from grounding.retrieval.base import dots

__all__ = [
    "HypergraphIndex",
    "HyperPath",
    "ewo",
    "beam_search",
    "path_answers",
    "plan_context",
    "target_hyperedges",
    "hypergraphrag",
    "LLMRelevance",
]


class HypergraphIndex:
    """Embeddings, incidence and bipartite graph of one knowledge hypergraph.

    Args:
        hypergraph: the (observed) hypergraph.
        encoder: any encoder; default: the offline hashing encoder fitted on all texts.
        max_roles: role labels named in an entity's context text.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): graph anchoring.
    """

    def __init__(
        self, hypergraph: KnowledgeHypergraph, encoder: Encoder | None = None, max_roles: int = 8
    ):
        kh = self.hypergraph = hypergraph
        self.graph = kh.to_bipartite()
        self.incidence = kh.incidence()
        roles: list[dict[str, None]] = [{} for _ in range(kh.n_entities)]
        for h in range(kh.n_edges):
            ents, kinds, rels = kh.members(h)
            for e, k, r in zip(ents, kinds, rels):
                label = kh.label(kh.relations[r])
                roles[e][f"subject of {label}" if k == 0 else label] = None
        texts = kh.entity_texts
        self.entity_context = tuple(
            f"{t}; {', '.join(list(r)[:max_roles])}" if r else t for t, r in zip(texts, roles)
        )
        self.edge_texts = self.graph.node_texts[kh.n_entities :]
        self.encoder = encoder or HashingEncoder().fit([*self.entity_context, *self.edge_texts])
        self.entity_emb = self.encoder.encode(list(self.entity_context))
        self.edge_emb = self.encoder.encode(list(self.edge_texts))

    def embed(self, text: str) -> np.ndarray:
        """A query's unit embedding."""
        return self.encoder.encode([text])[0]

    def mentions(self, text: str) -> list[int]:
        """The entities ``text`` names, in order of appearance: each entity's name or text
        matched as whole words, case-insensitively (punctuation ignored), the longest match
        first and matches not overlapping; a form several entities share names the first.

        Example:
            >>> kh = KnowledgeHypergraph.from_statements([("Lou Seal", "mascot", "Giants", ())])
            >>> index = HypergraphIndex(kh)
            >>> [kh.entities[e] for e in index.mentions("Whose mascot is lou seal?")]
            ['Lou Seal']
        """
        forms, longest = self._forms
        words = _words(text)
        found: list[int] = []
        i = 0
        while i < len(words):
            for n in range(min(longest, len(words) - i), 0, -1):
                e = forms.get(" ".join(words[i : i + n]))
                if e is not None:
                    if e not in found:
                        found.append(e)
                    i += n - 1
                    break
            i += 1
        return found

    @property
    def _forms(self) -> tuple[dict[str, int], int]:
        """Every entity name and text in matching form -> entity, and the most words of one."""
        cached = self.__dict__.get("_forms_cache")
        if cached is None:
            kh, forms = self.hypergraph, {}
            for names in (kh.entities, kh.entity_texts):
                for e, name in enumerate(names):
                    key = " ".join(_words(name))
                    if key:
                        forms.setdefault(key, e)
            cached = self.__dict__["_forms_cache"] = (forms, max(map(_n_words, forms), default=0))
        return cached

    def evidence(self, edges: Iterable[int]) -> EvidenceState:
        """The evidence state of a set of hyperedges: the bipartite graph of those hyperedges
        (each member's ``entity -role-> statement`` edge and its reverse), what
        :func:`grounding.ground` walks; ``provenance["hyperedges"]`` lists them, sorted.

        Example:
            >>> kh = KnowledgeHypergraph.from_statements(
            ...     [("a", "r", "b", ()), ("b", "s", "c", (("q", "d"),))])
            >>> HypergraphIndex(kh).evidence([1]).graph.n_edges  # 3 members, both directions
            6
        """
        kh = self.hypergraph
        kept = sorted({int(h) for h in edges})
        fwd = [np.arange(kh.ptr[h], kh.ptr[h + 1]) for h in kept]
        fwd = np.concatenate(fwd) if fwd else np.zeros(0, np.int64)
        keep = np.sort(np.concatenate([fwd, fwd + len(kh.member)]))
        return EvidenceState(graph=self.graph.subgraph(keep), provenance={"hyperedges": kept})

    def entity_relevance(self, qv: np.ndarray) -> np.ndarray:
        r""":math:`\rho(e) = \max(0, \cos)` of every entity (``[N]``)."""
        return np.maximum(dots(self.entity_emb, qv), 0.0)

    def edge_relevance(self, qv: np.ndarray) -> np.ndarray:
        r""":math:`\sigma(h) = \cos` of every hyperedge (``[H]``)."""
        return dots(self.edge_emb, qv)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _n_words(form: str) -> int:
    return form.count(" ") + 1


def ewo(incidence: sp.csr_matrix, h: int, relevance: np.ndarray | None) -> np.ndarray:
    r"""``[H]`` :math:`\mathrm{EWO}(h, h') = \sum_{e \in h\cap h'} \rho(e)` for every ``h'``
    (``relevance=None``: the plain overlap :math:`|h\cap h'|`); 0 for ``h' = h``.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): Entity-Weighted Overlap.

    Example:
        >>> import scipy.sparse as sp
        >>> inc = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1], [1, 1, 1]], float))
        >>> ewo(inc, 0, np.array([0.5, 0.25, 1.0])).tolist(), ewo(inc, 0, None).tolist()
        ([0.0, 0.25, 0.75], [0.0, 1.0, 2.0])
    """
    row = incidence[h].toarray().ravel()
    weights = row if relevance is None else row * relevance
    out = np.asarray(incidence @ weights).ravel()
    out[h] = 0.0
    return out


@dataclasses.dataclass(frozen=True)
class HyperPath:
    """A hyperedge path from the anchors and its score (sum of its extensions' scores)."""

    edges: tuple[int, ...]
    score: float


def beam_search(
    index: HypergraphIndex,
    anchors: Sequence[int],
    anchor_weights: Sequence[float],
    qv: np.ndarray,
    *,
    width: int = 8,
    max_depth: int = 3,
    use_ewo: bool = True,
    context: np.ndarray | None = None,
    context_bonus: float = 0.5,
    relevance: np.ndarray | None = None,
) -> list[HyperPath]:
    r"""EWO-guided beam search (module docstring): every path kept at any depth, best first.
    ``relevance`` replaces the entities' :math:`\rho` (e.g. refined by :class:`LLMRelevance`).

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): EWO-guided reasoning path retrieval.

    Raises:
        ValueError: no anchor, anchor weights not one finite number per anchor, a
            non-positive width or depth, a context bonus that is not finite.
    """
    if not len(anchors):
        raise ValueError("beam search needs at least one anchor entity")
    weights = np.asarray(anchor_weights, float)
    if weights.shape != (len(anchors),) or not np.isfinite(weights).all():
        raise ValueError(
            f"anchor_weights must be {len(anchors)} finite numbers (one per anchor), got "
            f"{np.array2string(weights, threshold=8)}"
        )
    if width < 1 or max_depth < 1:
        raise ValueError(f"width and max_depth must be >= 1, got {width}, {max_depth}")
    if isinstance(context_bonus, bool) or not math.isfinite(context_bonus):
        raise ValueError(f"context_bonus must be a finite number, got {context_bonus!r}")
    kh, inc = index.hypergraph, index.incidence
    sigma = index.edge_relevance(qv)
    rho = (index.entity_relevance(qv) if relevance is None else relevance) if use_ewo else None
    bonus = np.zeros(kh.n_edges) if context is None else context_bonus * np.asarray(context, float)
    w = np.zeros(kh.n_entities)
    np.add.at(w, np.asarray(anchors, np.int64), weights)
    first = kh.edges_of(anchors)
    start = sigma[first] + np.asarray(inc[first] @ w).ravel() + bonus[first]
    beam = _top([HyperPath((int(h),), float(s)) for h, s in zip(first, start)], width)
    found = list(beam)
    for _ in range(max_depth - 1):
        grown = []
        for p in beam:
            shared = ewo(inc, p.edges[-1], None)  # |h ∩ h'|: who is a neighbor
            over = shared if rho is None else ewo(inc, p.edges[-1], rho)
            nxt = np.flatnonzero(shared > 0)
            nxt = nxt[~np.isin(nxt, p.edges)]
            gain = sigma[nxt] + over[nxt] + bonus[nxt]
            grown += [HyperPath((*p.edges, int(h)), p.score + float(g)) for h, g in zip(nxt, gain)]
        beam = _top(grown, width)
        if not beam:
            break
        found += beam
    return sorted(found, key=lambda p: (-p.score, p.edges))


def _top(paths: list[HyperPath], width: int) -> list[HyperPath]:
    return sorted(paths, key=lambda p: (-p.score, p.edges))[:width]


def path_answers(
    index: HypergraphIndex, paths: Sequence[HyperPath], exclude: Sequence[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate answers: the members of each path's last hyperedge (``exclude`` left out),
    scored by the best mean per-hyperedge score of a path that ends there; best first.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): answer and path retrieval.
    """
    best: dict[int, float] = {}
    skip = set(int(e) for e in exclude)
    for p in paths:
        s = p.score / len(p.edges)
        for e in index.hypergraph.members(p.edges[-1])[0].tolist():
            if e not in skip and s > best.get(e, -np.inf):
                best[e] = s
    ents = np.array(sorted(best, key=lambda e: (-best[e], e)), np.int64)
    return ents, np.array([best[e] for e in ents.tolist()])


def target_hyperedges(index: HypergraphIndex, qv: np.ndarray, n: int = 5) -> np.ndarray:
    """The ``n`` hyperedges most similar to the question (graph anchoring's targets).

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): target hyperedges.
    """
    sigma = index.edge_relevance(qv)
    return np.argsort(-sigma, kind="stable")[:n]


def plan_context(
    index: HypergraphIndex,
    anchors: Sequence[int],
    qv: np.ndarray,
    *,
    targets: Sequence[int] = (),
    depth: int = 3,
    width: int = 20,
) -> tuple[np.ndarray, str]:
    """The plan context: a ``[H]`` mask of the hyperedges kept around the anchors and target
    hyperedges (``depth`` hops, ``width`` per hop, the rest pruned) and its text sketch.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): the plan context.
    """
    kh = index.hypergraph
    sigma, rho = index.edge_relevance(qv), index.entity_relevance(qv)
    keep = np.zeros(kh.n_edges, bool)
    keep[np.asarray(targets, np.int64)] = True
    entities = set(int(a) for a in anchors)
    for h in targets:
        entities.update(kh.members(int(h))[0].tolist())
    for _ in range(depth):
        cand = kh.edges_of(sorted(entities))
        cand = cand[~keep[cand]]
        if not len(cand):
            break
        score = np.array([sigma[h] + rho[kh.members(h)[0]].mean() for h in cand.tolist()])
        chosen = cand[np.argsort(-score, kind="stable")[:width]]
        keep[chosen] = True
        for h in chosen.tolist():
            entities.update(kh.members(h)[0].tolist())
    sketch = "\n".join(index.edge_texts[h] for h in np.flatnonzero(keep).tolist())
    return keep, sketch


def hypergraphrag(index: HypergraphIndex, qv: np.ndarray, k: int = 60):
    """HyperGraphRAG's one-hop retrieval: the ``k`` hyperedges most similar to the question and
    their member entities, each scored by its best hyperedge's similarity; best first.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): its HyperGraphRAG baseline.
    """
    top = target_hyperedges(index, qv, k)
    sigma = index.edge_relevance(qv)
    paths = [HyperPath((int(h),), float(sigma[h])) for h in top]
    ents, scores = path_answers(index, paths)
    return top, ents, scores


class LLMRelevance:
    """Entity relevance refined by a language model (PRoH refines the entities whose embedding
    relevance passes a threshold): ``refine(question, entity_texts) -> [0, 1] scores`` on any
    OpenAI-compatible endpoint. The model must reply with a JSON list of one number in
    ``[0, 1]`` per entity.

    Raises:
        grounding.language.EndpointError: the endpoint failed, or the reply is not such a list.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): entity relevance refined by the LLM.
    """

    PROMPT = (
        "How relevant is each entity below to answering the question? Reply with a JSON list "
        "of numbers between 0 and 1, one per entity, in order, and nothing else.\n"
        "Question: {question}\nEntities:\n{entities}"
    )

    def __init__(
        self,
        endpoint: Endpoint,
    ):
        if not isinstance(endpoint, Endpoint):
            raise TypeError(
                f"endpoint must be a grounding.language.Endpoint, got {endpoint!r:.100}"
            )
        self.endpoint, self.url = endpoint, endpoint.url

    def __call__(self, question: str, entity_texts: Sequence[str]) -> np.ndarray:
        listing = "\n".join(f"{i}. {t}" for i, t in enumerate(entity_texts, 1))
        body = {
            "messages": [
                {"role": "user", "content": self.PROMPT.format(question=question, entities=listing)}
            ],
            "temperature": 0.0,
        }
        text = self.endpoint.text(self.endpoint.chat(body), 0).strip()
        try:
            scores = json_content(text)
        except ValueError as err:
            raise EndpointError(f"{self.url}: relevance scores: {err}") from None
        ok = isinstance(scores, list) and len(scores) == len(entity_texts)
        ok = ok and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in scores
        )  # NaN fails 0 <= x
        if not ok:
            raise EndpointError(
                f"{self.url}: expected {len(entity_texts)} numbers in [0, 1], got {text[:200]!r}"
            )
        return np.asarray(scores, np.float64)
