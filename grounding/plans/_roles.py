"""The parts of :class:`~grounding.plans.RoleChainPredictor` that read positions and walk the
evidence: :func:`nesting` (where a candidate role pair sits among the text's role mentions)
and :class:`RoleWalk` (which role pairs an entity frontier can take in a hypergraph)."""

from __future__ import annotations

import numpy as np

from grounding.hypergraph import KnowledgeHypergraph, role_name


def nesting(
    sides: tuple[np.ndarray, np.ndarray], at: tuple[int, int], pa: np.ndarray, pb: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Per candidate pair: how well its roles sit in the text, and the mentions used after it.

    A hop's phrase wraps the phrase of the hop before it, so its two roles are the next
    mentions outwards from the topic (on either side): one point per role that is, and half a
    point more when the entering role is the nearer of the two (*... where X appears as A*)."""
    (left, right), (i, j) = sides, at

    def head(side: np.ndarray, k: int) -> tuple[int, int]:
        return (int(side[k, 0]), int(side[k, 1])) if k < len(side) else (-2, 1 << 30)

    # (where a is named, where b is named): 1 the next mention on the left, 2 on the right
    options = ((1, 1), (1, 2), (2, 1), (2, 2), (0, 1), (0, 2))
    scores, hits_b, steps = [], [], []
    for sa, sb in options:
        ha = head(left, i) if sa == 1 else head(right, j) if sa == 2 else (-3, -1)
        ai, aj = i + (sa == 1), j + (sa == 2)
        hb = head(left, ai) if sb == 1 else head(right, aj)
        hit_a, hit_b = pa == ha[0], pb == hb[0]
        valid = hit_a | (sa == 0)
        nearer = hit_a & hit_b & (ha[1] < hb[1])
        scores.append(np.where(valid, hit_a + hit_b * 1.0 + 0.5 * nearer, -1.0))
        hits_b.append(hit_b)
        steps.append(((ai, aj), (ai + (sb == 1), aj + (sb == 2))))
    pick = np.argmax(np.array(scores), axis=0)  # the first best option
    n = np.arange(len(pa))
    score = np.maximum(np.array(scores)[pick, n], 0.0)
    moved = [
        steps[o][1] if hits_b[o][c] else steps[o][0] if score[c] > 0 else (i, j)
        for c, o in enumerate(pick.tolist())
    ]
    return score, moved


class RoleWalk:
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
