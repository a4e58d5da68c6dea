"""Run every experiment in order: ``python -m experiments [--quick|--full] [--out DIR]``.

Prints one line per output file written.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Sequence

from experiments import EXPERIMENTS
from experiments._io import parse_args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parse_args(argv, __doc__.splitlines()[0])  # validate once (and create --out)
    for name in EXPERIMENTS:
        t0 = time.perf_counter()
        paths = importlib.import_module(f"experiments.{name}").main(argv)
        dt = time.perf_counter() - t0
        for p in paths:
            print(f"{name}\t{dt:6.1f}s\t{p}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
