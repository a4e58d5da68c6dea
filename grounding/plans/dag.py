r"""Question plans as data: sub-questions linked by dependency edges (a DAG).

A :class:`Plan` decomposes a question into :class:`SubQuestion` s. An edge ``u -> v``
(``u`` in ``v.depends_on``) is a *progress* relation: ``v`` needs ``u``'s answer, which fills
the ``{u}`` slot of ``v``'s text. Sub-questions with no path between them are *parallel*.
Execution is topological by :meth:`Plan.levels`: every sub-question of a level can run at
once. Planners (sub-question decomposition, hypergraph plans) build plans; retrievers answer
their steps; every step's evidence goes to :func:`grounding.ground`.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Mapping, Sequence

__all__ = ["SubQuestion", "Plan", "plan_from_decomposition"]


@dataclasses.dataclass(frozen=True)
class SubQuestion:
    """One step of a plan.

    Attributes:
        id: a unique identifier (a Python identifier, so it can name a slot).
        text: the sub-question; ``{dep}`` marks where dependency ``dep``'s answer goes.
        depends_on: ids of the sub-questions whose answers this one needs (progress edges).
        abstract: a broad question (community / global retrieval) rather than a specific one
            (local neighbourhood retrieval).
        anchors: graph entities the step names itself (e.g. the question's topic entity);
            a step's other anchors are its dependencies' answers.
        relations: the relation chain the step asks to follow from its anchors, when a
            planner knows it (templated questions); empty for free text.
    """

    id: str
    text: str
    depends_on: tuple[str, ...] = ()
    abstract: bool = False
    anchors: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (isinstance(self.id, str) and self.id.isidentifier()):
            raise ValueError(f"sub-question id must be an identifier, got {self.id!r}")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"sub-question {self.id!r} has no text")
        deps = tuple(self.depends_on)
        if isinstance(self.depends_on, str) or len(set(deps)) != len(deps):
            raise ValueError(f"{self.id}.depends_on must be distinct ids, got {self.depends_on!r}")
        object.__setattr__(self, "depends_on", deps)
        for name in ("anchors", "relations"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(x, str) and x for x in value):
                raise ValueError(
                    f"{self.id}.{name} must be a tuple of non-empty str, got {value!r}"
                )
            object.__setattr__(self, name, tuple(value))
        if not isinstance(self.abstract, bool):
            raise ValueError(f"{self.id}.abstract must be a bool, got {self.abstract!r}")
        slots = {f for _, f, _, _ in string.Formatter().parse(self.text) if f}
        if not slots <= set(deps):
            raise ValueError(
                f"sub-question {self.id!r} has slots {sorted(slots - set(deps))} that are not "
                "among its dependencies"
            )

    def fill(self, answers: Mapping[str, str]) -> str:
        """The text with each dependency's slot filled from ``answers`` (id -> answer)."""
        missing = [d for d in self.depends_on if d not in answers]
        if missing:
            raise KeyError(f"sub-question {self.id!r} needs the answers of {missing}")
        return self.text.format(**{d: answers[d] for d in self.depends_on})


@dataclasses.dataclass(frozen=True)
class Plan:
    """A question's sub-questions and their dependency DAG (validated on construction).

    Attributes:
        question: the original question.
        steps: the sub-questions (any order).
        final: id of the step whose answer answers the question (default: the last step).
        fallback: ``None``, or why the planner could not plan as specified and what it did
            instead (e.g. a one-step plan of the whole question); reported, never silent.

    Raises:
        ValueError: a duplicate id, a dependency on an unknown step (dangling reference), a
            cycle, or an unknown ``final``.

    References:
        - Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally
          Aware Query Resolution and Dependency-Aware Reranking Mechanism", 2025
          (arXiv:2506.11106): Sec. 2.2 (progress and parallel relations).
        - "PRoH: Dynamic Planning and Reasoning over Knowledge Hypergraphs for
          Retrieval-Augmented Generation", 2025 (arXiv:2510.12434): Hasse reduction.

    Example:
        >>> p = Plan("Who founded the team Lou Seal is the mascot of?", (
        ...     SubQuestion("team", "Which team is Lou Seal the mascot of?"),
        ...     SubQuestion("founder", "Who founded {team}?", ("team",))))
        >>> p.levels(), p.steps[1].fill({"team": "the Giants"})
        ([('team',), ('founder',)], 'Who founded the Giants?')
    """

    question: str
    steps: tuple[SubQuestion, ...]
    final: str = ""
    fallback: str | None = None

    def __post_init__(self) -> None:
        steps = tuple(self.steps)
        if not steps:
            raise ValueError("a plan needs at least one step")
        ids = [s.id for s in steps]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate step ids in {ids}")
        for s in steps:
            unknown = [d for d in s.depends_on if d not in ids]
            if unknown:
                raise ValueError(f"step {s.id!r} depends on unknown steps {unknown}")
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "final", self.final or ids[-1])
        if self.final not in ids:
            raise ValueError(f"final step {self.final!r} is not a step of the plan")
        self.levels()  # raises on a cycle

    @property
    def by_id(self) -> dict[str, SubQuestion]:
        return {s.id: s for s in self.steps}

    def levels(self) -> list[tuple[str, ...]]:
        """Topological levels (Kahn): each level's steps depend only on earlier levels, so they
        run in parallel; ids keep the plan's order within a level."""
        pending = {s.id: set(s.depends_on) for s in self.steps}
        done: set[str] = set()
        out = []
        while pending:
            ready = tuple(i for i, deps in pending.items() if deps <= done)
            if not ready:
                raise ValueError(f"the plan has a cycle among {sorted(pending)}")
            out.append(ready)
            done.update(ready)
            for i in ready:
                del pending[i]
        return out

    def edges(self) -> list[tuple[str, str]]:
        """Progress edges ``(dependency, dependent)``."""
        return [(d, s.id) for s in self.steps for d in s.depends_on]

    def transitive_reduction(self) -> Plan:
        """The same plan with every dependency implied by another one removed (the Hasse
        diagram of the dependency order), except dependencies whose answer fills a slot of
        the step's text, which the step needs directly.

        Example:
            >>> p = Plan("q", (SubQuestion("a", "A?"), SubQuestion("b", "B?", ("a",)),
            ...               SubQuestion("c", "C?", ("a", "b"))))
            >>> p.transitive_reduction().edges()
            [('a', 'b'), ('b', 'c')]
        """
        by_id = self.by_id

        def ancestors(i: str) -> set[str]:
            out, stack = set(), list(by_id[i].depends_on)
            while stack:
                d = stack.pop()
                if d not in out:
                    out.add(d)
                    stack.extend(by_id[d].depends_on)
            return out

        steps = []
        for s in self.steps:
            implied = set().union(*(ancestors(d) for d in s.depends_on)) if s.depends_on else set()
            keep = tuple(d for d in s.depends_on if d not in implied)
            slots = {f for _, f, _, _ in string.Formatter().parse(s.text) if f}
            keep += tuple(d for d in s.depends_on if d in slots and d not in keep)  # slots stay
            steps.append(dataclasses.replace(s, depends_on=keep))
        return Plan(self.question, tuple(steps), self.final, self.fallback)

    def parallel(self) -> list[tuple[str, str]]:
        """Pairs of steps with no dependency path between them (*parallel* relations), in
        plan order."""
        by_id = self.by_id
        reach: dict[str, set[str]] = {}
        for level in self.levels():
            for i in level:
                reach[i] = set(by_id[i].depends_on).union(*(reach[d] for d in by_id[i].depends_on))
        ids = [s.id for s in self.steps]
        return [
            (a, b)
            for j, a in enumerate(ids)
            for b in ids[j + 1 :]
            if a not in reach[b] and b not in reach[a]
        ]

    def to_dict(self) -> dict:
        """The plan as plain JSON-ready data."""
        return dict(
            question=self.question,
            final=self.final,
            fallback=self.fallback,
            steps=[dataclasses.asdict(s) for s in self.steps],
        )


_REF = re.compile(r"#\s*(\d+)")


def plan_from_decomposition(
    question: str,
    texts: Sequence[str],
    abstract: Sequence[bool] | None = None,
    *,
    strict: bool = True,
) -> Plan:
    """A plan from sub-question texts that refer to earlier answers as ``#1``, ``#2``, ...
    (MuSiQue's gold format, and what :class:`~grounding.plans.LLMPlanner` asks for):
    step ``k`` gets id ``q{k}``, each ``#j`` becomes the slot ``{qj}`` and a dependency on
    step ``j``. The last step is final. With ``strict=False`` a ``#j`` that names no earlier
    step is kept as literal text (titles such as the song "#9 Dream").

    Raises:
        ValueError: no text, or (``strict``) a reference to a step that is not an earlier one.

    References:
        Trivedi, Balasubramanian, Khot & Sabharwal, "MuSiQue: Multihop Questions via
            Single-hop Question Composition", 2022.

    Example:
        >>> p = plan_from_decomposition("q?", ["Who directed X?", "Where was #1 born?"])
        >>> p.edges(), p.steps[1].text
        ([('q1', 'q2')], 'Where was {q1} born?')
    """
    texts = list(texts)
    if not texts:
        raise ValueError("a decomposition needs at least one sub-question")
    flags = [False] * len(texts) if abstract is None else [bool(a) for a in abstract]
    if len(flags) != len(texts):
        raise ValueError(f"{len(flags)} abstract flags for {len(texts)} sub-questions")
    steps = []
    for k, text in enumerate(texts, 1):
        if not isinstance(text, str):
            raise ValueError(f"sub-question {k} is not text: {text!r}")
        refs = [int(j) for j in _REF.findall(text)]
        bad = sorted({j for j in refs if not 1 <= j < k})
        if bad and strict:
            raise ValueError(f"sub-question {k} ({text!r}) refers to #{bad}, not an earlier step")
        refs = [j for j in refs if 1 <= j < k]
        escaped = text.replace("{", "{{").replace("}", "}}")
        body = _REF.sub(
            lambda m, k=k: "{q" + m.group(1) + "}" if 1 <= int(m.group(1)) < k else m.group(0),
            escaped,
        )
        deps = tuple(dict.fromkeys(f"q{j}" for j in refs))
        steps.append(SubQuestion(f"q{k}", body, deps, flags[k - 1]))
    return Plan(question, tuple(steps))
