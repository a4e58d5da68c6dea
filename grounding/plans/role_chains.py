r"""Role chains predicted from a blind hypergraph question: the blind replacement for a templated
hypergraph question's gold role chain, and a planner built on it.

A hop of a hypergraph question enters a statement in one role and leaves it in another, a
*role pair* :math:`(a, b)` (``("subject:P166", "qualifier:P805")``). A
:class:`RoleChainPredictor` sees a :class:`~grounding.query.BlindQuestion` (text and topic)
alone and predicts the question's chain of role pairs:

1. **Role mentions.** The text is scanned for the phrases of the hypergraph's roles
   (:func:`~grounding.query.role_phrase`: ``"subject of <label>"`` for a subject role, the
   relation's label otherwise), longest first. A hop names two roles, so the hop count is
   :math:`T = \lceil m / 2 \rceil` for :math:`m` mentions (within the hop counts seen in
   training). The reading does not depend on the words joining the roles: questions worded
   in ways never seen in training read the same.
2. **Pair scores.** At hop :math:`t` (innermost first) a role pair :math:`(a, b)` scores

   .. math::
       s_t(a, b) = \cos(\phi(x), \bar\phi_{ab}) + \tfrac{\beta}{2}\,[n(a) + n(b)]
                 + \omega\, o_t(a, b) + \eta\, w_t(a, b),

   :math:`\bar\phi_{ab}` the normalized mean embedding of the training questions whose gold
   chain uses :math:`(a, b)` (0 for a pair never seen in training); :math:`n(r) = 1` when a
   mention of :math:`r`'s phrase is still unused by the chain's earlier hops; :math:`o_t`
   the *nesting* term: a hop's phrase wraps the phrase of the hop before it, so its roles
   are the next unused mentions outwards from the topic's mention, on either side (one point
   per role that is, half a point more when the entering role is the nearer one, *... where
   X appears as A*); :math:`w_t = 1` when some entity of the current frontier can take the
   pair in the evidence (it plays :math:`a` in a statement with a member in role :math:`b`).
   Pairs the evidence cannot walk stay candidates (the statement may be missing), and after
   one the frontier is unknown.
3. **Beam.** A beam search keeps ``beam`` chains per hop; a chain's score is
   :math:`\sum_t s_t`; the top ``k`` chains carry the softmax of score :math:`/\,T` as their
   probabilities, so competing chains can meet in one posterior. A text that names no role
   raises ``ValueError`` (a planner turns it into :class:`~grounding.plans.PlanError`).

What remains ambiguous is what the text cannot tell apart: an object and a qualifier of the
same property read alike, and a property without a label reads as its id.

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
from grounding.hypergraph import KnowledgeHypergraph, role_name
from grounding.language.encoders import unit_rows
from grounding.plans._common import _embed, _example, _role_chain, _tempered_softmax
from grounding.plans._roles import RoleWalk, nesting
from grounding.plans.dag import Plan
from grounding.plans.planners import HypergraphTemplatePlanner, PlanError
from grounding.query import BlindQuestion

__all__ = ["RoleChainPredictor", "RoleChainPlanner", "role_chain_accuracy"]

Pair = tuple[str, str]
Roles = tuple[Pair, ...]


class RoleChainPredictor:
    """Top-``k`` role chains of a blind hypergraph question (see the module docstring).

    Args:
        hypergraph: the observed (evidence) hypergraph: role labels, walkability.
        encode: ``texts -> [n, d]`` embeddings (e.g. ``HashingEncoder().encode``).
        label_weight: :math:`\\beta`, the weight of a role named anywhere in the text.
        order_weight: :math:`\\omega`, the weight of the nesting term.
        walk_weight: :math:`\\eta`, the weight of a pair the evidence can walk.
        temperature: :math:`T > 0` of the softmax over the top chains' scores.
        beam: chains kept per hop of the beam search.
        max_frontier: frontier size above which the walk term is not computed.

    Raises:
        TypeError, ValueError: an argument of the wrong kind or out of range.

    Example:
        >>> from grounding.language import HashingEncoder
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
        order_weight: float = 1.0,
        walk_weight: float = 0.5,
        temperature: float = 0.1,
        beam: int = 10,
        max_frontier: int = 2000,
    ):
        if not isinstance(hypergraph, KnowledgeHypergraph):
            raise TypeError(f"hypergraph must be a KnowledgeHypergraph, got {hypergraph!r:.100}")
        if not callable(encode):
            raise TypeError(f"encode must be a function texts -> embeddings, got {encode!r:.100}")
        for name, v, low_ok in (("label_weight", label_weight, True),
                                ("order_weight", order_weight, True),
                                ("walk_weight", walk_weight, True),
                                ("temperature", temperature, False)):  # fmt: skip
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
            if not ok or v < 0 or (v == 0 and not low_ok):
                raise ValueError(
                    f"{name} must be finite and {'>=' if low_ok else '>'} 0, got {v!r}"
                )
        self.hypergraph, self.encode = hypergraph, encode
        self.label_weight, self.temperature = float(label_weight), float(temperature)
        self.order_weight, self.walk_weight = float(order_weight), float(walk_weight)
        self.beam = check_int(beam, "beam")
        self.max_frontier = check_int(max_frontier, "max_frontier")
        kh = hypergraph
        self.roles: tuple[str, ...] = tuple(
            sorted({role_name(int(k), kh.relations[int(r)]) for k, r in zip(kh.kind, kh.role)})
        )
        self._fitted = False

    # ------------------------------------------------------------------ text

    def role_text(self, role: str) -> str:
        """A role's phrase (:meth:`~grounding.hypergraph.KnowledgeHypergraph.role_text`)."""
        return self.hypergraph.role_text(role)

    def mentions(self, text: str) -> list[str]:
        """The role phrases the text names, in the order it names them (longest phrase first
        where two overlap, so *subject of award* is one mention, not also *award*).

        Raises:
            TypeError: the text is not a str.
        """
        if not isinstance(text, str):
            raise TypeError(f"the question text must be a str, got {type(text).__name__}")
        return [m.group(0).lower() for m in self._mention_re.finditer(text)]

    def _sides(self, q: BlindQuestion) -> tuple[np.ndarray, np.ndarray]:
        """``[n, 2]`` (phrase id, characters from the topic's mention) of the role mentions
        before and after the topic's mention, each side nearest the topic first (both empty
        when the topic's text does not occur)."""
        kh = self.hypergraph
        topic = kh.entity_texts[kh.entity_index(q.topic)].lower()
        at = q.text.lower().find(topic)
        ms = [] if at < 0 else list(self._mention_re.finditer(q.text))
        left = [(self._phrase_id[m.group(0).lower()], at - m.end())
                for m in ms if m.start() < at][::-1]  # fmt: skip
        right = [(self._phrase_id[m.group(0).lower()], m.start() - at - len(topic))
                 for m in ms if m.start() >= at + len(topic)]  # fmt: skip
        return np.array(left, np.int64).reshape(-1, 2), np.array(right, np.int64).reshape(-1, 2)

    # ------------------------------------------------------------------ fitting

    def fit(self, questions: Sequence[Any]) -> RoleChainPredictor:
        """Learn the role pairs' prototypes from training questions (each with ``text`` and its
        gold ``roles``). Returns ``self``.

        Raises:
            TypeError: a role chain is a bare string, or a hop is not a pair of role names
                (the message names the question).
            ValueError: no question, an empty role chain, or an encoder output that is not
                finite.
        """
        questions = list(questions)
        if not questions:
            raise ValueError("fit needs at least one training question")
        chains = [_role_chain(q.roles, _example(i, q)) for i, q in enumerate(questions)]
        texts = [q.text for q in questions]
        pairs_of = [set(c) for c in chains]
        self.pairs: tuple[Pair, ...] = tuple(sorted(set().union(*pairs_of)))
        self.hop_counts = tuple(sorted({len(c) for c in chains}))
        index = {p: i for i, p in enumerate(self.pairs)}
        emb = _embed(self.encode, texts)
        proto = np.zeros((len(self.pairs), emb.shape[1]))
        for e, ps in zip(emb, pairs_of):
            proto[[index[p] for p in ps]] += e
        self._proto, self._pair_index = unit_rows(proto), index
        roles = sorted(set(self.roles) | {r for p in self.pairs for r in p})
        self.roles = tuple(roles)
        self._role_index = {r: i for i, r in enumerate(roles)}
        phrases = [self.role_text(r).lower() for r in roles]
        self._phrases = tuple(sorted(set(phrases)))
        self._phrase_id = {x: i for i, x in enumerate(self._phrases)}
        self._phrase_of = np.array([self._phrase_id[x] for x in phrases], np.int64)
        alternatives = "|".join(re.escape(x) for x in sorted(self._phrases, key=len, reverse=True))
        self._mention_re = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
        self._walk = RoleWalk(self.hypergraph, self._role_index)
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

    def hop_count(self, text: str) -> int:
        """The number of hops the text asks for: half its role mentions (a hop names the role it
        enters and the role it leaves), rounded up, within the hop counts seen in training.

        Raises:
            ValueError: the text names no role.
        """
        n = len(self.mentions(text))
        if not n:
            raise ValueError(f"the question names no role of the hypergraph: {text[:120]!r}")
        return int(np.clip((n + 1) // 2, self.hop_counts[0], self.hop_counts[-1]))

    def _predict_one(self, q: BlindQuestion, k: int) -> list[tuple[Roles, float]]:
        kh = self.hypergraph
        hops = self.hop_count(q.text)
        if not kh.has_entity(q.topic):
            return []
        proto = self._proto @ _embed(self.encode, [q.text])[0]
        unused = np.zeros(len(self._phrases), np.int64)  # mentions not yet used by a hop
        for m in self.mentions(q.text):
            unused[self._phrase_id[m]] += 1
        half, ph = self.label_weight / 2, self._phrase_of
        sides = self._sides(q)
        beam: list[tuple[float, tuple[tuple[int, int], ...], Any, np.ndarray, tuple[int, int]]] = [
            (0.0, (), np.array([kh.entity_index(q.topic)]), unused, (0, 0))
        ]
        for _ in range(hops):
            grown = []
            for score, chain, frontier, rest, at in beam:
                walkable = self._walk.options(frontier, self.max_frontier)
                cand, walked = self._all_pairs, np.zeros(len(self._all_pairs))
                if walkable is None or not len(walkable):
                    frontier = None
                else:  # every pair stays a candidate: the evidence may lack the statement
                    codes = self._code(cand[:, 0], cand[:, 1])
                    walked = np.isin(codes, self._code(walkable[:, 0], walkable[:, 1])) * 1.0
                pa, pb = ph[cand[:, 0]], ph[cand[:, 1]]
                named_a = rest[pa] > 0
                named_b = rest[pb] - (named_a & (pa == pb)) > 0
                placed, moved = nesting(sides, at, pa, pb)
                s = (
                    half * (named_a.astype(float) + named_b)
                    + self.order_weight * placed
                    + self.walk_weight * walked
                    + self._proto_term(proto, cand)
                )
                top = np.lexsort((np.arange(len(s)), -s))[: self.beam]
                for j in top.tolist():
                    pair = (int(cand[j, 0]), int(cand[j, 1]))
                    after = rest.copy()
                    for x, used in ((pa[j], named_a[j]), (pb[j], named_b[j])):
                        after[x] -= int(used)
                    nxt = None if not walked[j] else self._walk.step(frontier, *pair)
                    grown.append((score + float(s[j]), (*chain, pair), nxt, after, moved[j]))
            grown.sort(key=lambda g: (-g[0], g[1]))
            beam = grown[: self.beam]
        best = beam[:k]
        p = _tempered_softmax(np.array([g[0] for g in best]), self.temperature)
        names = self.roles
        return [(tuple((names[a], names[b]) for a, b in g[1]), float(pj)) for g, pj in zip(best, p)]


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

    questions = list(questions)
    golds = [_role_chain(q.roles, _example(i, q)) for i, q in enumerate(questions)]
    preds = predictor.predict([blind(q) for q in questions], k)
    seen = set(predictor.pairs)
    out: dict[int, dict[str, Any]] = {}
    for h in sorted({len(g) for g in golds}):
        rows = [(g, p) for g, p in zip(golds, preds) if len(g) == h]
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
