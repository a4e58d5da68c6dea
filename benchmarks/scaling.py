"""How the path engine's cost grows with the work: time and memory vs edges, time vs sources.

Uniform random directed multigraphs with average degree 10 (``n_nodes = |E| / 10``), float32
costs U(0, 1), ``EdgeIndex.energy_field`` under ``jit`` with 3 hops, tau 1.0, seed 0:

1. |E| in 10k ... 10M at 64 sources: index build, first call (compile) and median warm call
   time, and peak RSS;
2. sources S in 1 ... 256 at |E| = 1M: the same timings.

Each configuration runs in its own ``spawn`` child, so its peak RSS (``VmHWM``) is its own; the
memory that scales is the increment over the child's baseline (imports and a 10k-edge warm-up
call, which also loads the compiled kernels). A configuration that fails (``MemoryError``, a
crashed child) is recorded with its reason and the run goes on. Log-log slopes are fitted by
least squares: time and memory vs |E| over the points from ``FIT_MIN_EDGES`` edges, time vs S
over all points; the figure (``docs/assets/scaling.png``) shows points, fits and slopes.

Run: ``python benchmarks/scaling.py [--quick] [--backends fused,ell] [--out results.json]
[--figure PATH]`` from the repository root (``--quick``: |E| up to 300k and S up to 64 at
300k edges, about a minute; ``--edges 1e4,3e4 --sources 1,4 --sources-at 1e4`` override
the sweeps). The last line printed is ``scaling_slope_edges=<a>
scaling_slope_sources=<b> scaling_slope_memory=<c>``, for the first backend listed (default:
the default backend): time ~ |E|^a at 64 sources, time ~ S^b, peak-memory increment ~ |E|^c.
The exit status is 1 when a configuration failed (its slopes then use the points left).
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np
from _common import (
    in_child,
    machine,
    median_time,
    parser,
    peak_rss_mib,
    random_graph,
    save_png,
    sig3,
    write_json,
)

SEED, HOPS, TAU, DEGREE, SOURCES = 0, 3, 1.0, 10, 64
FIT_MIN_EDGES = 100_000
WARMUP = (1_000, 10_000, 8)  # nodes, edges, sources of the warm-up call before the baseline
FULL = dict(
    edges=[10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000],
    sources=[1, 4, 16, 64, 256],
    sources_at=1_000_000,
    budget_s=3.0,
    max_repeats=50,
)
QUICK = dict(
    edges=[10_000, 30_000, 100_000, 300_000],
    sources=[1, 4, 16, 64],
    sources_at=300_000,
    budget_s=1.0,
    max_repeats=20,
)
MIN_REPEATS = 3


def run_config(n_edges, n_sources, backend, budget_s, max_repeats) -> dict:
    """In a spawn child: warm up, then build the index, time the first and warm calls."""
    import jax
    import jax.numpy as jnp

    import grounding

    f = jax.jit(lambda idx, c, s: idx.energy_field(c, s, max_hops=HOPS, tau=TAU))

    def prepare(n_nodes, n_edges, n_sources):
        head, tail, cost, sources = random_graph(n_nodes, n_edges, n_sources, SEED)
        t0 = time.perf_counter()
        index = grounding.semiring.EdgeIndex.from_edges(head, tail, n_nodes, backend=backend)
        index = jax.block_until_ready(index)
        build_s = time.perf_counter() - t0
        return index, jnp.asarray(cost), jnp.asarray(sources), build_s

    t0 = time.perf_counter()
    index, c, s, _ = prepare(*WARMUP)
    f(index, c, s).block_until_ready()
    warmup_s = time.perf_counter() - t0
    baseline = peak_rss_mib()

    n_nodes = n_edges // DEGREE
    index, c, s, build_s = prepare(n_nodes, n_edges, n_sources)
    t0 = time.perf_counter()
    f(index, c, s).block_until_ready()
    first_s = time.perf_counter() - t0
    call = lambda: f(index, c, s).block_until_ready()  # noqa: E731
    probe = median_time(call, 1)  # one more warm call, discarded: it sizes the repeats
    repeats = int(min(max(budget_s / probe, MIN_REPEATS), max_repeats))
    run_s = median_time(call, repeats)
    peak = peak_rss_mib()
    rss = dict(baseline=baseline, peak=peak, increment=peak - baseline)
    return dict(
        backend=index.backend,
        edges=n_edges,
        nodes=n_nodes,
        sources=n_sources,
        ok=True,
        warmup_s=warmup_s,
        build_s=build_s,
        first_call_s=first_s,
        run_s=run_s,
        repeats=repeats,
        rss_mib=rss,
        load=os.getloadavg()[0],  # 1-min load: other work on the machine inflates the times
    )


def measure(n_edges, n_sources, backend, cfg) -> dict:
    """One configuration in its own child; a failure is recorded, not raised."""
    try:
        r = in_child(run_config, n_edges, n_sources, backend, cfg["budget_s"], cfg["max_repeats"])
    except Exception as e:  # MemoryError, BrokenProcessPool (a killed child), ...
        reason = f"{type(e).__name__}: {e}"
        r = dict(backend=backend, edges=n_edges, sources=n_sources, ok=False, error=reason)
        print(f"  {backend:<5} |E|={n_edges:>10,} S={n_sources:>4}  FAILED ({reason})", flush=True)
        return r
    print(
        f"  {backend:<5} |E|={n_edges:>10,} S={n_sources:>4}  run {r['run_s']:.4g} s"
        f" (median of {r['repeats']}), build {r['build_s']:.3g} s, first call"
        f" {r['first_call_s']:.3g} s, peak RSS {r['rss_mib']['peak']:.0f} MiB"
        f" (+{r['rss_mib']['increment']:.0f} over {r['rss_mib']['baseline']:.0f}),"
        f" load {r['load']:.1f}",
        flush=True,
    )
    return r


def fit(rows, x_key, y) -> dict:
    """Least-squares line through ``(log x, log y(row))``: slope, prefactor and the x used."""
    rows = [r for r in rows if y(r) > 0]  # a log needs them; a memory increment can be 0
    xs = [r[x_key] for r in rows]
    if len(rows) < 2:
        return dict(slope=math.nan, prefactor=math.nan, points=xs)
    slope, intercept = np.polyfit(np.log(xs), np.log([y(r) for r in rows]), 1)
    return dict(slope=float(slope), prefactor=float(np.exp(intercept)), points=xs)


def run_time(row: dict) -> float:
    return row["run_s"]


def memory(row: dict) -> float:
    return row["rss_mib"]["increment"]


def fits(edge_rows, source_rows) -> dict:
    big = [r for r in edge_rows if r["ok"] and r["edges"] >= FIT_MIN_EDGES]
    return dict(
        edges=fit(big, "edges", run_time),
        sources=fit([r for r in source_rows if r["ok"]], "sources", run_time),
        memory=fit(big, "edges", memory),
    )


def figure(path, results, slopes) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_e, ax_s) = plt.subplots(1, 2, figsize=(11, 5))
    ax_m = ax_e.twinx()
    for i, (backend, res) in enumerate(results.items()):
        color = f"C{i}"
        panels = [(ax_e, "edges", "edges", run_time), (ax_m, "edges", "memory", memory),
                  (ax_s, "sources", "sources", run_time)]  # fmt: skip
        for ax, sweep, key, y in panels:
            style = dict(color=color, alpha=0.5 if y is memory else 1.0)
            ok = [r for r in res[sweep] if r["ok"]]
            ax.plot([r[sweep] for r in ok], [y(r) for r in ok], "s" if y is memory else "o",
                    **style)  # fmt: skip
            f = slopes[backend][key]
            if not math.isnan(f["slope"]):
                x = np.array([min(f["points"]), max(f["points"])], float)
                what = "memory" if y is memory else "time"
                ax.plot(x, f["prefactor"] * x ** f["slope"], "--" if y is memory else "-",
                        label=f"{backend} {what}, slope {f['slope']:.2f}", **style)  # fmt: skip
    ax_e.set(xscale="log", yscale="log", xlabel="edges |E| (64 sources)", ylabel="time (s)")
    ax_m.set(yscale="log", ylabel="peak RSS over baseline (MiB)")
    ax_s.set(xscale="log", yscale="log", xlabel="sources S", ylabel="time (s)")
    handles = [h for ax in (ax_e, ax_m) for h in ax.get_legend_handles_labels()[0]]
    below = dict(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
    if handles:  # below the panels, where no point hides them
        ax_m.legend(handles=handles, **below)
    if ax_s.get_legend_handles_labels()[0]:
        ax_s.legend(**below)
    ax_e.set_title(f"time and memory vs |E| (fits from {FIT_MIN_EDGES:,} edges)")
    at = {r["edges"] for res in results.values() for r in res["sources"]}
    ax_s.set_title(f"time vs sources at |E| = {', '.join(f'{e:,}' for e in sorted(at))}")
    fig.suptitle(f"energy_field, {HOPS} hops, tau {TAU}, float32, average degree {DEGREE}")
    fig.tight_layout()
    save_png(fig, path, dpi=120)
    plt.close(fig)


def size(text: str) -> int:
    return int(float(text))  # 1e6 or 1000000


def sizes(text: str) -> list[int]:
    return [size(x) for x in text.split(",")]


def main() -> int:
    ap = parser(__doc__.split("\n")[0], quick="|E| <= 300k, S <= 64, ~1 minute")
    ap.add_argument("--backends", help="comma-separated, e.g. fused,ell (default: default)")
    ap.add_argument("--edges", type=sizes, help="override the |E| sweep, e.g. 1e4,3e4")
    ap.add_argument("--sources", type=sizes, help="override the S sweep, e.g. 1,4")
    ap.add_argument("--sources-at", type=size, help="|E| of the S sweep")
    ap.add_argument("--figure", default="docs/assets/scaling.png", help="figure path")
    args = ap.parse_args()
    import grounding

    mode, cfg = ("quick", dict(QUICK)) if args.quick else ("full", dict(FULL))
    for key in ("edges", "sources", "sources_at"):
        if getattr(args, key) is not None:
            cfg[key], mode = getattr(args, key), "custom"
    backends = args.backends.split(",") if args.backends else [grounding.semiring.default_backend()]
    m = machine()
    print(
        f"machine: {m['cpu']}, {m['cores']} cores, 1-min load {m['load']}; python {m['python']},"
        f" numpy {m['numpy']}, jax {m['jax']}"
    )
    print(
        f"mode {mode}: backends {backends}; hops={HOPS}, tau={TAU}, float32, seed={SEED},"
        f" n_nodes = |E|/{DEGREE}; |E| {cfg['edges']} at S={SOURCES}; S {cfg['sources']} at"
        f" |E|={cfg['sources_at']:,}; one spawn child per configuration; warm-call medians"
        f" of {MIN_REPEATS}..{cfg['max_repeats']} (~{cfg['budget_s']} s each)"
    )
    results, slopes = {}, {}
    for backend in backends:
        print(f"{backend}: time and memory vs |E|", flush=True)
        edge_rows = [measure(e, SOURCES, backend, cfg) for e in cfg["edges"]]
        done = {(r["edges"], r["sources"]): r for r in edge_rows}
        print(f"{backend}: time vs S", flush=True)
        source_rows = [
            done.get((cfg["sources_at"], s)) or measure(cfg["sources_at"], s, backend, cfg)
            for s in cfg["sources"]
        ]
        results[backend] = dict(edges=edge_rows, sources=source_rows)
        slopes[backend] = fits(edge_rows, source_rows)
    for backend, f in slopes.items():
        print(
            f"{backend}: time ~ |E|^{f['edges']['slope']:.3f} over |E| {f['edges']['points']};"
            f" memory increment ~ |E|^{f['memory']['slope']:.3f} over the same;"
            f" time ~ S^{f['sources']['slope']:.3f} over S {f['sources']['points']}"
        )
    failed = [r for res in results.values() for rows in res.values() for r in rows if not r["ok"]]
    for r in failed:
        print(f"failed: {r['backend']} |E|={r['edges']:,} S={r['sources']}: {r['error']}")
    figure(args.figure, results, slopes)
    print(f"figure: {args.figure}")
    first = slopes[backends[0]]
    final = {f"scaling_slope_{k}": first[k]["slope"] for k in ("edges", "sources", "memory")}
    if args.out:
        config = dict(
            cfg,
            backends=backends,
            hops=HOPS,
            tau=TAU,
            seed=SEED,
            degree=DEGREE,
            edge_sweep_sources=SOURCES,
            fit_min_edges=FIT_MIN_EDGES,
            warmup=WARMUP,
        )
        data = dict(machine=m, mode=mode, config=config, results=results, fits=slopes)
        write_json(args.out, dict(data, final=final))
    print(" ".join(f"{k}={sig3(v)}" for k, v in final.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
