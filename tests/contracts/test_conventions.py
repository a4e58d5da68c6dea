"""Conventions with one home, checked over the package's source: American spelling in every
identifier (as JAX and NumPy spell), one positive-integer check, one inverse-relation suffix,
an annotation on every parameter of a public function."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "grounding"

#: Words whose British and American spellings agree ("raise", "noise", ...): never flagged.
SAME_IN_BOTH = {
    "advise", "arise", "clockwise", "comprise", "concise", "devise", "elementwise",
    "exercise", "exercised", "likewise", "noise", "noised", "otherwise", "pairwise",
    "piecewise", "precise", "premise", "premises", "promise", "raise", "raised", "raises",
    "raising", "revise", "rise", "stepwise", "surprise", "wise", "rowwise", "columnwise",
}  # fmt: skip
BRITISH = re.compile(r"(is(e|ed|es|er|ers|ing|ation|ations)|our|ours|oured|elled|elling)$")
AMERICAN_OUR = {"four", "our", "hour", "hours", "your", "yours", "tour", "pour", "flour", "sour"}


def _words(name: str) -> list[str]:
    """The words of an identifier: snake_case and CamelCase parts, lower-cased."""
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", name)
    return [p.lower() for p in parts]


def british_identifiers(source: str) -> set[str]:
    """Identifiers of ``source`` (names, not comments or strings) with a British spelling."""
    found = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.NAME:
            continue
        for w in _words(tok.string):
            if w in SAME_IN_BOTH or w in AMERICAN_OUR or len(w) < 5:
                continue
            if BRITISH.search(w):
                found.add(tok.string)
    return found


def test_british_spellings_are_flagged_and_american_ones_are_not():
    src = "def normalise(x): Realisation = colour = labelled = 1\nraise_ = noise = hours = 2\n"
    assert british_identifiers(src) == {"normalise", "Realisation", "colour", "labelled"}
    assert (
        british_identifiers("def normalize(Realization, color, labeled, otherwise): pass") == set()
    )


def test_every_identifier_of_the_package_is_spelled_the_american_way():
    bad = {
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in PACKAGE.rglob("*.py")
        for name in british_identifiers(path.read_text())
    }
    assert not bad, sorted(bad)


HAND_WRITTEN_INT_CHECK = re.compile(
    r"isinstance\(\s*[\w.]+,\s*bool\s*\)\s*or\s+not\s+isinstance\(\s*[\w.]+,\s*"
    r"(int|\(int, np\.integer\)|int \| np\.integer)\s*\)"
)


def test_one_integer_check():
    """Integers are checked by ``grounding._checks.check_int`` alone (one message, one rule:
    Python or NumPy ints, ``bool`` rejected), not re-written module by module."""
    assert HAND_WRITTEN_INT_CHECK.search(
        "if isinstance(v, bool) or not isinstance(v, (int, np.integer)):"
    )
    assert HAND_WRITTEN_INT_CHECK.search(
        "if (\n  isinstance(k, bool)\n  or not isinstance(k, int)\n)"
    )
    bad = [
        f"{path.relative_to(PACKAGE.parent)}: {m.group(0)!r}"
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "_checks.py"
        for m in HAND_WRITTEN_INT_CHECK.finditer(path.read_text())
    ]
    assert not bad, bad


def test_one_inverse_relation_suffix():
    """Relations read backwards are named in one place (``grounding.graph.INVERSE_SUFFIX``,
    ``inverse_relation``), not by a suffix literal module by module."""
    from grounding.graph import INVERSE_SUFFIX, inverse_relation

    assert inverse_relation(inverse_relation("r")) == "r" != inverse_relation("r")
    assert inverse_relation("r") == "r" + INVERSE_SUFFIX
    literal = re.compile(r"""["']\^-1["']""")
    bad = [
        f"{path.relative_to(PACKAGE.parent)}:{i}"
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "graph" / "__init__.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert not bad, bad


def unannotated_parameters(source: str) -> list[str]:
    """``name(param, ...)`` of every public function of ``source`` (at module level or in a
    class body; name without a leading underscore, plus ``__init__`` and ``__call__`` of
    public classes) with a parameter other than ``self``/``cls`` that has no annotation."""
    out = []

    def check(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None) -> None:
        a = fn.args
        params = [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]
        params = [p for p in params if p is not None]
        if owner is not None and params and params[0].arg in ("self", "cls"):
            params = params[1:]
        bad = [p.arg for p in params if p.annotation is None]
        if bad:
            name = fn.name if owner is None else f"{owner}.{fn.name}"
            out.append(f"{name}({', '.join(bad)}):{fn.lineno}")

    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.parse(source).body:
        if isinstance(node, functions) and not node.name.startswith("_"):
            check(node, None)
        elif isinstance(node, ast.ClassDef):
            dunders = () if node.name.startswith("_") else ("__init__", "__call__")
            for sub in node.body:
                if isinstance(sub, functions) and (
                    not sub.name.startswith("_") or sub.name in dunders
                ):
                    check(sub, node.name)
    return out


def test_unannotated_parameters_are_flagged():
    src = (
        "def f(a, b: int, *args, c, **kw): pass\n"
        "def g(self, x: int, *, y: str = '') -> None: pass\n"
        "def _private(a): pass\n"
        "def outer(a: int):\n    def inner(b): pass\n"
        "class C:\n"
        "    def __init__(self, n): pass\n"
        "    def m(self, x): pass\n"
        "    @classmethod\n    def k(cls, y: int): pass\n"
        "    def _helper(self, z): pass\n"
        "    def __repr__(self): pass\n"
        "class _Hidden:\n    def __init__(self, n): pass\n    def m(self, x): pass\n"
    )
    assert unannotated_parameters(src) == [
        "f(a, args, c, kw):1",
        "g(self):2",  # a module-level function's first parameter is a parameter
        "C.__init__(n):7",
        "C.m(x):8",
        "_Hidden.m(x):15",
    ]


def test_public_functions_annotate_their_parameters():
    """Every public function and method of the package (not a closure, not ``_private``)
    annotates each of its parameters (``self``/``cls`` aside)."""
    bad = [
        f"{path.relative_to(PACKAGE.parent)}: {found}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for found in unannotated_parameters(path.read_text())
    ]
    assert not bad, "\n".join(bad)
