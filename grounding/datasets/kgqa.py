r"""Templated 1-3 hop questions on the real knowledge graphs (:func:`kgqa_benchmark`).

Multi-hop question answering over a real knowledge graph, built the MetaQA way.

MetaQA (Zhang et al., *Variational Reasoning for Question Answering with Knowledge Graph*, AAAI
2018) turns relation-chain templates over a knowledge graph into 1-, 2- and 3-hop questions
whose answers are read off the full graph. WebQSP, CWQ (Freebase) and MetaQA's own movie
graph cannot be obtained offline, so :func:`kgqa_benchmark` applies the same construction to
the real graphs that ship with the package (CoDEx-M, CoDEx-S, UMLS):

- relations are read in both directions (``r`` and its inverse ``r^-1``);
- a *template* is a relation chain :math:`(r_1, \dots, r_T)`, ``T`` in 1..3, sampled by
  random walks over the world :math:`G^*` (train + valid + test) from a random topic entity,
  never stepping straight back (``r`` followed by ``r^-1``);
- a question is a (topic, template) pair; its **answers** are every entity the chain reaches
  from the topic in :math:`G^*`, other than the topic itself; questions with more than
  ``max_answers`` answers are dropped (MetaQA's answer sets are small too), and so are those
  whose intermediate frontier exceeds ``max_frontier`` entities;
- its **observed** answers are those the same chain reaches in the evidence :math:`R` (the
  train split): an answer that is true but not observed is the situation of Prop. 3, which
  hard grounding deletes and soft grounding keeps;
- its text is generated from the relation labels, each hop by one of six wordings and the
  question by one of five frames (``"Name Q42 (human)'s country of citizenship."``,
  ``"What is the entity whose ... is Q42 (human)?"``); by default the test questions' wordings
  are disjoint from those of the training and validation questions (``wording``), so
  reading them asks for generalisation. CoDEx ships no entity labels, so an entity is named by
  its id and type labels; UMLS entities by their concept names.

Questions are split train / valid / test at random (seeded) so that learned retrievers can
train on them. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from grounding._checks import check_int
from grounding.datasets._walks import _adjacency, chain_answers
from grounding.datasets.kg import KGSplits, load_kg
from grounding.graph import INVERSE_SUFFIX, TypedGraph, inverse_relation
from grounding.query import (
    TEST_FRAMES,
    TEST_PHRASINGS,
    TRAIN_FRAMES,
    TRAIN_PHRASINGS,
    Query,
    question_text,
    relation_phrase,
)

__all__ = [
    "KGQuestion",
    "KGQABenchmark",
    "kgqa_benchmark",
    "chain_answers",
]

QA_SPLITS = ("train", "valid", "test")


@dataclasses.dataclass(frozen=True)
class KGQuestion:
    """One templated multi-hop question.

    Attributes:
        id: ``"<dataset>:<hops>hop:<i>"``.
        text: the question, generated from the relation labels.
        topic: the topic entity (a name of the benchmark's graph).
        chain: the gold relation chain (names of the benchmark's graph, inverses included).
        answers: every entity the chain reaches from the topic in the world :math:`G^*`.
        observed: the answers the chain reaches in the evidence :math:`R` (a subset).
        split: ``"train"``, ``"valid"`` or ``"test"``.
    """

    id: str
    text: str
    topic: str
    chain: tuple[str, ...]
    answers: tuple[str, ...]
    observed: tuple[str, ...]
    split: str

    @property
    def hops(self) -> int:
        return len(self.chain)

    @property
    def unobserved(self) -> tuple[str, ...]:
        """True answers the evidence does not reach (Prop. 3)."""
        seen = set(self.observed)
        return tuple(a for a in self.answers if a not in seen)

    def query(self) -> Query:
        """The question as a retrieval :class:`~grounding.query.Query` anchored at its topic."""
        return Query(self.text, anchor=self.topic, relevant=self.answers, id=self.id)


@dataclasses.dataclass(frozen=True)
class KGQABenchmark:
    """Templated questions over a knowledge graph with its evidence graph.

    Attributes:
        name: e.g. ``"codex-m"``.
        kg: the underlying splits.
        graph: the evidence :math:`R`: train triples and their inverses (relation names
            ``r`` and ``r^-1``), node texts from the dataset, every edge reliability 1.
        questions: all questions, every split.
        relation_labels: label of every relation of ``graph`` (inverses included).
        wording: how the texts are worded (:data:`WORDINGS`).
        seed: the seed the benchmark was drawn with (wordings of new questions use it).
    """

    name: str
    kg: KGSplits
    graph: TypedGraph
    questions: tuple[KGQuestion, ...]
    relation_labels: dict[str, str]
    wording: str = "single"
    seed: int = 0

    def split(self, name: str, hops: int | None = None) -> tuple[KGQuestion, ...]:
        """The questions of split ``name`` (optionally only those of ``hops`` hops)."""
        if name not in QA_SPLITS:
            raise ValueError(f"split must be one of {QA_SPLITS}, got {name!r}")
        return tuple(
            q for q in self.questions if q.split == name and (hops is None or q.hops == hops)
        )

    @functools.cached_property
    def _adjacency(self) -> tuple[list, list]:
        n = self.kg.n_relations
        return _adjacency(self.kg.all_triples(), n), _adjacency(self.kg.train, n)

    @functools.cached_property
    def _fitting_adjacency(self) -> list:
        return _adjacency(np.concatenate([self.kg.train, self.kg.valid]), self.kg.n_relations)

    def fitting_answers(self, question: KGQuestion) -> tuple[str, ...]:
        """What a system may fit on (T, lambda): the answers the chain reaches from the topic
        in the train and valid triples, no test triple (``question.answers``: the world's)."""
        g = self.graph
        t, ids = g.entity_index(question.topic), [g.relation_index(r) for r in question.chain]
        return tuple(self.kg.entities[a] for a in chain_answers(self._fitting_adjacency, t, ids))

    def make_question(
        self, topic: str, chain: Sequence[str], id: str, split: str = "test"
    ) -> KGQuestion | None:
        """A question of this benchmark's form for a given topic entity and relation chain
        (names of :attr:`graph`; e.g. built from known-false triples), with its answers read
        off the world and the evidence; ``None`` when the chain reaches no answer."""
        g = self.graph
        world, observed = self._adjacency
        if not g.has_entity(topic):
            raise ValueError(f"topic {topic!r} is not an entity of {self.name}")
        t = g.entity_index(topic)
        ids = [g.relation_index(r) for r in chain]
        answers = chain_answers(world, t, ids)
        if not len(answers):
            return None
        obs = chain_answers(observed, t, ids)
        ents = self.kg.entities
        return KGQuestion(
            id=id,
            text=_text(
                self.kg.node_texts[t],
                tuple(chain),
                self.relation_labels,
                self.wording,
                split,
                id,
                self.seed,
            ),
            topic=topic,
            chain=tuple(chain),
            answers=tuple(ents[a] for a in answers),
            observed=tuple(ents[a] for a in obs),
            split=split,
        )

    def statistics(self) -> list[dict]:
        """Per hop count: questions per split, answer-set sizes, and the share of questions
        with an answer the evidence does not reach (and with no observed answer at all)."""
        rows = []
        for h in sorted({q.hops for q in self.questions}):
            qs = [q for q in self.questions if q.hops == h]
            sizes = np.array([len(q.answers) for q in qs])
            rows.append(
                dict(
                    hops=h,
                    questions=len(qs),
                    **{s: sum(q.split == s for q in qs) for s in QA_SPLITS},
                    templates=len({q.chain for q in qs}),
                    mean_answers=float(sizes.mean()),
                    median_answers=float(np.median(sizes)),
                    with_unobserved=float(np.mean([bool(q.unobserved) for q in qs])),
                    none_observed=float(np.mean([not q.observed for q in qs])),
                )
            )
        return rows


#: How question texts are worded: ``"single"``, one template everywhere (phrasing 0,
#: *What is ...?*); ``"held-out"``, every hop and the frame drawn from the training wordings
#: for train and valid questions and from the disjoint test wordings for test questions.
WORDINGS = ("held-out", "single")


def wording_draw(
    wording: str, split: str, key: str, seed: int
) -> tuple[np.random.Generator, tuple[int, ...], tuple[int, ...]]:
    """The generator a question's wording is drawn with (from ``(seed, key)`` alone) and the
    phrasings and frames its split may use (:data:`WORDINGS`)."""
    if wording == "single":
        phrasings, frames = (0,), (0,)
    elif split == "test":
        phrasings, frames = TEST_PHRASINGS, TEST_FRAMES
    else:
        phrasings, frames = TRAIN_PHRASINGS, TRAIN_FRAMES
    return np.random.default_rng([seed, zlib.crc32(key.encode())]), phrasings, frames


def _text(
    topic_text: str,
    chain: Sequence[str],
    labels: dict[str, str],
    wording: str = "single",
    split: str = "test",
    key: str = "",
    seed: int = 0,
) -> str:
    """The question's text; its wording is drawn from ``(seed, key)`` alone, so a question's
    chain and split never depend on the wording."""
    rng, phrasings, frames = wording_draw(wording, split, key, seed)
    x = topic_text
    for r in chain:
        inverse = r.endswith(INVERSE_SUFFIX)
        label = labels[inverse_relation(r) if inverse else r]
        x = relation_phrase(label, x, inverse=inverse, phrasing=int(rng.choice(phrasings)))
    return question_text(x, int(rng.choice(frames)))


def kgqa_benchmark(
    name: str = "codex-m",
    *,
    questions_per_hop: int = 1000,
    hops: Sequence[int] = (1, 2, 3),
    max_answers: int = 20,
    max_frontier: int = 2000,
    max_per_template: int = 50,
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    wording: str = "held-out",
    relations: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    held_out_share: float = 0.0,
) -> KGQABenchmark:
    """Build the templated multi-hop QA benchmark on a shipped knowledge graph.

    Args:
        name: a dataset of :func:`grounding.datasets.load_kg` (``"codex-m"``, ``"umls"``, ...).
        questions_per_hop: questions to generate per hop count (fewer if the graph runs out;
            sampling stops after ``50 * questions_per_hop`` walks).
        hops: the chain lengths (each in 1..3).
        max_answers: drop questions with more answers in :math:`G^*`.
        max_frontier: drop questions whose chain passes through more entities at some step.
        max_per_template: at most this many questions per relation chain (template variety).
        split_fractions: train / valid / test shares of the questions of each hop count.
        seed: the random seed.
        wording: ``"held-out"`` (the default): each hop of a train or valid question is
            worded by one of :data:`~grounding.query.TRAIN_PHRASINGS` and its frame by one of
            :data:`~grounding.query.TRAIN_FRAMES`, each of a test question by the disjoint
            test wordings, so reading a test question asks for wordings never seen in
            training; ``"single"``: one template for every question (*What is the capital of
            X?*). The questions, chains, answers and splits are the same either way.
        relations: the relations a chain may take (names of the benchmark's graph: ``r``, or
            ``r^-1`` for its inverse); ``None``: every relation in both directions.
        labels: relation labels the texts use instead of the dataset's (``r`` -> label; the
            inverse of ``r`` reads *inverse of <label>* unless ``r^-1`` is given too).
        held_out_share: the share of each hop count's questions whose first hop is a test
            triple of the dataset (a fact the evidence does not hold), so that questions with
            a true but unobserved answer are not left to chance; the other questions are
            drawn as random walks over the world.

    Raises:
        ValueError: for a hop count outside 1..3, non-positive sizes, bad fractions or an
            unknown wording.

    Example:
        >>> b = kgqa_benchmark("nations", questions_per_hop=20, hops=(1, 2), max_answers=5)
        >>> q = b.questions[0]
        >>> set(q.observed) <= set(q.answers), q.topic not in q.answers, len(b.split("test"))
        (True, True, 4)
    """
    if not hops or any(h not in (1, 2, 3) for h in hops):
        raise ValueError(f"hops must be a non-empty subset of 1..3, got {hops!r}")
    if wording not in WORDINGS:
        raise ValueError(f"wording must be one of {WORDINGS}, got {wording!r}")
    for arg, v in (
        ("questions_per_hop", questions_per_hop),
        ("max_answers", max_answers),
        ("max_frontier", max_frontier),
        ("max_per_template", max_per_template),
    ):
        check_int(v, arg)
    if not (isinstance(held_out_share, (int, float)) and 0.0 <= held_out_share <= 1.0):
        raise ValueError(f"held_out_share must be a number in [0, 1], got {held_out_share!r}")
    fr = np.asarray(split_fractions, float)
    if fr.shape != (3,) or (fr < 0).any() or abs(fr.sum() - 1) > 1e-9:
        raise ValueError(f"split_fractions must be 3 shares >= 0 summing to 1, got {fr!r}")
    kg = load_kg(name)
    n_rel = kg.n_relations
    world = _adjacency(kg.all_triples(), n_rel)
    observed = _adjacency(kg.train, n_rel)
    rel_names = list(kg.relations) + [inverse_relation(r) for r in kg.relations]
    allowed = _allowed_relations(relations, rel_names)
    names_of = dict(zip(kg.relations, kg.relation_labels))
    names_of.update(_checked_labels(labels, rel_names))
    rng = np.random.default_rng(seed)
    topics = np.unique(kg.all_triples()[:, [0, 2]])
    held = kg.test[np.isin(kg.test[:, 1], [r for r in allowed if r < n_rel])]
    out: list[KGQuestion] = []
    for h in hops:
        found: list[tuple[int, tuple[int, ...], np.ndarray]] = []
        seen: set[tuple[int, tuple[int, ...]]] = set()
        per_template: dict[tuple[int, ...], int] = {}
        n_held = int(round(held_out_share * questions_per_hop)) if len(held) else 0
        for attempt in range(50 * questions_per_hop):
            if len(found) == questions_per_hop:
                break
            held_found = sum(1 for f in found if f[3])
            rand_left = questions_per_hop - n_held - (len(found) - held_found)
            # each kind has its quota; while both are open they alternate
            from_held = held_found < n_held and (rand_left <= 0 or attempt % 2 == 0)
            if from_held:  # the first hop is a fact the evidence lacks
                th, tr, tt = (int(x) for x in held[rng.integers(len(held))])
                topic, v, chain = th, tt, [tr]
            else:
                topic = v = int(rng.choice(topics))
                chain = []
            for _step in range(len(chain), h):
                out_rels = [r for r in range(2 * n_rel) if r in allowed and v in world[r]]
                if chain:  # never step straight back along the edge just taken
                    back = (chain[-1] + n_rel) % (2 * n_rel)
                    out_rels = [r for r in out_rels if r != back]
                if not out_rels:
                    break
                r = int(rng.choice(out_rels))
                chain.append(r)
                v = int(rng.choice(world[r][v]))
            key = (topic, tuple(chain))
            if len(chain) < h or key in seen or per_template.get(key[1], 0) >= max_per_template:
                continue
            seen.add(key)
            answers = chain_answers(world, topic, chain, max_frontier)
            if answers is None or not 0 < len(answers) <= max_answers:
                continue
            per_template[key[1]] = per_template.get(key[1], 0) + 1
            found.append((topic, key[1], answers, from_held))
        split_of = _assign_splits(len(found), fr, rng)
        for i, (topic, chain, answers, _held) in enumerate(found):
            obs = chain_answers(observed, topic, chain)
            names = tuple(rel_names[r] for r in chain)
            qid = f"{kg.name}:{h}hop:{i}"
            out.append(
                KGQuestion(
                    id=qid,
                    text=_text(
                        kg.node_texts[topic], names, names_of, wording, split_of[i], qid, seed
                    ),
                    topic=kg.entities[topic],
                    chain=names,
                    answers=tuple(kg.entities[a] for a in answers),
                    observed=tuple(kg.entities[a] for a in obs),
                    split=split_of[i],
                )
            )
    return KGQABenchmark(
        kg.name,
        kg,
        _evidence_graph(kg, rel_names),
        tuple(out),
        {
            **{inverse_relation(r): f"inverse of {names_of[r]}" for r in kg.relations},
            **names_of,
        },
        wording,
        seed,
    )


def _allowed_relations(relations: Sequence[str] | None, rel_names: list[str]) -> set[int]:
    """The indices (``r``, then ``r + n`` for inverses) of the relations a chain may take."""
    if relations is None:
        return set(range(len(rel_names)))
    if isinstance(relations, str):
        raise TypeError(f"relations must be a sequence of relation names, not {relations!r}")
    index = {r: i for i, r in enumerate(rel_names)}
    unknown = [r for r in relations if r not in index]
    if unknown or not relations:
        raise ValueError(
            f"relations must name relations of the graph ({', '.join(rel_names[:6])}, ...); "
            f"unknown: {unknown[:5]}"
            if unknown
            else "relations is empty"
        )
    return {index[r] for r in relations}


def _checked_labels(labels: Mapping[str, str] | None, rel_names: list[str]) -> dict[str, str]:
    if labels is None:
        return {}
    bad = [r for r in labels if r not in rel_names]
    if bad:
        raise ValueError(f"labels name relations the graph lacks: {bad[:5]}")
    if not all(isinstance(v, str) and v.strip() for v in labels.values()):
        raise ValueError("labels must be non-empty strings")
    return dict(labels)


def _assign_splits(n: int, fractions: np.ndarray, rng: np.random.Generator) -> list[str]:
    n_train, n_valid = int(round(fractions[0] * n)), int(round(fractions[1] * n))
    labels = ["train"] * n_train + ["valid"] * n_valid + ["test"] * (n - n_train - n_valid)
    return [labels[i] for i in rng.permutation(n)]


def _evidence_graph(kg: KGSplits, rel_names: list[str]) -> TypedGraph:
    """Train triples and their inverses over the full vocabulary (reliability 1)."""
    t = kg.train
    head = np.concatenate([t[:, 0], t[:, 2]])
    tail = np.concatenate([t[:, 2], t[:, 0]])
    rel = np.concatenate([t[:, 1], t[:, 1] + kg.n_relations])
    return TypedGraph(
        head=jnp.asarray(head, jnp.int32),
        relation=jnp.asarray(rel, jnp.int32),
        tail=jnp.asarray(tail, jnp.int32),
        reliability=jnp.ones(len(head)),
        entities=kg.entities,
        relations=tuple(rel_names),
        texts=kg.node_texts,
    )


# ---------------------------------------------------------------------------- knowledge graphs
