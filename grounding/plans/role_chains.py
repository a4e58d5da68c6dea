r"""Role chains predicted from a blind hypergraph question: the blind replacement for a templated
hypergraph question's gold role chain, and a planner built on it.

A hop of a hypergraph question enters a statement in one role and leaves it in another, a
*role pair* :math:`(a, b)` (``("subject:P166", "qualifier:P805")``). A
:class:`RoleChainPredictor` sees a :class:`~grounding.query.BlindQuestion` (text and topic)
alone and predicts the question's chain of role pairs:

1. **Hop phrases.** The text is read as nested hop phrases, innermost last, the grammar of
   :func:`~grounding.datasets.hypergraph_qa_benchmark`'s questions: ``What is the <B_T> of the
   statement whose <A_T> is ... the <B_1> of the statement whose <A_1> is <topic>?`` gives
   :math:`T` hops, hop :math:`k` with an entering phrase :math:`A_k` and a leaving phrase
   :math:`B_k`. A text that does not read so names no hop: the predictor raises
   ``ValueError`` (a planner turns it into :class:`~grounding.plans.PlanError`).
2. **Hop scores**, from training questions (text and gold roles: the training split only) and
   the roles' label text :math:`\ell(r)` (``"subject of <label>"`` for a subject role, the
   relation's label otherwise):

   .. math::
       s_k(a, b) = \cos(\phi(A_k B_k), \bar\phi_{ab})
                 + \tfrac{\beta}{2}\big[\cos(\phi(A_k), \phi(\ell(a)))
                                       + \cos(\phi(B_k), \phi(\ell(b)))\big],

   :math:`\bar\phi_{ab}` the normalized mean embedding of the training hop phrases whose gold
   pair is :math:`(a, b)` (0 for a pair never seen in training).
3. **Chains walkable in the evidence.** A beam search over chains of :math:`T` pairs follows
   the observed hypergraph from the topic: at each hop only pairs that some entity of the
   current frontier can take (it plays :math:`a` in a statement that has a member in role
   :math:`b`) are candidates; where the frontier is empty (the evidence does not hold the
   chain) or larger than ``max_frontier``, every known pair is. A chain's score is
   :math:`\sum_k s_k`; the top ``k`` chains carry the softmax of score :math:`/\,T` as their
   probabilities, so competing chains can meet in one posterior.

On templated text the hop phrases name the roles' labels, so the label term reads them back
nearly exactly; what remains is ambiguity between roles that read alike (an object and a
qualifier of the same property) and relations without a label.

References:
    - Luo, Li, Haffari & Pan, "Reasoning on Graphs: Faithful and Interpretable Large Language
      Model Reasoning", 2024 (relation paths planned from the question, then grounded in the
      graph).
    - "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
      Generation", 2025 (arXiv:2510.12434): plan initialization (here from predicted roles in
      place of its LLM's plans).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from grounding._checks import check_int
from grounding.hypergraph import KnowledgeHypergraph, parse_role, role_name
from grounding.plans._common import _tempered_softmax, _unit
from grounding.plans.dag import Plan
from grounding.plans.planners import HypergraphTemplatePlanner, PlanError
from grounding.query import BlindQuestion

__all__ = ["RoleChainPredictor", "RoleChainPlanner", "role_chain_accuracy"]

Pair = tuple[str, str]
Roles = tuple[Pair, ...]

_QUESTION = re.compile(r"\s*what is (?P<body>.+?)\s*\?*\s*", re.IGNORECASE | re.DOTALL)


class RoleChainPredictor:
    """Top-``k`` role chains of a blind hypergraph question (see the module docstring).

    Args:
        hypergraph: the observed (evidence) hypergraph: role labels, walkability.
        encode: ``texts -> [n, d]`` embeddings (e.g. ``HashingEncoder().encode``).
        label_weight: :math:`\\beta`, the weight of the role-label cosines.
        temperature: :math:`T > 0` of the softmax over the top chains' scores.
        beam: chains kept per hop of the beam search.
        max_frontier: frontier size above which a hop is not restricted to walkable pairs.
        connective: the phrase joining two hops in the question text.

    Raises:
        TypeError, ValueError: an argument of the wrong kind or out of range.

    Example:
        >>> from grounding.retrieval import HashingEncoder
        >>> kh = KnowledgeHypergraph.from_statements(
        ...     [("alice", "award", "prize1", (("for_work", "film1"),)),
        ...      ("film1", "director", "bob", ())])
        >>> q = SimpleNamespace(
        ...     text="What is the director of the statement whose subject of director is the "
        ...          "for_work of the statement whose subject of award is alice?",
        ...     roles=(("subject:award", "qualifier:for_work"),
        ...            ("subject:director", "object:director")))
        >>> p = RoleChainPredictor(kh, HashingEncoder().encode).fit([q])
        >>> p.predict([BlindQuestion(q.text, "alice")], k=1)[0][0][0] == q.roles
        True
    """

    def __init__(
        self,
        hypergraph: KnowledgeHypergraph,
        encode: Callable[[Sequence[str]], Any],
        label_weight: float = 1.0,
        temperature: float = 0.1,
        beam: int = 10,
        max_frontier: int = 2000,
        connective: str = " of the statement whose ",
    ):
        if not isinstance(hypergraph, KnowledgeHypergraph):
            raise TypeError(f"hypergraph must be a KnowledgeHypergraph, got {hypergraph!r:.100}")
        if not callable(encode):
            raise TypeError(f"encode must be a function texts -> embeddings, got {encode!r:.100}")
        for name, v, low_ok in (("label_weight", label_weight, True),
                                ("temperature", temperature, False)):  # fmt: skip
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
            if not ok or v < 0 or (v == 0 and not low_ok):
                raise ValueError(
                    f"{name} must be finite and {'>=' if low_ok else '>'} 0, got {v!r}"
                )
        if not isinstance(connective, str) or not connective.strip():
            raise ValueError(f"connective must be a non-empty str, got {connective!r}")
        self.hypergraph, self.encode = hypergraph, encode
        self.label_weight, self.temperature = float(label_weight), float(temperature)
        self.beam = check_int(beam, "beam")
        self.max_frontier = check_int(max_frontier, "max_frontier")
        self.connective = connective
        kh = hypergraph
        self.roles: tuple[str, ...] = tuple(
            sorted({role_name(int(k), kh.relations[int(r)]) for k, r in zip(kh.kind, kh.role)})
        )
        self._fitted = False

    # ------------------------------------------------------------------ text

    def role_text(self, role: str) -> str:
        """A role's label text: ``"subject of <label>"`` or the relation's label."""
        kind, rel = parse_role(role)
        label = self.hypergraph.label(rel) if rel in self.hypergraph.relations else rel
        return f"subject of {label}" if kind == 0 else label

    def hop_phrases(self, text: str) -> list[tuple[str, str]]:
        """The ``(entering, leaving)`` phrase of every hop, innermost (first) hop first.

        Raises:
            ValueError: the text does not read as ``What is the <B> of the statement whose
                <A> is ...?`` (it names no hop).
        """
        if not isinstance(text, str):
            raise TypeError(f"the question text must be a str, got {type(text).__name__}")
        m = _QUESTION.fullmatch(text)
        parts = m["body"].split(self.connective) if m else []
        if len(parts) < 2 or not parts[0].lower().startswith("the "):
            raise ValueError(
                f"the question names no hop: it does not read 'What is the <role> of the "
                f"statement whose <role> is ...?': {text[:120]!r}"
            )
        leaving = [parts[0][4:]]
        entering = []
        for part in parts[1:-1]:
            a, sep, b = part.partition(" is the ")
            if not sep:
                raise ValueError(f"the question names no hop in {part[:120]!r} ('<role> is the')")
            entering.append(a)
            leaving.append(b)
        a, sep, _ = parts[-1].partition(" is ")
        if not sep:
            raise ValueError(f"the question's innermost hop names no topic: {parts[-1][:120]!r}")
        entering.append(a)
        return list(zip(entering, leaving))[::-1]

    # ------------------------------------------------------------------ fitting

    def fit(self, questions: Sequence[Any]) -> RoleChainPredictor:
        """Learn the role pairs' prototypes from training questions (each with ``text`` and its
        gold ``roles``). Returns ``self``.

        Raises:
            ValueError: no question, or a question whose text does not have one hop phrase per
                gold hop.
        """
        if not questions:
            raise ValueError("fit needs at least one training question")
        segs, pairs = [], []
        for q in questions:
            hops = self.hop_phrases(q.text)
            roles = tuple(tuple(p) for p in q.roles)
            if len(hops) != len(roles):
                raise ValueError(
                    f"question {getattr(q, 'id', '')!r} has {len(hops)} hop phrases for "
                    f"{len(roles)} gold hops"
                )
            segs += [f"{a} {b}" for a, b in hops]
            pairs += roles
        self.pairs: tuple[Pair, ...] = tuple(sorted(set(pairs)))
        index = {p: i for i, p in enumerate(self.pairs)}
        emb = _unit(self.encode(segs))
        proto = np.zeros((len(self.pairs), emb.shape[1]))
        np.add.at(proto, [index[p] for p in pairs], emb)
        self._proto, self._pair_index = _unit(proto), index
        roles = sorted(set(self.roles) | {r for p in self.pairs for r in p})
        self.roles = tuple(roles)
        self._role_index = {r: i for i, r in enumerate(roles)}
        self._role_emb = _unit(self.encode([self.role_text(r) for r in roles]))
        self._walk = _Walk(self.hypergraph, self._role_index)
        known = set(self._walk.pairs) | {(self._role_index[a], self._role_index[b])
                                         for a, b in self.pairs}  # fmt: skip
        self._all_pairs = np.array(sorted(known), np.int64).reshape(-1, 2)
        codes = np.array([self._code(self._role_index[a], self._role_index[b])
                          for a, b in self.pairs], np.int64)  # fmt: skip
        self._seen_order = np.argsort(codes, kind="stable")
        self._seen_codes = codes[self._seen_order]
        self._fitted = True
        return self

    # ------------------------------------------------------------------ prediction

    def predict(
        self, questions: Sequence[BlindQuestion], k: int = 3
    ) -> list[list[tuple[Roles, float]]]:
        """Per question, up to ``k`` ``(role chain, probability)`` pairs, best first; empty
        when the topic is not in the hypergraph.

        Raises:
            TypeError: a question is not a :class:`~grounding.query.BlindQuestion`.
            ValueError: not fitted, or a question's text names no hop.
        """
        k = check_int(k, "k")
        if not self._fitted:
            raise ValueError("the predictor is not fitted: call fit(training questions) first")
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("predict takes BlindQuestion objects (grounding.query.blind(q))")
        return [self._predict_one(q, k) for q in questions]

    def _code(self, a: Any, b: Any) -> Any:
        return a * len(self.roles) + b

    def _proto_term(self, proto: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """The prototype cosine of each candidate pair (0 for a pair unseen in training)."""
        codes = self._code(cand[:, 0], cand[:, 1])
        at = np.minimum(np.searchsorted(self._seen_codes, codes), len(self._seen_codes) - 1)
        hit = self._seen_codes[at] == codes
        return np.where(hit, proto[self._seen_order[at]], 0.0)

    def _hop_scores(self, a: str, b: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seg, ea, eb = _unit(self.encode([f"{a} {b}", a, b]))
        half = self.label_weight / 2
        return self._proto @ seg, half * (self._role_emb @ ea), half * (self._role_emb @ eb)

    def _predict_one(self, q: BlindQuestion, k: int) -> list[tuple[Roles, float]]:
        kh = self.hypergraph
        hops = self.hop_phrases(q.text)
        if not kh.has_entity(q.topic):
            return []
        beam: list[tuple[float, tuple[tuple[int, int], ...], np.ndarray | None]] = [
            (0.0, (), np.array([kh.entity_index(q.topic)]))
        ]
        for a_text, b_text in hops:
            proto, s_in, s_out = self._hop_scores(a_text, b_text)
            grown = []
            for score, chain, frontier in beam:
                cand = self._walk.options(frontier, self.max_frontier)
                if cand is None or not len(cand):
                    cand, frontier = self._all_pairs, None
                s = s_in[cand[:, 0]] + s_out[cand[:, 1]] + self._proto_term(proto, cand)
                top = np.lexsort((np.arange(len(s)), -s))[: self.beam]
                for j in top.tolist():
                    pair = (int(cand[j, 0]), int(cand[j, 1]))
                    nxt = None if frontier is None else self._walk.step(frontier, *pair)
                    grown.append((score + float(s[j]), (*chain, pair), nxt))
            grown.sort(key=lambda g: (-g[0], g[1]))
            beam = grown[: self.beam]
        best = beam[:k]
        p = _tempered_softmax(np.array([s for s, _, _ in best]), self.temperature)
        names = self.roles
        return [
            (tuple((names[a], names[b]) for a, b in chain), float(pj))
            for (_, chain, _), pj in zip(best, p)
        ]


class _Walk:
    """(entity, role) -> statements and statement -> (entity, role) slots of a hypergraph."""

    def __init__(self, kh: KnowledgeHypergraph, role_index: dict[str, int]):
        rid = np.array(
            [role_index[role_name(int(k), kh.relations[int(r)])] for k, r in zip(kh.kind, kh.role)],
            np.int64,
        )
        self.ptr, self.member, self.rid = np.asarray(kh.ptr), np.asarray(kh.member), rid
        owner = np.repeat(np.arange(kh.n_edges), np.diff(self.ptr))
        self.of: dict[int, list[tuple[int, int]]] = {}
        for e, r, h in zip(self.member.tolist(), rid.tolist(), owner.tolist()):
            self.of.setdefault(e, []).append((r, h))
        pairs = set()
        for h in range(kh.n_edges):
            rs = rid[self.ptr[h] : self.ptr[h + 1]].tolist()
            pairs.update((a, b) for i, a in enumerate(rs) for j, b in enumerate(rs) if i != j)
        self.pairs = sorted(pairs)

    def _slots(self, h: int) -> list[tuple[int, int]]:
        sl = slice(self.ptr[h], self.ptr[h + 1])
        return list(zip(self.member[sl].tolist(), self.rid[sl].tolist()))

    def options(self, frontier: np.ndarray | None, cap: int) -> np.ndarray | None:
        """``[n, 2]`` role pairs some frontier entity can take (``None``: unrestricted)."""
        if frontier is None or len(frontier) > cap:
            return None
        out = {
            (r, r2)
            for e in frontier.tolist()
            for r, h in self.of.get(e, ())
            for e2, r2 in self._slots(h)
            if e2 != e
        }
        return np.array(sorted(out), np.int64).reshape(-1, 2)

    def step(self, frontier: np.ndarray, r_in: int, r_out: int) -> np.ndarray:
        out = {
            e2
            for e in frontier.tolist()
            for r, h in self.of.get(e, ())
            if r == r_in
            for e2, r2 in self._slots(h)
            if r2 == r_out and e2 != e
        }
        return np.array(sorted(out), np.int64)


class RoleChainPlanner:
    """Plans of a blind hypergraph question from its predicted role chains: one step per
    predicted hop, worded and linked as :class:`~grounding.plans.HypergraphTemplatePlanner`'s
    (so a correct prediction gives the oracle's plan exactly). It takes
    :class:`~grounding.query.BlindQuestion` objects only.

    Args:
        predictor: a fitted :class:`RoleChainPredictor`.

    Raises:
        TypeError: the predictor is not a :class:`RoleChainPredictor`.

    References:
        "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for Retrieval-Augmented
            Generation", 2025 (arXiv:2510.12434): plan initialization (predicted roles in place
            of its LLM's plans).
    """

    name = "role-chain"

    def __init__(self, predictor: RoleChainPredictor):
        if not isinstance(predictor, RoleChainPredictor):
            raise TypeError(f"predictor must be a RoleChainPredictor, got {predictor!r:.100}")
        self.predictor = predictor
        self._template = HypergraphTemplatePlanner(predictor.hypergraph)

    def plans(self, question: BlindQuestion, k: int = 2) -> list[tuple[Plan, float]]:
        """Up to ``k`` ``(plan, probability)`` pairs, one per predicted role chain, best first.

        Raises:
            TypeError: the question is not a :class:`~grounding.query.BlindQuestion`.
            PlanError: its text names no hop, or its topic is not in the hypergraph.
        """
        if not isinstance(question, BlindQuestion):
            raise TypeError(
                "the role-chain planner takes a BlindQuestion (grounding.query.blind(q))"
            )
        try:
            [chains] = self.predictor.predict([question], k)
        except ValueError as err:
            raise PlanError(str(err)) from None
        if not chains:
            raise PlanError(f"topic {question.topic!r} is not in the hypergraph")
        return [
            (
                self._template.plan(
                    SimpleNamespace(text=question.text, topic=question.topic, roles=roles)
                ),
                w,
            )  # fmt: skip
            for roles, w in chains
        ]

    def plan(self, question: BlindQuestion) -> Plan:
        """The plan of the most probable role chain."""
        return self.plans(question, 1)[0][0]


def role_chain_accuracy(
    predictor: RoleChainPredictor, questions: Sequence[Any], k: int = 3
) -> dict[int, dict[str, Any]]:
    """Per hop count: top-1 and top-``k`` accuracy of the predicted role chains against the gold
    ones (the scorer's side: the predictor sees :func:`~grounding.query.blind` questions), the
    top-1 chain's accuracy at each hop position (innermost first), and the share of gold
    chains whose every pair was seen in training (the prototypes' reach)."""
    from grounding.query import blind

    preds = predictor.predict([blind(q) for q in questions], k)
    seen = set(predictor.pairs)
    out: dict[int, dict[str, Any]] = {}
    for h in sorted({len(q.roles) for q in questions}):
        rows = [(tuple(map(tuple, q.roles)), p) for q, p in zip(questions, preds)
                if len(q.roles) == h]  # fmt: skip
        top1 = [p[0][0] if p else () for _, p in rows]
        out[h] = dict(
            n=len(rows),
            top1=float(np.mean([t == g for (g, _), t in zip(rows, top1)])),
            topk=float(np.mean([g in [c for c, _ in p] for g, p in rows])),
            per_hop=[
                float(np.mean([len(t) > i and t[i] == g[i] for (g, _), t in zip(rows, top1)]))
                for i in range(h)
            ],
            pairs_seen=float(np.mean([all(x in seen for x in g) for g, _ in rows])),
        )
    return out
