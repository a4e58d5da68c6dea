"""The planner protocol and its error, shared by every planner module."""

from __future__ import annotations

from typing import Any, Protocol

from grounding.plans.dag import Plan

__all__ = ["PlanError", "Planner"]


class PlanError(ValueError):
    """A planner could not produce a valid plan (the message says why)."""


class Planner(Protocol):
    """Anything that plans: ``plan(question) -> Plan``."""

    name: str

    def plan(self, question: Any) -> Plan: ...


def _escape(text: str) -> str:
    """``text`` with its braces doubled (literal in a step's slot template)."""
    return text.replace("{", "{{").replace("}", "}}")
