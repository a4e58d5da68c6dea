"""Run every experiment in order (or those named by --only); one start line per experiment,
then a table of the seconds each took and the files it wrote."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Sequence

import jax

from experiments import EXPERIMENTS
from experiments._io import checked_out_dir, parser


def main(argv: Sequence[str] | None = None) -> int:
    about = " ".join(__doc__.split()) + " Experiments: " + ", ".join(EXPERIMENTS) + "."
    ap = parser(about, "python -m experiments")
    ap.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        default=None,
        help="comma-separated experiments to run (default: all, in the order listed above)",
    )
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    names = list(EXPERIMENTS)
    if args.only is not None:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in EXPERIMENTS]
        if unknown or not names:
            ap.error(
                f"--only: unknown experiment(s) {unknown}; choose from {', '.join(EXPERIMENTS)}"
            )
    checked_out_dir(ap, args.out)
    child = ["--full" if args.full else "--quick", "--out", str(args.out)]
    summary = []
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name} ({'full' if args.full else 'quick'}) ...", flush=True)
        t0 = time.perf_counter()
        paths = importlib.import_module(f"experiments.{name}").main(child)
        summary.append((name, time.perf_counter() - t0, paths))
        # each compiled program holds memory maps; one process running every experiment
        # would otherwise reach Linux's default limit (vm.max_map_count = 65,530)
        jax.clear_caches()
    width = max(len(n) for n, _, _ in summary)
    print(f"\n{'experiment':<{width}}  seconds  files")
    for name, dt, paths in summary:
        files = ", ".join(str(p) for p in paths)
        print(f"{name:<{width}}  {dt:7.1f}  {files}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
