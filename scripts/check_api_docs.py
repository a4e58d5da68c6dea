"""Every public name of the package appears in the built API reference.

Usage (after ``mkdocs build``): ``python scripts/check_api_docs.py [SITE_DIR]`` (default
``site``). The public names are ``grounding.__all__`` and the ``__all__`` of each public
module or subpackage directly under ``grounding`` and of ``grounding.retrieval.learned``. A
name is documented
when the site's inventory (``objects.inv``, written by mkdocstrings) lists it under that
module or under ``grounding``, or lists the same object under another public path. Exits 1
and names every undocumented object otherwise.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import zlib
from pathlib import Path

import grounding

#: Public namespaces one level further down.
NESTED = ("grounding.retrieval.learned",)


def inventory(site: Path) -> set[str]:
    """The object names of a Sphinx-format ``objects.inv``."""
    raw = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # four text header lines, then the zlib-compressed body
        header_end = raw.index(b"\n", header_end) + 1
    body = zlib.decompress(raw[header_end:]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line.strip()}


def public_names() -> list[tuple[str, str]]:
    """(module, name) for every public name."""
    out = [("grounding", n) for n in grounding.__all__]
    for info in pkgutil.iter_modules(grounding.__path__, "grounding."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        out += [(info.name, n) for n in getattr(module, "__all__", ())]
    for name in NESTED:
        out += [(name, n) for n in importlib.import_module(name).__all__]
    return out


def _resolve(path: str):
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def missing(site: Path) -> list[str]:
    names = inventory(site)
    documented = {id(o) for o in map(_resolve, names) if o is not None and callable(o)}
    out = []
    for module, name in public_names():
        if f"{module}.{name}" in names or f"grounding.{name}" in names:
            continue
        obj = getattr(importlib.import_module(module), name)
        if not (callable(obj) and id(obj) in documented):
            out.append(f"{module}.{name}")
    return out


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "site")
    if not (site / "objects.inv").exists():
        print(f"{site}/objects.inv not found: run `mkdocs build` first", file=sys.stderr)
        return 2
    gaps = missing(site)
    total = len(public_names())
    if gaps:
        print(f"{len(gaps)} of {total} public names are not in the API reference:")
        print("\n".join(f"  {g}" for g in gaps))
        return 1
    print(f"all {total} public names are in the API reference")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
