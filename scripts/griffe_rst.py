"""A griffe extension for the API reference (``mkdocs.yml``): the package's docstrings use a
few reStructuredText constructs, which it turns into the Markdown the site renders.

- ``:math:`x``` becomes inline math ``$x$``, and a ``.. math::`` block display math;
- ``:func:`~a.b```, ``:class:``, ``:meth:``, ``:attr:``, ``:data:``, ``:mod:`` become code
  spans (``~`` keeps the last dotted component, as in Sphinx);
- a doctest (``>>>`` lines and the output up to the next blank line) becomes a ``pycon``
  code block, so its output is shown as code rather than read as Markdown.
"""

from __future__ import annotations

import re
import textwrap

import griffe

_MATH = re.compile(r":math:`([^`]+)`")
_ROLE = re.compile(r":(?:func|class|meth|attr|data|mod|obj|exc):`(~?)([^`]+)`")
_BLOCK = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*\n((?:(?P=indent)[ \t]*\n)*)"
                    r"(?P<body>(?:(?P=indent)[ \t]+\S.*\n|[ \t]*\n)+)", re.M)  # fmt: skip


_DOCTEST = re.compile(r"^(?P<indent>[ \t]*)>>> .*\n(?:(?P=indent)\S.*\n)*", re.M)


def _doctest(m: re.Match) -> str:
    indent = m["indent"]
    return f"{indent}```pycon\n{m[0]}{indent}```\n"


def _block(m: re.Match) -> str:
    body = textwrap.dedent(m["body"]).strip("\n")
    return f"{m['indent']}$$\n{body}\n$$\n\n"


def _role(m: re.Match) -> str:
    name = m[2].split(".")[-1] if m[1] else m[2]
    return f"`{name}`"


def convert(text: str) -> str:
    """The Markdown form of a docstring written with the reST constructs above."""
    text = _BLOCK.sub(_block, text if text.endswith("\n") else text + "\n")
    text = _DOCTEST.sub(_doctest, text)
    text = _MATH.sub(lambda m: f"${m[1]}$", text)
    return _ROLE.sub(_role, text).rstrip("\n")


class ReSTRoles(griffe.Extension):
    """Rewrites every docstring as it is loaded (see :func:`convert`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
