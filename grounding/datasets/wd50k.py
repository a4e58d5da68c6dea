r"""WD50K (100): real n-ary Wikidata statements as a knowledge hypergraph, and multi-hop
questions over its hyperedges.

WD50K (Galkin, Trivedi, Maheshwari, Usbeck and Lehmann, *Message Passing for Hyper-Relational
Knowledge Graphs*, EMNLP 2020; CC BY 4.0), variant (100): 31,314 statements, every one with
at least one qualifier, ``s,r,o,q_1,v_1,...`` per line. :func:`load_wd50k` reads the shipped
train / valid / test statements over one vocabulary: train is the observed evidence, valid and
test are true but unobserved. No entity labels ship (none can be fetched offline): an entity
reads as its id and, where CoDEx knows it, its type labels; relations as CoDEx's labels where
CoDEx uses the same property, else the id.

:func:`hypergraph_qa_benchmark` builds questions the way :func:`kgqa_benchmark` does for
binary graphs: a *hop* enters a statement in one role and leaves it in another (``from an
entity, through the statement it is the subject of, to that statement's qualifier value``);
a template is a chain of hops sampled by random walks over the world (all splits), never
re-entering the statement just left; answers are every entity the chain reaches in the
world, observed answers those it reaches in the evidence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from importlib import resources
from os import PathLike
from pathlib import Path

import numpy as np

from grounding._checks import check_int
from grounding.datasets._lines import bad_name, decode_utf8, excerpt, split_lines
from grounding.datasets.kg import codex_labels
from grounding.datasets.kgqa import WORDINGS, wording_draw
from grounding.graph import INVERSE_SUFFIX
from grounding.hypergraph import KnowledgeHypergraph, Statement, role_name
from grounding.query import question_text as query_text

__all__ = [
    "HypergraphSplits",
    "load_wd50k",
    "read_statements",
    "HyperQuestion",
    "HyperQABenchmark",
    "hypergraph_qa_benchmark",
]

SPLITS = ("train", "valid", "test")


def read_statements(path: str | PathLike, name: str | None = None) -> list[Statement]:
    """Statements ``s,r,o[,q,v]*`` of a file, one a line (blank lines skipped).

    Lines end at a line feed only (a U+2028 inside a value is part of it); fields are kept exactly
    as written (no whitespace is stripped).

    Raises:
        ValueError: naming the file and the line, for fewer than three fields, an odd number
            of qualifier fields, an empty field, a field with leading or trailing whitespace
            or a control character, or bytes that are not UTF-8.
    """
    label = name or str(path)
    raw = Path(path).read_bytes() if not hasattr(path, "read_bytes") else path.read_bytes()
    text = decode_utf8(raw, label)
    out = []
    for n, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        out.append(_statement(line.split(","), f"{label}, line {n}", line))
    return out


def _statement(f: list[str], where: str, line: str) -> Statement:
    """One statement from the comma-separated fields ``f`` of ``line`` (errors name ``where``)."""
    if len(f) < 3:
        raise ValueError(f"{where}: a statement needs s,r,o, got {excerpt(line)}")
    if (len(f) - 3) % 2:
        raise ValueError(f"{where}: odd number of qualifier fields in {excerpt(line)}")
    if not all(f):
        raise ValueError(f"{where}: empty field in {excerpt(line)}")
    for i, x in enumerate(f, 1):
        why = bad_name(x)
        if why:
            raise ValueError(f"{where}: field {i} {excerpt(x)} {why}")
    return (f[0], f[1], f[2], tuple(zip(f[3::2], f[4::2])))


@dataclasses.dataclass(frozen=True)
class HypergraphSplits:
    """Train / valid / test hypergraphs over one vocabulary."""

    name: str
    train: KnowledgeHypergraph
    valid: KnowledgeHypergraph
    test: KnowledgeHypergraph

    def world(self, splits: Sequence[str] = SPLITS) -> KnowledgeHypergraph:
        """Every statement (train, then valid, then test), or those of ``splits``."""
        stmts = [
            h.statement(i) for s in splits for h in (getattr(self, s),) for i in range(h.n_edges)
        ]
        t = self.train
        return KnowledgeHypergraph.from_statements(
            stmts, entities=t.entities, relations=t.relations, texts=t.texts,
            relation_labels=t.relation_labels,
        )  # fmt: skip


def load_wd50k(root: str | PathLike | None = None) -> HypergraphSplits:
    """The shipped WD50K (100) statements (or ``{train,valid,test}.txt`` of the same format
    under ``root``), with CoDEx's labels where they exist."""
    base = resources.files("grounding.datasets") / "data" / "wd50k" if root is None else Path(root)
    stmts = {s: read_statements(base / f"{s}.txt", f"wd50k/{s}.txt") for s in SPLITS}
    every = [st for s in SPLITS for st in stmts[s]]
    ents = list(dict.fromkeys(e for s, _, o, qs in every for e in (s, o, *(v for _, v in qs))))
    rels = list(dict.fromkeys(x for _, r, _, qs in every for x in (r, *(q for q, _ in qs))))
    texts, labels = codex_labels(ents, rels)
    parts = {
        s: KnowledgeHypergraph.from_statements(
            stmts[s], entities=ents, relations=rels, texts=texts, relation_labels=labels
        )
        for s in SPLITS
    }
    return HypergraphSplits("wd50k", **parts)


# ------------------------------------------------------------------------ questions


@dataclasses.dataclass(frozen=True)
class HyperQuestion:
    """A multi-hop question over hyperedges.

    Attributes:
        id, text, topic: as for knowledge-graph questions.
        roles: ``(role_in, role_out)`` per hop (role names, :func:`grounding.hypergraph.role_name`).
        answers: every entity the chain reaches in the world; observed: those it reaches in
            the evidence; split: ``"train"``, ``"valid"`` or ``"test"``.
    """

    id: str
    text: str
    topic: str
    roles: tuple[tuple[str, str], ...]
    answers: tuple[str, ...]
    observed: tuple[str, ...]
    split: str

    @property
    def hops(self) -> int:
        return len(self.roles)

    @property
    def chain(self) -> tuple[str, ...]:
        """The bipartite relation chain (two relations per hop, see
        :func:`grounding.hypergraph.hop_relations`)."""
        return tuple(x for a, b in self.roles for x in (a, b + INVERSE_SUFFIX))

    @property
    def unobserved(self) -> tuple[str, ...]:
        seen = set(self.observed)
        return tuple(a for a in self.answers if a not in seen)


class _Index:
    """(entity, role) -> hyperedges, and hyperedge -> [(entity, role)], of one hypergraph."""

    def __init__(self, kh: KnowledgeHypergraph):
        self.slots: list[list[tuple[int, str]]] = []
        self.by: dict[tuple[int, str], list[int]] = {}
        self.of: dict[int, list[tuple[str, int]]] = {}  # entity -> [(its role, hyperedge)]
        for h in range(kh.n_edges):
            ents, kinds, roles = kh.members(h)
            slots = [
                (int(e), role_name(int(k), kh.relations[r])) for e, k, r in zip(ents, kinds, roles)
            ]
            self.slots.append(slots)
            for e, r in slots:
                self.by.setdefault((e, r), []).append(h)
                self.of.setdefault(e, []).append((r, h))

    def step(self, frontier: np.ndarray, role_in: str, role_out: str) -> np.ndarray:
        out = {e2 for e in frontier.tolist() for h in self.by.get((e, role_in), ())
               for e2, r2 in self.slots[h] if r2 == role_out and e2 != e}  # fmt: skip
        return np.array(sorted(out), np.int64)

    def answers(
        self, topic: int, roles: Sequence[tuple[str, str]], max_frontier: int | None = None
    ) -> np.ndarray | None:
        frontier = np.array([topic])
        for a, b in roles:
            frontier = self.step(frontier, a, b)
            if max_frontier is not None and len(frontier) > max_frontier:
                return None
        return frontier[frontier != topic]


#: Six wordings of one hop (``{B}`` the leaving role, ``{A}`` the entering role, ``{X}`` the
#: phrase the hop starts from); the phrasing indices of :mod:`grounding.query` pick one
#: (0-3 for training and validation questions, 4-5 for test questions on a held-out benchmark).
HOP_WORDINGS = (
    "the {B} of the statement whose {A} is {X}",
    "the {B} of the fact in which {X} is the {A}",
    "the {B} recorded for the claim with {A} {X}",
    "the {B} of the record that has {X} as {A}",
    "whatever is the {B} in the statement giving {X} as its {A}",
    "the {B} attached to the listing where {X} appears as {A}",
)


def question_text(
    kh: KnowledgeHypergraph,
    topic_text: str,
    roles: Sequence[tuple[str, str]],
    phrasings: Sequence[int] = (0,),
    frame: int = 0,
) -> str:
    """A question along a role chain, hop ``k`` worded by :data:`HOP_WORDINGS`
    ``[phrasings[k]]`` (the last one given repeats) and the whole by frame ``frame`` of
    :data:`grounding.query.FRAMES`."""
    x = topic_text
    for k, (a, b) in enumerate(roles):
        w = HOP_WORDINGS[phrasings[min(k, len(phrasings) - 1)]]
        w = w.replace("{A}", kh.role_text(a)).replace("{B}", kh.role_text(b))
        x = w.replace("{X}", x)
    return query_text(x, frame)


@dataclasses.dataclass(frozen=True)
class HyperQABenchmark:
    """Questions over a knowledge hypergraph: ``world`` (every statement), ``evidence`` (the
    train statements), the questions of every split."""

    name: str
    world: KnowledgeHypergraph
    evidence: KnowledgeHypergraph
    questions: tuple[HyperQuestion, ...]
    wording: str = "single"
    #: the train and valid statements: what a system may fit on (no test statement)
    fitting: KnowledgeHypergraph | None = None

    def fitting_answers(self, question: HyperQuestion) -> tuple[str, ...]:
        """The answers a system may fit on (lambda): the entities the question's
        role chain reaches from its topic in the train and valid statements, never a test
        statement (``question.answers`` are read off the world). Empty when only test
        statements lead to an answer."""
        if self.fitting is None:
            raise ValueError(f"{self.name}: no train + valid statements were given")
        idx = self._cached("_fi", lambda: _Index(self.fitting))
        found = idx.answers(self.fitting.entity_index(question.topic), question.roles)
        return tuple(self.fitting.entities[a] for a in found)

    def split(self, name: str, hops: int | None = None) -> tuple[HyperQuestion, ...]:
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return tuple(q for q in self.questions if q.split == name and hops in (None, q.hops))

    def answers_of(
        self, topic: str, roles: Sequence[tuple[str, str]], observed: bool = False
    ) -> tuple[str, ...]:
        """Entities a role chain reaches from ``topic`` in the world (or the evidence)."""
        idx = self._evidence_index if observed else self._world_index
        kh = self.world
        found = idx.answers(kh.entity_index(topic), roles)
        return tuple(kh.entities[a] for a in found)

    @property
    def _world_index(self) -> _Index:
        return self._cached("_wi", lambda: _Index(self.world))

    @property
    def _evidence_index(self) -> _Index:
        return self._cached("_ei", lambda: _Index(self.evidence))

    def _cached(self, key, make):
        if key not in self.__dict__:
            object.__setattr__(self, key, make())
        return self.__dict__[key]


def hypergraph_qa_benchmark(
    *,
    questions_per_hop: int = 300,
    hops: Sequence[int] = (2, 3, 4, 5, 6),
    max_answers: int = 20,
    max_frontier: int = 500,
    max_per_template: int = 30,
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    data: HypergraphSplits | None = None,
    wording: str = "held-out",
) -> HyperQABenchmark:
    """Multi-hop questions over WD50K's hyperedges (see the module docstring).

    Args:
        wording: ``"held-out"`` (the default): each hop of a train or valid question is worded
            by one of :data:`HOP_WORDINGS` 0-3 and the question by frame 0-2 of
            :data:`grounding.query.FRAMES`; a test question by wordings 4-5 and frames 3-4, so
            reading a test question asks for wordings never seen in training. ``"single"``:
            wording 0 and frame 0 everywhere. Chains, answers and splits do not depend on it.

    Raises:
        ValueError: hops outside 1..8, non-positive sizes, bad fractions, or an unknown
            wording.
    """
    if wording not in WORDINGS:
        raise ValueError(f"wording must be one of {WORDINGS}, got {wording!r}")
    if not hops or any(not 1 <= h <= 8 for h in hops):
        raise ValueError(f"hops must be a non-empty subset of 1..8, got {hops!r}")
    for arg, v in (("questions_per_hop", questions_per_hop), ("max_answers", max_answers),
                   ("max_frontier", max_frontier), ("max_per_template", max_per_template)):  # fmt: skip
        check_int(v, arg)
    fr = np.asarray(split_fractions, float)
    if fr.shape != (3,) or (fr < 0).any() or abs(fr.sum() - 1) > 1e-9:
        raise ValueError(f"split_fractions must be 3 shares >= 0 summing to 1, got {fr!r}")
    data = data or load_wd50k()
    world = data.world()
    fitting = data.world(("train", "valid"))
    bench = HyperQABenchmark(data.name, world, data.train, (), fitting=fitting)
    wi, ei = bench._world_index, bench._evidence_index
    rng = np.random.default_rng(seed)
    topics = np.unique(world.member)
    out: list[HyperQuestion] = []
    for h in hops:
        found, seen, per_template = [], set(), {}
        for _ in range(50 * questions_per_hop):
            if len(found) == questions_per_hop:
                break
            topic = v = int(rng.choice(topics))
            roles, last = [], -1
            for _step in range(h):
                ins = [(r, hh) for r, hh in wi.of.get(v, ()) if hh != last]
                if not ins:
                    break
                r_in, hedge = ins[int(rng.integers(len(ins)))]
                outs = [(e2, r2) for e2, r2 in wi.slots[hedge] if e2 != v]
                if not outs:
                    break
                v, r_out = outs[int(rng.integers(len(outs)))]
                roles.append((r_in, r_out))
                last = hedge
            key = (topic, tuple(roles))
            if len(roles) < h or key in seen or per_template.get(key[1], 0) >= max_per_template:
                continue
            seen.add(key)
            answers = wi.answers(topic, key[1], max_frontier)
            if answers is None or not 0 < len(answers) <= max_answers:
                continue
            per_template[key[1]] = per_template.get(key[1], 0) + 1
            found.append((topic, key[1], answers))
        n = len(found)
        n_train, n_valid = int(round(fr[0] * n)), int(round(fr[1] * n))
        labels = ["train"] * n_train + ["valid"] * n_valid + ["test"] * (n - n_train - n_valid)
        split_of = [labels[i] for i in rng.permutation(n)]
        for i, (topic, roles, answers) in enumerate(found):
            obs = ei.answers(topic, roles)
            qid = f"{data.name}:{h}hop:{i}"
            rng_w, phrasings, frames = wording_draw(wording, split_of[i], qid, seed)
            words = [int(rng_w.choice(phrasings)) for _ in roles]
            out.append(HyperQuestion(
                id=qid,
                text=question_text(world, world.entity_texts[topic], roles, words,
                                   int(rng_w.choice(frames))),
                topic=world.entities[topic], roles=roles,
                answers=tuple(world.entities[a] for a in answers),
                observed=tuple(world.entities[a] for a in obs), split=split_of[i],
            ))  # fmt: skip
    return dataclasses.replace(bench, questions=tuple(out), wording=wording)
