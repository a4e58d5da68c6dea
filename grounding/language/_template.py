"""A model file's chat template, rendered as untrusted code: in jinja2's immutable sandbox, under
a budget.

A GGUF file carries its chat template as Jinja source; a crafted file can carry a template that
reaches Python objects (the class of CVE-2024-34359) or one that never ends. Rendering here:

- runs in :class:`jinja2.sandbox.ImmutableSandboxedEnvironment` (no attribute of a private or
  internal object, no mutation of a list or dict);
- stops with :class:`TemplateBudgetError` (a ``ValueError``) after :data:`MAX_STEPS` executed
  lines of the compiled template (a loop that never ends, or runs for hours), after
  :data:`MAX_CHARS` characters of output, or at a numeric argument or a string or list
  repetition beyond :data:`MAX_SIZE` (a single call that would allocate gigabytes);
- refuses a template source longer than :data:`MAX_SOURCE` characters.

A rendering template that fails (``raise_exception(...)``, an undefined name, a budget) is a
``ValueError`` naming the model file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from grounding.language._llama import need

__all__ = [
    "ChatTemplate",
    "TemplateBudgetError",
    "MAX_CHARS",
    "MAX_SIZE",
    "MAX_SOURCE",
    "MAX_STEPS",
]

#: Executed lines of the compiled template one render may take (a chat template of a few
#: messages takes a few hundred).
MAX_STEPS = 200_000
#: Characters one render may write (a prompt of a few thousand tokens is tens of thousands).
MAX_CHARS = 1_000_000
#: The largest integer argument of a call (``range``, ``ljust``, ...) and the largest string or
#: list a repetition (``*``) or a power (``**``) may build.
MAX_SIZE = 100_000
#: The longest template source accepted.
MAX_SOURCE = 200_000


class TemplateBudgetError(ValueError):
    """A chat template went past its render budget (module docstring)."""


def _sandbox(origin: str) -> Any:
    sandbox = need("jinja2.sandbox")

    class Budgeted(sandbox.ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context, op, left, right):  # type: ignore[override]
            if (
                op == "**"
                and _number(right)
                and abs(right) > 64
                and _number(left)
                and abs(left) > 1
            ):
                raise TemplateBudgetError(
                    f"{origin}: the chat template raises a number to {right!r}"
                )
            if op == "*":
                for seq, n in ((left, right), (right, left)):
                    if (
                        isinstance(seq, (str, list, tuple))
                        and _number(n)
                        and len(seq) * n > MAX_SIZE
                    ):
                        raise TemplateBudgetError(
                            f"{origin}: the chat template repeats a sequence {n!r} times (over "
                            f"{MAX_SIZE:,} items)"
                        )
            return super().call_binop(context, op, left, right)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja2's names)
            for value in (*args, *kwargs.values()):
                if _number(value) and abs(value) > MAX_SIZE:
                    raise TemplateBudgetError(
                        f"{origin}: the chat template calls {getattr(__obj, '__name__', __obj)!r:.60} "
                        f"with {value!r} (over {MAX_SIZE:,})"
                    )
            return super().call(__context, __obj, *args, **kwargs)

    env = Budgeted()

    def raise_exception(message: object) -> None:  # what Hugging Face templates call
        raise ValueError(f"{origin}: the chat template refuses the conversation: {message}")

    env.globals["raise_exception"] = raise_exception
    return env


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class ChatTemplate:
    """The chat template of a model file (``origin`` names it in every error), compiled once.

    Raises:
        ValueError: the source is not text, is longer than :data:`MAX_SOURCE` characters or
            does not compile (a syntax error), naming ``origin``.
    """

    def __init__(self, source: object, origin: str):
        if not isinstance(source, str):
            raise ValueError(f"{origin}: the chat template is not text ({type(source).__name__})")
        if len(source) > MAX_SOURCE:
            raise ValueError(
                f"{origin}: the chat template has {len(source):,} characters (at most "
                f"{MAX_SOURCE:,} are read)"
            )
        self.origin, self.source = origin, source
        jinja2 = need("jinja2")
        try:
            self._template = _sandbox(origin).from_string(source)
        except jinja2.TemplateError as err:
            raise ValueError(f"{origin}: the chat template does not compile: {err}") from None

    def render(self, **context: Any) -> str:
        """The template rendered with ``context`` under the budget (module docstring).

        Raises:
            ValueError: the template fails or goes past its budget (naming the file).
        """
        jinja2 = need("jinja2")
        steps = 0

        def count(frame, event, arg):  # a trace function: one step per executed line
            nonlocal steps
            if event == "line":
                steps += 1
                if steps > MAX_STEPS:
                    raise TemplateBudgetError(
                        f"{self.origin}: the chat template runs past {MAX_STEPS:,} steps"
                    )
            return count

        previous = sys.gettrace()
        sys.settrace(count)
        try:
            return _join(self._template.generate(**context), self.origin)
        except TemplateBudgetError:
            raise
        except ValueError:
            raise  # raise_exception's refusal, already naming the file
        except (jinja2.TemplateError, TypeError, AttributeError, KeyError, IndexError) as err:
            raise ValueError(
                f"{self.origin}: the chat template fails ({type(err).__name__}: {err})"
            ) from None
        except RecursionError:
            raise TemplateBudgetError(
                f"{self.origin}: the chat template recurses too deep"
            ) from None
        finally:
            sys.settrace(previous)


def _join(chunks: Iterable[str], origin: str) -> str:
    out, n = [], 0
    for chunk in chunks:
        n += len(chunk)
        if n > MAX_CHARS:
            raise TemplateBudgetError(
                f"{origin}: the chat template writes more than {MAX_CHARS:,} characters"
            )
        out.append(chunk)
    return "".join(out)
