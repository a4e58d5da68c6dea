"""Benchmark the sparse semiring DP (``grounding.semiring``) against two baselines.

1. walk enumeration in pure Python over a NetworkX ``MultiDiGraph`` (small graphs);
2. the same recurrence in NumPy/``scipy.sparse`` (large graph; float32 timed, float64 oracle);
3. a streaming-bandwidth roofline for the DP's memory traffic.

Run: ``python benchmarks/paths.py [--quick] [--out results.json]``. The last line printed is
``speedup_vs_enumeration=<x> speedup_vs_scipy=<y> roofline_fraction=<z>``.

JAX is imported lazily so that the ``spawn`` children used for the large configuration
only load what their side needs; each child's peak RSS is then attributable to that side.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import networkx as nx
import numpy as np
import scipy
import scipy.sparse as sp

SEED, HOPS, TAU, SOURCES = 0, 3, 1.0, 64
FULL = dict(
    enum=[(2_000, 10_000), (2_000, 40_000)], enum_sources=64, big=(100_000, 1_000_000), repeats=5
)
QUICK = dict(enum=[(2_000, 10_000)], enum_sources=16, big=(30_000, 300_000), repeats=3)
BANDWIDTH_BYTES = 512 * 2**20


def sig3(x: float) -> str:
    """``x`` to 3 significant digits without an exponent (``41.2``, ``0.161``, ``1230``)."""
    return f"{float(f'{x:.3g}'):g}"


def random_graph(n_nodes: int, n_edges: int, n_sources: int, seed: int = SEED):
    rng = np.random.default_rng(seed)
    head = rng.integers(0, n_nodes, n_edges, dtype=np.int32)
    tail = rng.integers(0, n_nodes, n_edges, dtype=np.int32)
    cost = rng.random(n_edges, dtype=np.float32)
    sources = rng.choice(n_nodes, n_sources, replace=False).astype(np.int32)
    return head, tail, cost, sources


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def peak_rss_mib() -> float:
    """Peak RSS of this process. ``VmHWM`` is per address space; ``ru_maxrss`` is not used
    because after spawn's fork+exec it keeps the *parent's* high-water mark."""
    try:
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------------- implementations


def run_dp(head, tail, cost, sources, n_nodes, semirings: dict, repeats):
    """Build the index once; per semiring (name -> tau): first call (compile) and median run
    times, and the field."""
    import jax
    import jax.numpy as jnp

    import grounding

    t0 = time.perf_counter()
    index = jax.block_until_ready(grounding.EdgeIndex.from_edges(head, tail, n_nodes))
    stats, fields = {"build_s": time.perf_counter() - t0}, {}
    c, s = jnp.asarray(cost), jnp.asarray(sources)
    for name, tau in semirings.items():
        f = jax.jit(lambda idx, c, s, tau=tau: idx.energy_field(c, s, max_hops=HOPS, tau=tau))
        t0 = time.perf_counter()
        fields[name] = np.asarray(f(index, c, s).block_until_ready())
        first = time.perf_counter() - t0
        run = median_time(lambda f=f: f(index, c, s).block_until_ready(), repeats)
        stats[name] = {"first_call_s": first, "dp_s": run}
    return stats, fields


def _logaddexp(a: float, b: float) -> float:
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def enumerate_field(graph: nx.MultiDiGraph, sources, n_nodes: int, tau: float) -> np.ndarray:
    """Baseline: every walk of 1..HOPS edges by depth-first search, log-sum-exp per end node."""
    out = np.full((len(sources), n_nodes), np.inf)
    for row, s in enumerate(sources):
        acc: dict[int, float] = {}
        stack = [(int(s), 0.0, 0)]
        while stack:
            u, logw, depth = stack.pop()
            for v, parallel in graph.succ[u].items():
                for attr in parallel.values():
                    x = logw - attr["cost"] / tau
                    acc[v] = x if v not in acc else _logaddexp(acc[v], x)
                    if depth + 1 < HOPS:
                        stack.append((v, x, depth + 1))
        for v, lse in acc.items():
            out[row, v] = -tau * lse
    return out


def scipy_kernel(head, tail, cost, n_nodes, tau, dtype):
    w = np.exp(-cost.astype(dtype) / dtype(tau))
    return sp.csr_matrix((w, (head, tail)), shape=(n_nodes, n_nodes))  # duplicates summed


def scipy_field(kernel, sources, n_nodes, tau, dtype) -> np.ndarray:
    """Same recurrence with a row-max shift per hop: ``a <- log(exp(a - m) @ K) + m``."""
    a = np.full((len(sources), n_nodes), -np.inf, dtype)
    a[np.arange(len(sources)), sources] = 0.0
    acc = None
    with np.errstate(divide="ignore"):
        for _ in range(HOPS):
            m = a.max(axis=1, keepdims=True)
            m = np.where(np.isfinite(m), m, dtype(0))  # a row with no walk left
            a = np.log(np.exp(a - m) @ kernel) + m
            acc = a if acc is None else np.logaddexp(acc, a)
    return -dtype(tau) * acc


def compare(x, ref, *, atol, rtol=0.0) -> dict:
    """Same ``+inf`` pattern, no NaN, and ``|x - ref| <= atol + rtol |ref|`` on finite entries."""
    same_inf = bool(np.array_equal(np.isposinf(x), np.isposinf(ref))) and not np.isnan(x).any()
    fin = np.isfinite(x) & np.isfinite(ref)
    d = np.abs(x[fin].astype(np.float64) - ref[fin])
    rel = d / np.maximum(np.abs(ref[fin]), np.finfo(np.float64).tiny)
    ok = same_inf and bool(np.all(d <= atol + rtol * np.abs(ref[fin])))
    return {
        "ok": ok,
        "same_inf": same_inf,
        "max_abs": float(d.max(initial=0)),
        "max_rel": float(rel.max(initial=0)),
        "finite": int(fin.sum()),
    }


# --------------------------------------------------------------------------- measurements


def bench_enumeration(n_nodes, n_edges, n_sources, repeats) -> dict:
    head, tail, cost, sources = random_graph(n_nodes, n_edges, n_sources)
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(range(n_nodes))
    graph.add_edges_from((int(h), int(t), {"cost": float(c)}) for h, t, c in zip(head, tail, cost))
    t0 = time.perf_counter()
    ref = enumerate_field(graph, sources, n_nodes, TAU)
    enum_s = time.perf_counter() - t0
    dp, fields = run_dp(head, tail, cost, sources, n_nodes, {"log": TAU}, repeats)
    out = dict(nodes=n_nodes, edges=n_edges, sources=n_sources, enum_s=enum_s, dp=dp)
    out["agreement"] = compare(fields["log"], ref, atol=1e-4)
    out["speedup"] = enum_s / dp["log"]["dp_s"]
    return out


def dp_child(n_nodes, n_edges, repeats):
    import jax  # noqa: F401  (counted before the timed section)

    head, tail, cost, sources = random_graph(n_nodes, n_edges, SOURCES)
    before = peak_rss_mib()
    stats, fields = run_dp(
        head, tail, cost, sources, n_nodes, {"log": TAU, "minplus": 0.0}, repeats
    )
    return stats, fields["log"], {"before_timed": before, "peak": peak_rss_mib()}


def scipy_child(n_nodes, n_edges, repeats):
    head, tail, cost, sources = random_graph(n_nodes, n_edges, SOURCES)
    before = peak_rss_mib()
    t0 = time.perf_counter()
    kernel = scipy_kernel(head, tail, cost, n_nodes, TAU, np.float32)
    build_s = time.perf_counter() - t0
    field = scipy_field(kernel, sources, n_nodes, TAU, np.float32)
    run_s = median_time(lambda: scipy_field(kernel, sources, n_nodes, TAU, np.float32), repeats)
    stats = {"build_s": build_s, "run_s": run_s}
    return stats, field, {"before_timed": before, "peak": peak_rss_mib()}


def in_child(fn, *args):
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def bench_scipy(n_nodes, n_edges, repeats) -> dict:
    dp, dp_field, dp_rss = in_child(dp_child, n_nodes, n_edges, repeats)
    sc, sc_field, sc_rss = in_child(scipy_child, n_nodes, n_edges, repeats)
    head, tail, cost, sources = random_graph(n_nodes, n_edges, SOURCES)
    t0 = time.perf_counter()
    kernel = scipy_kernel(head, tail, cost, n_nodes, TAU, np.float64)
    ref = scipy_field(kernel, sources, n_nodes, TAU, np.float64)
    sc["f64_s"] = time.perf_counter() - t0
    out = dict(nodes=n_nodes, edges=n_edges, sources=SOURCES, dp=dp, scipy=sc)
    out["rss_mib"] = {"dp": dp_rss, "scipy": sc_rss}
    out["dp_vs_f64"] = compare(dp_field, ref, atol=1e-4, rtol=1e-4)
    out["scipy32_vs_f64"] = compare(sc_field, ref, atol=1e-4, rtol=1e-4)
    out["speedup"] = sc["run_s"] / dp["log"]["dp_s"]
    return out


def bench_bandwidth(repeats: int = 5) -> dict:
    """Best-of-``repeats`` GB/s of two streaming numpy ops on a 512 MiB float32 array."""
    x = np.ones(BANDWIDTH_BYTES // 4, np.float32)
    y = np.empty_like(x)
    ops = {
        "sum (read)": (x.sum, x.nbytes),
        "copy (read+write)": (lambda: np.copyto(y, x), 2 * x.nbytes),
    }
    gbps = {}
    for name, (fn, nbytes) in ops.items():
        fn()  # touch the pages
        gbps[name] = nbytes / min(median_time(fn, 1) for _ in range(repeats)) / 1e9
    best = max(gbps, key=gbps.get)
    return {"gbps": gbps, "op": best, "bandwidth_gbps": gbps[best]}


def roofline(big: dict, bw: dict) -> dict:
    """Ideal time: per hop the edge arrays (12 B/edge) and S float32 values per edge move once."""
    bytes_per_hop = big["edges"] * (12 + 4 * big["sources"])
    ideal_s = HOPS * bytes_per_hop / (bw["bandwidth_gbps"] * 1e9)
    out = {"bytes_per_hop": bytes_per_hop, "ideal_s": ideal_s}
    out["fraction"] = ideal_s / big["dp"]["log"]["dp_s"]
    out["minplus_fraction"] = ideal_s / big["dp"]["minplus"]["dp_s"]
    return out


# -------------------------------------------------------------------------------- report


def machine() -> dict:
    import jax

    cpu = "unknown"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if "model name" in ln), cpu)
    versions = {m.__name__: m.__version__ for m in (np, scipy, jax, nx)}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return dict(
        cpu=cpu, cores=os.cpu_count(), python=platform.python_version(), load=load, **versions
    )


def agreement(a: dict, long: bool = False) -> str:
    text = f"{'ok' if a['ok'] else 'MISMATCH'} max|d|={a['max_abs']:.1e}"
    if long:
        pattern = "same +inf pattern" if a["same_inf"] else "+inf PATTERN DIFFERS (or NaN)"
        text += f", max rel {a['max_rel']:.1e} over {a['finite']} finite entries, {pattern}"
    return text


def print_row(config, baseline, base_s, dp_s, agree, memory) -> None:
    fmt = lambda x: "-" if x is None else f"{x:.4f}"  # noqa: E731
    ratio = "-" if base_s is None else f"{base_s / dp_s:.3g}"
    print(
        f"{config:<22} {baseline:<11} {fmt(base_s):>8} {fmt(dp_s):>8} {ratio:>6}  {agree:<18} {memory}"
    )


def print_report(enum: list, big: dict, bw: dict, roof: dict) -> None:
    titles = ("config", "baseline", "base s", "DP s", "ratio", "agreement", "peak RSS")
    print("{:<22} {:<11} {:>8} {:>8} {:>6}  {:<18} {}".format(*titles))
    for e in enum:
        config, dp_s = f"{e['nodes']}n/{e['edges']}e S={e['sources']}", e["dp"]["log"]["dp_s"]
        print_row(config, "enumeration", e["enum_s"], dp_s, agreement(e["agreement"]), "-")
    dp, sc, rss = big["dp"], big["scipy"], big["rss_mib"]
    config = f"{big['nodes']}n/{big['edges']}e S={big['sources']}"
    memory = "; ".join(
        f"{k} {v['peak']:.0f} MiB ({v['before_timed']:.0f} pre)" for k, v in rss.items()
    )
    print_row(
        config, "scipy f32", sc["run_s"], dp["log"]["dp_s"], agreement(big["dp_vs_f64"]), memory
    )
    print_row("  same, min-plus", "-", None, dp["minplus"]["dp_s"], "-", "(in the DP child)")
    print(f"vs float64 scipy: DP {agreement(big['dp_vs_f64'], True)}")
    print(f"vs float64 scipy: scipy f32 {agreement(big['scipy32_vs_f64'], True)}")
    for e in enum:
        print(f"{e['edges']}e: vs enumeration: DP {agreement(e['agreement'], True)}")
        print(
            f"{e['edges']}e: index build {e['dp']['build_s']:.3f} s, first DP call (compile)"
            f" {e['dp']['log']['first_call_s']:.2f} s"
        )
    print(
        f"{big['edges']}e: index build {dp['build_s']:.3f} s, first DP call (compile) log"
        f" {dp['log']['first_call_s']:.2f} s, min-plus {dp['minplus']['first_call_s']:.2f} s;"
        f" scipy K build {sc['build_s']:.3f} s, float64 oracle {sc['f64_s']:.2f} s"
    )
    print(
        "peak RSS: VmHWM of one spawn child per side (imports + data + timed section);"
        " 'pre' = VmHWM just before the timed section"
    )
    print(
        "bandwidth (numpy, 512 MiB float32, best of 5): "
        + ", ".join(f"{k} {v:.1f} GB/s" for k, v in bw["gbps"].items())
        + f"; roofline uses the faster, {bw['op']}"
    )
    print(
        f"roofline: {HOPS} hops x {roof['bytes_per_hop'] / 1e6:.0f} MB/hop -> ideal"
        f" {roof['ideal_s']:.4f} s; DP at {roof['fraction']:.3f} (log semiring),"
        f" {roof['minplus_fraction']:.3f} (min-plus) of roofline"
    )


def write_json(path: str, data: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as f:
        json.dump(data, f, indent=2)
    os.replace(f.name, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, under a minute")
    parser.add_argument("--out", help="write all measurements as JSON (atomically)")
    args = parser.parse_args()
    mode, cfg = ("quick", QUICK) if args.quick else ("full", FULL)
    m = machine()
    print(
        f"machine: {m['cpu']}, {m['cores']} cores, 1-min load {m['load']}; python {m['python']},"
        f" numpy {m['numpy']}, scipy {m['scipy']}, jax {m['jax']}, networkx {m['networkx']}"
    )
    print(
        f"mode {mode}: hops={HOPS}, tau={TAU}, float32, seed={SEED}; enumeration (nodes, edges)"
        f" {cfg['enum']} with {cfg['enum_sources']} sources; scipy {cfg['big']} with {SOURCES}"
        f" sources; times are medians of {cfg['repeats']} (DP on small graphs: {4 * cfg['repeats']});"
        " JAX uses all cores, enumeration and scipy.sparse one"
    )
    enum = [
        bench_enumeration(n, e, cfg["enum_sources"], 4 * cfg["repeats"]) for n, e in cfg["enum"]
    ]
    big = bench_scipy(*cfg["big"], cfg["repeats"])
    bw = bench_bandwidth()
    roof = roofline(big, bw)
    print_report(enum, big, bw, roof)
    final = {"speedup_vs_enumeration": enum[0]["speedup"], "speedup_vs_scipy": big["speedup"]}
    final["roofline_fraction"] = roof["fraction"]
    results = dict(machine=m, mode=mode, config=cfg, enumeration=enum, scipy=big, bandwidth=bw)
    if args.out:
        write_json(args.out, dict(results, roofline=roof, final=final))
    print(" ".join(f"{k}={sig3(v)}" for k, v in final.items()))
    checks = [e["agreement"] for e in enum] + [big["dp_vs_f64"], big["scipy32_vs_f64"]]
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
