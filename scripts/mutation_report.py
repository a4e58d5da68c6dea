"""Per-module mutation scores from the verdicts ``mutmut run`` cached under ``mutants/``.

Run from the repository root (``./scripts/mutation.sh report``). Prints the table that
``docs/theory.md`` records, then every surviving mutant that is neither a message-label
mutant nor listed as equivalent in ``scripts/mutation_equivalents.toml`` (with its diff).

A surviving mutant is classified as

- ``label``: it only changes the argument *name* a validation helper (``check_*``,
  ``as_float_array``) prints in its error message (a string literal replaced, emptied or
  dropped); the computation is unchanged, so no test of the mathematics can kill it;
- ``equivalent``: listed, with the reason, in ``scripts/mutation_equivalents.toml``;
- ``unobservable``: listed under ``[unobservable]`` there: the mutant differs from the original
  only in what ``mutmut``'s own trampoline frames hide (a warning's ``stacklevel``); a named
  test checks the behavior outside mutation runs. Not counted, and reported beside the score;
- ``survived``: a test gap. The score is killed / (generated - label - equivalent - unobservable).

A module listed in ``scripts/mutation_sample.toml`` is scored on its uniform random sample of
mutants only (``scripts/mutation_sample.py``), with a 95 % Wilson interval for the score.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from mutation_sample import load as load_sample  # noqa: E402

sys.path.insert(0, str(ROOT))
from experiments._stats import wilson  # noqa: E402

EQUIVALENTS = ROOT / "scripts" / "mutation_equivalents.toml"
LABEL_HELPER = re.compile(r"^(check_\w+|as_float_array|_no_nan|_scalar)$")
LABEL_KEYWORDS = {"name", "name_a", "name_b"}
# failed test, pytest error, timeout, type check; -9: SIGKILL, from mutmut's CPU-time limit or
# from the memory watchdog of scripts/mutation.sh (a mutant whose loop never ends)
KILLED = {1, 3, 36, 37, 24, -24, 152, 255, -9}


def _differences(a, b, parent=None):
    """Pairs of the smallest differing sub-trees of two ASTs, with their parent."""
    if type(a) is not type(b):
        return [(a, b, parent)]
    if isinstance(a, list):
        if len(a) != len(b):
            return [(a, b, parent)]
        return [d for x, y in zip(a, b) for d in _differences(x, y, parent)]
    if not isinstance(a, ast.AST):
        return [] if a == b else [(a, b, parent)]
    out = []
    for field in a._fields:
        x, y = getattr(a, field, None), getattr(b, field, None)
        sub = _differences(x, y, a)
        if sub and not isinstance(x, (ast.AST, list)):  # a differing leaf value
            return [(a, b, parent)]
        out += sub
    return out


def _is_label(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _label_only(orig_src: str, mut_src: str) -> bool:
    """True when the mutant only changes the name label passed to a validation helper."""
    a, b = ast.parse(orig_src), ast.parse(mut_src)
    b.body[0].name = a.body[0].name  # x_f__mutmut_orig vs x_f__mutmut_3
    diffs = _differences(a, b)
    if not diffs:
        return False
    for a, b, parent in diffs:
        if isinstance(a, list):  # an argument dropped: the dropped one must be a label
            if not (isinstance(parent, ast.Call) and LABEL_HELPER.match(_callee(parent))):
                return False
            if not (
                len(b) == len(a) - 1 and sum(_is_label(x) for x in a) > sum(_is_label(x) for x in b)
            ):
                return False
            continue
        if isinstance(parent, ast.keyword):
            if parent.arg not in LABEL_KEYWORDS:
                return False
            continue
        ok = (
            _is_label(a)
            and (b is None or _is_label(b) or (isinstance(b, ast.Constant) and b.value is None))
            and isinstance(parent, ast.Call)
            and LABEL_HELPER.match(_callee(parent))
        )
        if not ok:
            return False
    return True


@functools.cache
def _mutants_module(path: Path):
    from mutmut.mutation.diff_apply import read_mutants_module

    return read_mutants_module(path)  # parsed once per file, not once per survivor


def _sources(name: str, path: Path) -> tuple[str, str]:
    import libcst as cst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function

    module = _mutants_module(path)
    orig = read_original_function(module, name)
    mut = read_mutant_function(module, name)
    return tuple(cst.Module([f]).code.strip() for f in (orig, mut))


def collect():
    tables = tomllib.loads(EQUIVALENTS.read_text()) if EQUIVALENTS.exists() else {}
    equivalents, unobservable = tables.get("equivalent", {}), tables.get("unobservable", {})
    samples = load_sample()
    rows, gaps = [], []
    for meta in sorted((ROOT / "mutants" / "grounding").rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        path = meta.relative_to(ROOT / "mutants").with_suffix("")
        c = Counter()
        if str(path) in samples:
            c["population"] = len(codes)
            # a sampled name the module no longer generates (its function changed) is not run:
            # redraw the sample (scripts/mutation_sample.py draw)
            codes = {name: codes.get(name) for name in samples[str(path)]}
        for name, code in codes.items():
            c["generated"] += 1
            if code in KILLED:
                c["killed"] += 1
            elif code is None:
                c["not run"] += 1
            elif code in (0, 5, 33):  # survived, or no test reaches it
                orig, mut = _sources(name, path)
                if _label_only(orig, mut):
                    c["label"] += 1
                elif name in equivalents:
                    c["equivalent"] += 1
                elif name in unobservable:
                    c["unobservable"] += 1
                else:
                    c["survived"] += 1
                    gaps.append((name, path))
            else:
                c["other"] += 1
        rows.append((str(path), c))
    return rows, gaps


def main() -> int:
    os.chdir(ROOT)  # mutmut resolves mutants/ and pyproject.toml against the working directory
    rows, gaps = collect()
    if not rows:
        print("no verdicts under mutants/: run ./scripts/mutation.sh first")
        return 1
    head = "| module | generated | killed | survived | equivalent | label-only | score |"
    print(head)
    print("|" + "---|" * 7)
    for path, c in rows:
        denom = c["generated"] - c["label"] - c["equivalent"] - c["unobservable"]
        denom -= c["not run"] + c["other"]
        score = f"{100 * c['killed'] / denom:.1f} %" if denom else "n/a"
        extra = f" ({c['not run']} not run)" if c["not run"] else ""
        if c["population"]:
            lo, hi = wilson(c["killed"], denom)
            extra += (
                f" (uniform sample of {c['generated']} of {c['population']} mutants; "
                f"95 % interval {100 * lo:.0f}-{100 * hi:.0f} %)"
            )
        if c["unobservable"]:
            extra += f" ({c['unobservable']} unobservable under mutmut)"
        print(
            f"| `{path}` | {c['generated']} | {c['killed']} | {c['survived']} | "
            f"{c['equivalent']} | {c['label']} | {score}{extra} |"
        )
    if gaps:
        from mutmut.mutation.diff_apply import get_diff_for_mutant

        print(f"\n{len(gaps)} surviving mutants without a test or a reason:\n")
        for name, path in gaps:
            print(get_diff_for_mutant(name, path=path).split("\n", 2)[-1], "\n#", name, "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
