"""Run the experiments in order (quick mode: the paper's figures and the grounded-QA loop;
--all or --full: every experiment; --only: those named; --smoke: the fast theory figures
alone, a first look in under a minute), with a progress line per experiment and the time
left, then a table of the seconds each took and the files it wrote; ``<out>/README.md``
indexes the results folder (what each experiment is, its files, when it ran)."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Sequence

from experiments import EXPERIMENTS, QUICK, QUICK_SECONDS, SMOKE, _index
from experiments._io import checked_out_dir, parser
from grounding import programs


def _eta(names: Sequence[str], done: dict[str, float]) -> float:
    """Seconds left: the measured quick-mode seconds of the experiments not yet run, scaled by
    how this run compares with them so far."""
    left = sum(QUICK_SECONDS[n] for n in names if n not in done)
    expected = sum(QUICK_SECONDS[n] for n in done)
    return left * (sum(done.values()) / expected if expected else 1.0)


def main(argv: Sequence[str] | None = None) -> int:
    about = (
        " ".join(__doc__.split())
        + " Experiments: "
        + ", ".join(EXPERIMENTS)
        + f". Quick mode ({', '.join(QUICK)}) takes about"
        + f" {sum(QUICK_SECONDS[n] for n in QUICK) / 60:.1f} min on an idle 2-core machine,"
        + f" --all about {sum(QUICK_SECONDS.values()) / 60:.0f} min, --smoke about 7 s"
        + " (measured 2026-11-27)."
    )
    ap = parser(about, "python -m experiments")
    ap.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        default=None,
        help="comma-separated experiments to run (default: the quick set, or every one with "
        "--all / --full, in the order listed above)",
    )
    ap.add_argument(
        "--all",
        action="store_true",
        help="every experiment (quick mode runs " + ", ".join(QUICK) + " unless --all)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help=f"a first look: {', '.join(SMOKE)} in quick mode (under a minute)",
    )
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    names = list(SMOKE if args.smoke else EXPERIMENTS if args.full or args.all else QUICK)
    if args.smoke and (args.full or args.only or args.all):
        ap.error("--smoke runs the fast figures in quick mode: drop --full / --only / --all")
    if args.all and args.only is not None:
        ap.error("--all runs every experiment: drop --only")
    if args.only is not None:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in EXPERIMENTS]
        if unknown or not names:
            ap.error(
                f"--only: unknown experiment(s) {unknown}; choose from {', '.join(EXPERIMENTS)}"
            )
    checked_out_dir(ap, args.out)
    child = ["--full" if args.full else "--quick", "--out", str(args.out)]
    if args.seeds is not None:
        child += ["--seeds", str(args.seeds)]
    mode = "full" if args.full else "quick"
    if not args.full:
        total = sum(QUICK_SECONDS[n] for n in names)
        print(f"{len(names)} experiments, about {total / 60:.1f} min on an idle 2-core machine")
    done: dict[str, float] = {}
    summary = []
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name} ({mode}) ...", flush=True)
        t0 = time.perf_counter()
        paths = importlib.import_module(f"experiments.{name}").main(child)
        done[name] = time.perf_counter() - t0
        summary.append((name, done[name], paths))
        index = _index.record(args.out, name, done[name], paths, mode)
        left = "" if args.full or i == len(names) else f"; about {_eta(names, done):.0f} s left"
        print(f"[{i}/{len(names)}] {name} done in {done[name]:.0f} s{left}", flush=True)
        # each compiled program holds memory maps; one process running every experiment
        # would otherwise reach Linux's default limit (vm.max_map_count = 65,530)
        programs.release_programs()
    width = max(len(n) for n, _, _ in summary)
    print(f"\n{'experiment':<{width}}  seconds  files")
    for name, dt, paths in summary:
        files = ", ".join(str(p) for p in paths)
        print(f"{name:<{width}}  {dt:7.1f}  {files}", flush=True)
    print(f"\nindex of the results: {index[1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
