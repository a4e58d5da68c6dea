"""How :func:`grounding.ground` scales with the number of candidates: time and peak memory.

Two families, each configuration in its own child process (so its peak RSS is its own):

- ``answer C``: a random directed graph of ``max(C, 1000)`` entities with 3 out-edges per
  entity (5 relation types, reliabilities U(0.5, 1), seed 0), ``max(N // 100, 10)`` anchors,
  ``max_hops=3``, the first ``C`` entities as answer candidates with a random normalized
  prior (a third to all of them are reached by a walk);
- ``chain C``: ``C`` random 2-hop claim chains (named entities and relations) over a random
  graph of 1000 entities and 10 000 edges (10 relation types, 3 relations declared
  functional, so some chains are contradicted).

Per configuration: the first call (compile and run), a warm call with the default path
report, a warm call without paths (``n_paths=0``: the jitted core alone), and the child's peak
RSS (``ru_maxrss``). Float64 (``jax_enable_x64``), CPU.

Run: ``python benchmarks/ground_scale.py [--answers 1e3,1e4,1e5] [--chains 1e3,1e4]
[--timeout 600]`` from the repository root. A configuration that runs past ``--timeout``
seconds is reported as such and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _answer_case(C: int):
    import jax.numpy as jnp
    import numpy as np

    import grounding as g

    rng = np.random.default_rng(0)
    N = max(C, 1000)
    E = 3 * N
    ents = [f"e{i}" for i in range(N)]
    rels = [f"r{i}" for i in range(5)]
    graph = g.TypedGraph(
        head=jnp.asarray(np.repeat(np.arange(N), 3), jnp.int32),
        relation=jnp.asarray(rng.integers(0, 5, E), jnp.int32),
        tail=jnp.asarray(rng.integers(0, N, E), jnp.int32),
        reliability=jnp.asarray(rng.uniform(0.5, 1.0, E)),
        entities=tuple(ents),
        relations=tuple(rels),
    )
    lp = rng.normal(size=C)
    lp = lp - np.logaddexp.reduce(lp)
    problem = g.GroundingProblem(
        "q",
        tuple(ents[:C]),
        jnp.asarray(lp),
        anchors=tuple(ents[:: N // max(N // 100, 10)]),
        max_hops=3,
    )
    return problem, g.EvidenceState(graph)


def _chain_case(C: int):
    import jax.numpy as jnp
    import numpy as np

    import grounding as g

    rng = np.random.default_rng(0)
    N, E, R = 1000, 10_000, 10
    ents = [f"e{i}" for i in range(N)]
    rels = [f"r{i}" for i in range(R)]
    h, r, t = rng.integers(0, N, E), rng.integers(0, R, E), rng.integers(0, N, E)
    graph = g.TypedGraph(
        head=jnp.asarray(h, jnp.int32),
        relation=jnp.asarray(r, jnp.int32),
        tail=jnp.asarray(t, jnp.int32),
        reliability=jnp.asarray(rng.uniform(0.5, 1.0, E)),
        entities=tuple(ents),
        relations=tuple(rels),
    )
    state = g.EvidenceState(graph, functional=frozenset(rels[:3]))
    # half the chains follow an observed 2-hop walk (supported), half are random
    chains = []
    out_of = {}
    for e in range(E):
        out_of.setdefault(int(h[e]), []).append(e)
    seen = set()
    while len(chains) < C:
        e1 = int(rng.integers(0, E))
        nxt = out_of.get(int(t[e1]))
        if len(chains) % 2 == 0 and nxt:
            e2 = nxt[int(rng.integers(0, len(nxt)))]
            key = (int(h[e1]), int(r[e1]), int(t[e1]), int(r[e2]), int(t[e2]))
        else:
            key = tuple(int(x) for x in rng.integers(0, [N, R, N, R, N]))
        if key in seen:
            continue
        seen.add(key)
        a, r1, b, r2, c = key
        chains.append(g.ClaimChain((ents[a], ents[b], ents[c]), (rels[r1], rels[r2])))
    lp = rng.normal(size=C)
    lp = lp - np.logaddexp.reduce(lp)
    return g.GroundingProblem("q", tuple(chains), jnp.asarray(lp)), state


def _child(kind: str, C: int) -> None:
    """One configuration, in this process; prints one JSON line."""
    import resource

    import jax

    jax.config.update("jax_enable_x64", True)
    import grounding as g

    problem, state = (_answer_case if kind == "answer" else _chain_case)(C)
    kw = dict(lam=1.0, kappa=2.0, eps=1.0)
    t0 = time.perf_counter()
    g.ground(problem, state, **kw)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = g.ground(problem, state, **kw)
    warm = time.perf_counter() - t0
    g.ground(problem, state, n_paths=0, **kw)  # compile the no-path program
    t0 = time.perf_counter()
    g.ground(problem, state, n_paths=0, **kw)
    core = time.perf_counter() - t0
    reported = int((r.paths.length[:, 0] >= 0).sum())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
    print(
        json.dumps(
            dict(kind=kind, C=C, first_s=first, warm_s=warm, core_s=core, peak_mib=rss,
                 with_walks=reported)
        )
    )  # fmt: skip


def _run(kind: str, C: int, timeout: float) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, str(C)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return dict(kind=kind, C=C, error=f"over {timeout:.0f} s")
    if p.returncode:
        return dict(kind=kind, C=C, error=(p.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", default="1e3,1e4,1e5")
    ap.add_argument("--chains", default="1e3,1e4")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child[0], int(a.child[1]))
        return
    print(f"{'kind':<7} {'C':>7} {'first s':>8} {'warm s':>8} {'core s':>8} {'peak MiB':>9} walks")
    for kind, sizes in (("answer", a.answers), ("chain", a.chains)):
        for C in [int(float(x)) for x in sizes.split(",") if x]:
            r = _run(kind, C, a.timeout)
            if "error" in r:
                print(f"{kind:<7} {C:>7} {r['error']}")
            else:
                print(
                    f"{kind:<7} {C:>7} {r['first_s']:8.2f} {r['warm_s']:8.2f} "
                    f"{r['core_s']:8.2f} {r['peak_mib']:9.0f} {r['with_walks']}"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
