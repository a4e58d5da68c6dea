"""How often each property test's premise branch runs (the shares in docs/theory.md).

Runs the theorem test files under the reproducible ``ci-100`` Hypothesis profile with
``--hypothesis-show-statistics`` and prints one markdown row per ``event()`` label:
the share of generated examples in which that branch ran.

    .venv/bin/python scripts/branch_shares.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "tests/core/test_posterior.py",
    "tests/core/test_energy.py",
    "tests/core/test_semiring.py",
    "tests/solver/test_solve.py",
]


def main() -> int:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci-100")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES,
           "--hypothesis-show-statistics"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode:
        print(out.stdout[-3000:], out.stderr[-3000:])
        return out.returncode
    print("| test | branch | share of examples |\n|---|---|---|")
    test = None
    for line in out.stdout.splitlines():
        if m := re.match(r"^tests/\S+::(\S+):$", line):
            test = m.group(1)
        elif (m := re.match(r"^\s+\* ([0-9.]+)%, (.+)$", line)) and test:
            print(f"| `{test}` | {m.group(2)} | {float(m.group(1)):.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
