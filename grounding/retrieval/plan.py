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
import string
from collections.abc import Mapping

__all__ = ["SubQuestion", "Plan"]


@dataclasses.dataclass(frozen=True)
class SubQuestion:
    """One step of a plan.

    Attributes:
        id: a unique identifier (a Python identifier, so it can name a slot).
        text: the sub-question; ``{dep}`` marks where dependency ``dep``'s answer goes.
        depends_on: ids of the sub-questions whose answers this one needs (progress edges).
        abstract: a broad question (community / global retrieval) rather than a specific one
            (local neighbourhood retrieval).
    """

    id: str
    text: str
    depends_on: tuple[str, ...] = ()
    abstract: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.id, str) and self.id.isidentifier()):
            raise ValueError(f"sub-question id must be an identifier, got {self.id!r}")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"sub-question {self.id!r} has no text")
        deps = tuple(self.depends_on)
        if isinstance(self.depends_on, str) or len(set(deps)) != len(deps):
            raise ValueError(f"{self.id}.depends_on must be distinct ids, got {self.depends_on!r}")
        object.__setattr__(self, "depends_on", deps)
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

    Raises:
        ValueError: a duplicate id, a dependency on an unknown step (dangling reference), a
            cycle, or an unknown ``final``.

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
        return Plan(self.question, tuple(steps), self.final)
