"""A long-lived process: memory maps, resident memory, compilations and latency of the solver
against the number of calls, for two workloads run in one process each.

Run: ``python benchmarks/soak.py [--calls 100000] [--workload mixed|service|both]
[--every 1000] [--seed 0] [--out results/bench_soak.json] [--plot docs/assets/soak.png]``.
Last line: ``maps_plateau=<max maps over the last half of the calls> rss_plateau_mb=<max RSS
there> compiles_after_warmup=<compilations there> recompiles_after_warmup=<of them, programs
compiled again after the cap evicted them>``, over the workloads; each workload's line also
gives ``rss_mb_per_compile``, what the RSS grew per compilation over the last half.

- ``mixed``: each call grounds a random batch (1-32 questions) against one of 48 random graphs
  (10-2,000 nodes, about 3 edges per node, 4 relation types): per question a random kind
  (answer candidates with 1-4 anchors and walks of 1-3 hops, or claim chains of 1-3 hops),
  1-100 candidates, ``tau`` 0 or 0.5; a batch of one goes through :func:`grounding.ground`,
  larger ones through :func:`grounding.ground_batch` (shared or per-question evidence).
- ``service``: a stream of single questions through :class:`grounding.qa.GroundedQA` on
  CoDEx-M (path-constrained retrieval from the topic, 1- and 2-hop templated questions, 20
  candidates from a KGE answerer with random embeddings), as a service answers them.

Every ``--every`` calls the script records the process's memory maps (``/proc/self/maps``),
its RSS, the compilations so far (every backend compilation of the process, counted by a JAX
monitoring listener, and the solver's own, :func:`grounding.programs.program_info`) and the
p50 / p99 latency of the calls since the last record. The plateau is taken over the last
half of the calls: the bound a process running this workload for longer stays under.
After the last call the script calls :func:`grounding.programs.release_programs` and records
the maps and RSS again (``released``: what a release returns, and what stays). While it runs,
``<out>.<workload>.partial`` holds the curve so far. Linux only (``/proc``).
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np
from _common import in_child, machine, output_file, parser, save_png, write_json

GRAPHS, RELATIONS = 48, ("r0", "r1", "r2", "r3")


def maps() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Compiles:
    """Every backend compilation of the process (JAX's monitoring event)."""

    def __init__(self):
        import jax

        self.count = 0
        jax.monitoring.register_event_duration_secs_listener(self._on)

    def _on(self, event: str, duration: float, **_) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            self.count += 1


def _graphs(rng):
    import grounding as g

    out = []
    for _ in range(GRAPHS):
        n = int(round(math.exp(rng.uniform(math.log(10), math.log(2000)))))
        m = 3 * n
        head, tail = rng.integers(0, n, m), rng.integers(0, n, m)
        out.append(
            g.TypedGraph(
                head=head.astype(np.int32),
                relation=rng.integers(0, len(RELATIONS), m).astype(np.int32),
                tail=tail.astype(np.int32),
                reliability=rng.uniform(0.5, 1.0, m).astype(np.float32),
                entities=tuple(f"e{i}" for i in range(n)),
                relations=RELATIONS,
            )
        )
    return out


def _question(rng, graph):
    import grounding as g

    n = graph.n_nodes
    c = min(int(rng.integers(1, 101)), graph.n_nodes)
    lp = np.log(rng.dirichlet(np.ones(c)) + 1e-12)
    names = graph.entities
    if rng.random() < 0.5:  # answer candidates
        anchors = tuple(names[i] for i in rng.choice(n, min(n, int(rng.integers(1, 5))), False))
        cands = tuple(names[i] for i in rng.choice(n, c, False))
        return g.GroundingProblem("q", cands, lp, anchors=anchors, max_hops=int(rng.integers(1, 4)))
    hops = int(rng.integers(1, 4))
    topic = names[int(rng.integers(n))]
    rels = tuple(RELATIONS[i] for i in rng.integers(0, len(RELATIONS), hops))
    chains = tuple(
        g.ClaimChain((topic, *[None] * (hops - 1), names[int(rng.integers(n))]), rels)
        for _ in range(c)
    )
    return g.GroundingProblem("q", chains, lp)


def mixed(calls: int, every: int, seed: int, compiles: Compiles, out: str | None = None):
    import grounding as g

    rng = np.random.default_rng(seed)
    graphs = _graphs(rng)

    def call():
        graph = graphs[int(rng.integers(len(graphs)))]
        b = int(round(math.exp(rng.uniform(0, math.log(32)))))
        tau = float(rng.choice([0.0, 0.5]))
        problems = [_question(rng, graph) for _ in range(b)]
        kw = dict(lam=2.0, kappa=1.0, tau=tau, n_paths=1, path_candidates=2)
        if b == 1:
            g.ground(problems[0], graph, **kw)
        elif rng.random() < 0.5:
            g.ground_batch(problems, graph, **kw)
        else:
            g.ground_batch(problems, [graph] * b, **kw)

    return soak(call, calls, every, compiles, out)


def service(calls: int, every: int, seed: int, compiles: Compiles, out: str | None = None):
    from grounding.datasets import kgqa_benchmark
    from grounding.learn import init_model
    from grounding.qa import GroundedQA, KGEAnswerer
    from grounding.retrieval import PCR, TextIndex
    from grounding.solver import GroundingConfig

    bench = kgqa_benchmark("codex-m", questions_per_hop=300, seed=seed)
    kg = bench.kg
    model = init_model("transe", kg.n_entities, kg.n_relations, 32, seed=seed)
    index = TextIndex(bench.graph)
    pcr = {h: PCR(index, max_hops=h) for h in (1, 2)}
    qa = GroundedQA(
        KGEAnswerer(model, kg.entities, kg.relations),
        lambda depth: pcr[depth],
        GroundingConfig(lam=2.0, kappa=1.0),
        k_candidates=20,
        k_nodes=100,
    )
    questions = [q for q in bench.questions if q.hops in (1, 2)]
    rng = np.random.default_rng(seed)
    return soak(lambda: qa.answer(questions[int(rng.integers(len(questions)))]), calls, every,
                compiles, out)  # fmt: skip


def soak(call, calls: int, every: int, compiles: Compiles, out: str | None = None) -> dict:
    from grounding import programs

    curve = []
    lat: list[float] = []
    t0 = time.perf_counter()
    for i in range(1, calls + 1):
        t = time.perf_counter()
        call()
        lat.append(time.perf_counter() - t)
        if i % every == 0 or i == calls:
            info = programs.program_info()
            curve.append(
                dict(
                    calls=i,
                    maps=maps(),
                    rss_mb=rss_mb(),
                    compiles=compiles.count,
                    solver_compiles=info["compilations"],
                    solver_recompiles=info["recompilations"],
                    live_programs=info["live"],
                    p50_ms=1e3 * float(np.median(lat)),
                    p99_ms=1e3 * float(np.quantile(lat, 0.99)),
                    elapsed_s=time.perf_counter() - t0,
                )
            )
            lat = []
            c = curve[-1]
            if out:  # the curve so far: an interrupted run keeps what it recorded
                write_json(out, dict(partial=True, curve=curve))
            print(
                f"  {i:>7} calls: maps {c['maps']}, RSS {c['rss_mb']:.0f} MB, compilations "
                f"{c['compiles']} (solver {c['solver_compiles']}, of them again after eviction "
                f"{c['solver_recompiles']}; live {c['live_programs']}), "
                f"p50 {c['p50_ms']:.2f} ms, p99 {c['p99_ms']:.1f} ms",
                flush=True,
            )
    half = [c for c in curve if c["calls"] > calls // 2]
    at_half = max((c for c in curve if c["calls"] <= calls // 2), key=lambda c: c["calls"])
    last = curve[-1]
    compiled = last["compiles"] - at_half["compiles"]
    return dict(
        curve=curve,
        maps_plateau=max(c["maps"] for c in half),
        rss_plateau_mb=max(c["rss_mb"] for c in half),
        compiles_after_warmup=compiled,
        recompiles_after_warmup=last["solver_recompiles"] - at_half["solver_recompiles"],
        # what the heap kept per compilation over the last half (RSS follows compilations)
        rss_mb_per_compile=(last["rss_mb"] - at_half["rss_mb"]) / compiled if compiled else 0.0,
        max_programs=programs.max_programs(),
    )


def plot(path: str, results: dict, title: str) -> None:
    """One row of panels per workload: maps, RSS, compilations, latency against the calls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("maps", "memory maps"),
        ("rss_mb", "resident memory (MB)"),
        ("compiles", "compilations so far (dashed: again after eviction)"),
        ("p99_ms", "latency (ms): p50 dashed, p99"),
    ]
    fig, axes = plt.subplots(len(results), 4, figsize=(13, 2.9 * len(results)), squeeze=False)
    for row, (name, res) in enumerate(results.items()):
        curve, color = res["curve"], f"C{row}"
        x = [c["calls"] for c in curve]
        for ax, (key, label) in zip(axes[row], panels):
            ax.plot(x, [c[key] for c in curve], color=color)
            if key == "compiles" and "solver_recompiles" in curve[0]:
                ax.plot(x, [c["solver_recompiles"] for c in curve], "--", color=color)
            if key == "p99_ms":
                ax.plot(x, [c["p50_ms"] for c in curve], "--", color=color)
                ax.set_yscale("log")
            else:
                ax.set_ylim(0, max(c[key] for c in curve) * 1.15)
            ax.set_xlabel("calls")
            ax.set_title(f"{WHO[name]} ({x[-1]:,} calls)\n{label}", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_png(fig, path, dpi=100)


WHO = {"service": "one question per call", "mixed": "random batches"}


def main(argv=None) -> None:
    ap = parser(__doc__.splitlines()[0], out="write the curves as JSON (atomically)")
    ap.add_argument("--calls", type=int, default=100_000, help="calls per workload (100000)")
    ap.add_argument("--every", type=int, default=1000, help="calls between records (1000)")
    ap.add_argument("--workload", choices=("mixed", "service", "both"), default="both")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--plot", type=output_file, help="write the curves as a PNG")
    args = ap.parse_args(argv)
    if not sys.platform.startswith("linux"):
        raise SystemExit("soak.py reads /proc: Linux only")
    if args.calls < 2 or not 1 <= args.every <= args.calls // 2:
        raise SystemExit(  # (the plateau compares the records of the two halves)
            "--calls must be >= 2 and --every between 1 and half of --calls"
        )
    info = machine()
    print(f"soak: {args.calls} calls per workload, each in a fresh process; {info}", flush=True)
    results = {}
    for name in ("mixed", "service") if args.workload == "both" else (args.workload,):
        partial = None if args.out is None else f"{args.out}.{name}.partial"
        results[name] = r = in_child(workload, name, args.calls, args.every, args.seed, partial)
        print(
            f"{name}: maps_plateau={r['maps_plateau']} rss_plateau_mb={r['rss_plateau_mb']:.0f} "
            f"compiles_after_warmup={r['compiles_after_warmup']} "
            f"recompiles_after_warmup={r['recompiles_after_warmup']} "
            f"rss_mb_per_compile={r['rss_mb_per_compile']:.3f}",
            flush=True,
        )
    cap = results[name]["max_programs"]
    if args.out:
        write_json(args.out, dict(machine=info, calls=args.calls, results=results))
    if args.plot:
        plot(
            args.plot, results, f"The solver in a long-lived process (cap: {cap} compiled programs)"
        )
    print(
        f"maps_plateau={max(r['maps_plateau'] for r in results.values())} "
        f"rss_plateau_mb={max(r['rss_plateau_mb'] for r in results.values()):.0f} "
        f"compiles_after_warmup={sum(r['compiles_after_warmup'] for r in results.values())} "
        f"recompiles_after_warmup={sum(r['recompiles_after_warmup'] for r in results.values())}"
    )


def workload(name: str, calls: int, every: int, seed: int, partial: str | None) -> dict:
    """One workload in this (fresh) process; its curve so far in ``partial`` as it runs."""
    from grounding import programs

    compiles = Compiles()
    start = dict(maps=maps(), rss_mb=rss_mb())
    print(f"{name}: start maps {start['maps']}, RSS {start['rss_mb']:.0f} MB", flush=True)
    out = (mixed if name == "mixed" else service)(calls, every, seed, compiles, partial)
    programs.release_programs()  # what a release returns, and what stays
    released = dict(maps=maps(), rss_mb=rss_mb())
    print(
        f"{name}: after release_programs() maps {released['maps']}, RSS "
        f"{released['rss_mb']:.0f} MB",
        flush=True,
    )
    return dict(out, start=start, released=released)


if __name__ == "__main__":
    main()
