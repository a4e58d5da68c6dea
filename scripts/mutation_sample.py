"""A uniform random sample of a module's mutants, for modules too slow to run in full.

Mutants of the jitted ``ground`` pipeline each recompile every program their tests use (the
mutated function changes the traced computation, so JAX's compilation cache misses): a few
hundred fit in an hour on 2 cores, not the ~2,000 the pipeline modules generate. A uniform
sample estimates the module's score without bias; ``scripts/mutation_report.py`` scores a
sampled module on its sample only and prints a 95 % (Wilson) interval.

    .venv/bin/python scripts/mutation_sample.py draw 0.1 grounding/solver.py ...  # after a run
    .venv/bin/python scripts/mutation_sample.py names      # the sampled names, for mutmut run

``draw`` reads the mutant names ``mutmut`` generated under ``mutants/`` (any ``mutmut run``
generates them all), draws ``fraction`` of each module's mutants with a fixed seed and writes
``scripts/mutation_sample.toml``. Names stay valid while the function's source is unchanged,
like those in ``scripts/mutation_equivalents.toml``.
"""

from __future__ import annotations

import json
import random
import sys
import tomllib
from pathlib import Path

from grounding.io import atomic_write_bytes

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "scripts" / "mutation_sample.toml"
SEED = 0


def load() -> dict[str, list[str]]:
    """``{module path: sampled mutant names}`` (empty without a sample file)."""
    tables = tomllib.loads(SAMPLE.read_text()) if SAMPLE.exists() else {}
    return {module: table["names"] for module, table in tables.items()}


def draw(fraction: float, modules: list[str]) -> dict[str, list[str]]:
    out = load()
    for module in modules:
        meta = ROOT / "mutants" / f"{module}.meta"
        if not meta.exists():
            raise SystemExit(f"{meta}: no mutants generated yet (run ./scripts/mutation.sh first)")
        names = sorted(json.loads(meta.read_text())["exit_code_by_key"])
        if not names:
            continue  # nothing to mutate in this module
        k = min(len(names), max(1, round(fraction * len(names))))
        out[module] = sorted(random.Random(f"{SEED}:{module}").sample(names, k))
    lines = [
        "# Uniform random samples of the mutants of modules too slow to run in full",
        "# (scripts/mutation_sample.py; seed 0). Scored on the sample by mutation_report.py.",
    ]
    for module, names in sorted(out.items()):
        lines.append(f'\n["{module}"]')
        lines.append(f"# {len(names)} mutants")
        lines.append("names = [")
        lines += [f'    "{n}",' for n in names]
        lines.append("]")
    atomic_write_bytes(SAMPLE, ("\n".join(lines) + "\n").encode())
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["names"]:
        print("\n".join(n for names in load().values() for n in names))
        return 0
    if argv[:1] == ["draw"] and len(argv) >= 3:
        draw(float(argv[1]), argv[2:])
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
