"""Benchmark the sparse semiring DP (``grounding.semiring``) against two baselines.

1. walk enumeration in pure Python over a NetworkX ``MultiDiGraph`` (small graphs);
2. the same recurrence in NumPy/``scipy.sparse`` (large graphs; float32 timed, float64 oracle)
   on three graphs: uniform random (100k nodes, 1M edges), power-law (Chung-Lu, degree exponent
   2.1, same size, random node ids) and the real CoDEx-M knowledge graph (17,050 entities,
   206,205 triples, both directions: 412,410 edges);
3. a streaming-bandwidth roofline for the DP's memory traffic;
4. both backends of ``EdgeIndex`` (``fused``: the numba CPU kernel, the default on CPU;
   ``ell``: XLA, the reference and the GPU/TPU path), and node reorderings (reverse
   Cuthill-McKee, descending in-degree) of the fused backend's input.

Run: ``python benchmarks/paths.py [--quick] [--out results.json]``. The last line printed is
``speedup_vs_enumeration=<a> speedup_vs_scipy=<b> roofline_fraction=<c>
speedup_vs_scipy_codexm=<d>``: enumeration / DP on the first small graph, scipy / DP (default
backend, log semiring) on the uniform and the CoDEx-M graphs, and the uniform graph's ideal
streaming time over the DP's.

JAX is imported lazily so that the ``spawn`` children used for the large configurations
only load what their side needs; each child's peak RSS is then attributable to that side.
"""

from __future__ import annotations

import math
import sys
import time

import networkx as nx
import numpy as np
import scipy.sparse as sp
from _common import (
    in_child,
    machine,
    median_time,
    parser,
    peak_rss_mib,
    random_graph,
    sig3,
    write_json,
)

SEED, HOPS, TAU, SOURCES = 0, 3, 1.0, 64
FULL = dict(
    enum=[(2_000, 10_000), (2_000, 40_000)], enum_sources=64, big=(100_000, 1_000_000), repeats=5
)
QUICK = dict(enum=[(2_000, 10_000)], enum_sources=16, big=(30_000, 300_000), repeats=3)
GRAPHS = ("uniform", "power-law", "codex-m")  # the large graphs (codex-m has a fixed size)
ORDERS = ("given", "rcm", "in-degree")  # node orders tried on the fused backend
BANDWIDTH_BYTES = 512 * 2**20


def power_law_graph(n_nodes: int, n_edges: int, n_sources: int, seed: int = SEED):
    """Chung-Lu: both endpoints drawn with probability ``∝ rank^(-1/(2.1 - 1))`` (degree
    exponent 2.1), node ids shuffled (no locality in the ids), costs ``U(0, 1)``."""
    rng = np.random.default_rng(seed)
    weight = np.arange(1, n_nodes + 1, dtype=np.float64) ** (-1 / 1.1)
    ids = rng.permutation(n_nodes).astype(np.int32)
    head, tail = (ids[rng.choice(n_nodes, n_edges, p=weight / weight.sum())] for _ in "ht")
    cost = rng.random(n_edges, dtype=np.float32)
    sources = rng.choice(n_nodes, n_sources, replace=False).astype(np.int32)
    return head, tail, cost, sources


def codex_graph(n_sources: int, seed: int = SEED):
    """CoDEx-M (all splits), every triple in both directions, costs ``U(0, 1)``."""
    from grounding.datasets import load_kg

    kg = load_kg("codex-m")
    tr = kg.all_triples()
    head = np.concatenate([tr[:, 0], tr[:, 2]]).astype(np.int32)
    tail = np.concatenate([tr[:, 2], tr[:, 0]]).astype(np.int32)
    rng = np.random.default_rng(seed)
    cost = rng.random(len(head), dtype=np.float32)
    sources = rng.choice(kg.n_entities, n_sources, replace=False).astype(np.int32)
    return kg.n_entities, head, tail, cost, sources


def make_graph(name: str, n_nodes: int, n_edges: int):
    """``(n_nodes, head, tail, cost, sources)`` of one of :data:`GRAPHS`."""
    if name == "codex-m":
        return codex_graph(SOURCES)
    make = random_graph if name == "uniform" else power_law_graph
    return (n_nodes, *make(n_nodes, n_edges, SOURCES))


def node_order(name: str, head, tail, n_nodes: int) -> np.ndarray:
    """A relabeling ``new_id[old_id]`` of the nodes: as given, reverse Cuthill-McKee of the
    symmetrized graph, or by descending in-degree."""
    if name == "given":
        return np.arange(n_nodes, dtype=np.int32)
    if name == "rcm":
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        a = sp.csr_matrix((np.ones(len(head), np.int8), (head, tail)), shape=(n_nodes,) * 2)
        order = reverse_cuthill_mckee((a + a.T).tocsr(), symmetric_mode=True)
    else:
        order = np.argsort(-np.bincount(tail, minlength=n_nodes), kind="stable")
    new_id = np.empty(n_nodes, np.int32)
    new_id[order] = np.arange(n_nodes, dtype=np.int32)
    return new_id


# ------------------------------------------------------------------------- implementations


def run_dp(head, tail, cost, sources, n_nodes, semirings: dict, repeats, backend=None):
    """Build the index once; per semiring (name -> tau): first call (compile) and median run
    times, and the field."""
    import jax
    import jax.numpy as jnp

    import grounding

    t0 = time.perf_counter()
    index = grounding.semiring.EdgeIndex.from_edges(head, tail, n_nodes, backend=backend)
    index = jax.block_until_ready(index)
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


def dp_child(graph, n_nodes, n_edges, repeats, backend, order="given"):
    import jax  # noqa: F401  (counted before the timed section)

    n_nodes, head, tail, cost, sources = make_graph(graph, n_nodes, n_edges)
    new_id = node_order(order, head, tail, n_nodes)
    before = peak_rss_mib()
    semirings = {"log": TAU, "minplus": 0.0} if order == "given" else {"log": TAU}
    stats, fields = run_dp(
        new_id[head], new_id[tail], cost, new_id[sources], n_nodes, semirings, repeats, backend
    )
    field = fields["log"][:, new_id]  # back to the given ids
    return stats, field, {"before_timed": before, "peak": peak_rss_mib()}


def scipy_child(graph, n_nodes, n_edges, repeats):
    n_nodes, head, tail, cost, sources = make_graph(graph, n_nodes, n_edges)
    before = peak_rss_mib()
    t0 = time.perf_counter()
    kernel = scipy_kernel(head, tail, cost, n_nodes, TAU, np.float32)
    build_s = time.perf_counter() - t0
    field = scipy_field(kernel, sources, n_nodes, TAU, np.float32)
    run_s = median_time(lambda: scipy_field(kernel, sources, n_nodes, TAU, np.float32), repeats)
    stats = {"build_s": build_s, "run_s": run_s}
    return stats, field, {"before_timed": before, "peak": peak_rss_mib()}


def bench_scipy(graph, n_nodes, n_edges, repeats, backends) -> dict:
    """scipy vs the DP on one large graph: every backend, and node orders on the fused one."""
    sc, sc_field, sc_rss = in_child(scipy_child, graph, n_nodes, n_edges, repeats)
    n_nodes, head, tail, cost, sources = make_graph(graph, n_nodes, n_edges)
    t0 = time.perf_counter()
    kernel = scipy_kernel(head, tail, cost, n_nodes, TAU, np.float64)
    ref = scipy_field(kernel, sources, n_nodes, TAU, np.float64)
    sc["f64_s"] = time.perf_counter() - t0
    out = dict(graph=graph, nodes=n_nodes, edges=len(head), sources=SOURCES, scipy=sc)
    out["finite_fraction"] = float(np.isfinite(ref).mean())
    out["rss_mib"] = {"scipy": sc_rss}
    out["scipy32_vs_f64"] = compare(sc_field, ref, atol=1e-4, rtol=1e-4)
    out["dp"], out["orders"] = {}, {}
    for backend in backends:
        dp, dp_field, dp_rss = in_child(dp_child, graph, n_nodes, n_edges, repeats, backend)
        out["dp"][backend] = dict(dp, vs_f64=compare(dp_field, ref, atol=1e-4, rtol=1e-4))
        out["dp"][backend]["speedup"] = sc["run_s"] / dp["log"]["dp_s"]
        out["rss_mib"][f"DP {backend}"] = dp_rss
    if "fused" in backends:
        for order in ORDERS[1:]:
            dp, dp_field, _ = in_child(dp_child, graph, n_nodes, n_edges, repeats, "fused", order)
            out["orders"][order] = dict(dp, vs_f64=compare(dp_field, ref, atol=1e-4, rtol=1e-4))
        out["orders"]["given"] = out["dp"]["fused"]
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


def roofline(big: dict, bw: dict, backend: str) -> dict:
    """Ideal time: per hop the edge arrays (12 B/edge) and S float32 values per edge move once."""
    bytes_per_hop = big["edges"] * (12 + 4 * big["sources"])
    ideal_s = HOPS * bytes_per_hop / (bw["bandwidth_gbps"] * 1e9)
    out = {"bytes_per_hop": bytes_per_hop, "ideal_s": ideal_s}
    out["fraction"] = ideal_s / big["dp"][backend]["log"]["dp_s"]
    out["minplus_fraction"] = ideal_s / big["dp"][backend]["minplus"]["dp_s"]
    return out


# -------------------------------------------------------------------------------- report


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
        f"{config:<26} {baseline:<13} {fmt(base_s):>8} {fmt(dp_s):>8} {ratio:>6}  {agree:<18} {memory}"
    )


def print_report(enum: list, bigs: list, bw: dict, roofs: dict) -> None:
    titles = ("config", "baseline", "base s", "DP s", "ratio", "agreement", "peak RSS")
    print("{:<26} {:<13} {:>8} {:>8} {:>6}  {:<18} {}".format(*titles))
    for e in enum:
        config, dp_s = f"{e['nodes']}n/{e['edges']}e S={e['sources']}", e["dp"]["log"]["dp_s"]
        print_row(config, "enumeration", e["enum_s"], dp_s, agreement(e["agreement"]), "-")
    for big in bigs:
        sc, rss = big["scipy"], big["rss_mib"]
        config = f"{big['graph']} {big['nodes']}n/{big['edges']}e"
        for backend, dp in big["dp"].items():
            memory = f"{rss[f'DP {backend}']['peak']:.0f} MiB (scipy {rss['scipy']['peak']:.0f})"
            agree = agreement(dp["vs_f64"])
            print_row(config, f"scipy/{backend}", sc["run_s"], dp["log"]["dp_s"], agree, memory)
            print_row("  same, min-plus", f"-/{backend}", None, dp["minplus"]["dp_s"], "-", "")
        for order, dp in big["orders"].items():
            if order != "given":
                agree = agreement(dp["vs_f64"])
                print_row(f"  nodes in {order} order", "scipy/fused", sc["run_s"],
                          dp["log"]["dp_s"], agree, "")  # fmt: skip
    for big in bigs:
        name = big["graph"]
        for backend, dp in big["dp"].items():
            print(f"{name}: vs float64 scipy: DP {backend} {agreement(dp['vs_f64'], True)}")
        print(f"{name}: vs float64 scipy: scipy f32 {agreement(big['scipy32_vs_f64'], True)}")
        print(
            f"{name}: finite entries of the {HOPS}-hop field: {big['finite_fraction']:.3f};"
            + "".join(
                f" {b} index build {dp['build_s']:.3f} s, first call (compile) log"
                f" {dp['log']['first_call_s']:.2f} s, min-plus {dp['minplus']['first_call_s']:.2f} s;"
                for b, dp in big["dp"].items()
            )
            + f" scipy K build {big['scipy']['build_s']:.3f} s"
        )
    for e in enum:
        print(f"{e['edges']}e: vs enumeration: DP {agreement(e['agreement'], True)}")
        print(
            f"{e['edges']}e: index build {e['dp']['build_s']:.3f} s, first DP call (compile)"
            f" {e['dp']['log']['first_call_s']:.2f} s"
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
    for (graph, backend), roof in roofs.items():
        print(
            f"roofline {graph} {backend}: {HOPS} hops x {roof['bytes_per_hop'] / 1e6:.0f} MB/hop"
            f" -> ideal {roof['ideal_s']:.4f} s; DP at {roof['fraction']:.3f} (log semiring),"
            f" {roof['minplus_fraction']:.3f} (min-plus) of roofline"
        )


def main() -> int:
    args = parser(__doc__.split("\n")[0], quick="smaller sizes, a few minutes").parse_args()
    mode, cfg = ("quick", QUICK) if args.quick else ("full", FULL)
    m = machine()
    print(
        f"machine: {m['cpu']}, {m['cores']} cores, 1-min load {m['load']}; python {m['python']},"
        f" numpy {m['numpy']}, scipy {m['scipy']}, jax {m['jax']}, networkx {m['networkx']}"
    )
    from grounding.semiring.layout import default_backend

    default = default_backend()
    backends = sorted({default, "ell"}, key=lambda b: b != default)
    print(
        f"mode {mode}: hops={HOPS}, tau={TAU}, float32, seed={SEED}; enumeration (nodes, edges)"
        f" {cfg['enum']} with {cfg['enum_sources']} sources; scipy on {GRAPHS} (random graphs"
        f" {cfg['big']}) with {SOURCES} sources; times are medians of {cfg['repeats']} (DP on"
        f" small graphs: {4 * cfg['repeats']}); JAX and the fused kernel use all cores,"
        f" enumeration and scipy.sparse one; backends {backends} (default {default})"
    )
    enum = [
        bench_enumeration(n, e, cfg["enum_sources"], 4 * cfg["repeats"]) for n, e in cfg["enum"]
    ]
    bigs = [bench_scipy(graph, *cfg["big"], cfg["repeats"], backends) for graph in GRAPHS]
    bw = bench_bandwidth()
    roofs = {(b["graph"], k): roofline(b, bw, k) for b in bigs for k in backends}
    print_report(enum, bigs, bw, roofs)
    uniform, codex = bigs[0], bigs[-1]
    final = {"speedup_vs_enumeration": enum[0]["speedup"]}
    final["speedup_vs_scipy"] = uniform["dp"][default]["speedup"]
    final["roofline_fraction"] = roofs[("uniform", default)]["fraction"]
    final["speedup_vs_scipy_codexm"] = codex["dp"][default]["speedup"]
    results = dict(machine=m, mode=mode, config=cfg, enumeration=enum, scipy=bigs, bandwidth=bw)
    if args.out:
        roof = {f"{g} {b}": r for (g, b), r in roofs.items()}
        write_json(args.out, dict(results, roofline=roof, final=final))
    print(" ".join(f"{k}={sig3(v)}" for k, v in final.items()))
    checks = [e["agreement"] for e in enum] + [b["scipy32_vs_f64"] for b in bigs]
    checks += [dp["vs_f64"] for b in bigs for dp in (*b["dp"].values(), *b["orders"].values())]
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
