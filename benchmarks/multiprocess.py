"""Throughput of the sharded energy field in one process vs several (JAX multi-controller).

Configurations, each run in fresh child processes on this machine (``JAX_PLATFORMS=cpu``):

1. one process, 2 host devices, mesh over both (``mesh``);
2. two processes with 2 host devices each, joined by ``jax.distributed.initialize`` on
   localhost with CPU collectives over gloo, mesh over all 4 devices (``mesh, 2 processes``);
3. for context, one process, 1 device, no mesh (``unsharded``).

Every process builds the same random float32 graph and :class:`grounding.semiring.EdgeIndex`, makes
warm-up calls (compilation), then times ``index.energy_field(..., mesh=mesh)`` until the
global result is ready; processes start each repeat together (a barrier) and a repeat's
time is the slowest process's. The sharded results are gathered to the host and compared
with the unsharded one.

Run: ``python benchmarks/multiprocess.py [--quick] [--out results.json]``. The last line
printed is ``multiprocess_throughput_ratio=<x>``: sources per second with 2 processes over
sources per second with 1 process (same devices per process).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import parser, random_graph, sig3, write_json

from grounding.testing.processes import free_port, local_env, run_processes

HOPS, TAU, DEVICES_PER_PROCESS, TIMEOUT_S = 3, 1.0, 2, 600
FULL = dict(n_nodes=20_000, n_edges=200_000, n_sources=64, warmup=2, repeats=7)
QUICK = dict(n_nodes=5_000, n_edges=50_000, n_sources=16, warmup=1, repeats=3)
ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------- one process


def worker(spec: dict) -> None:
    """One process of a configuration: time the field and (process 0) write the timings and
    the gathered field to ``spec["out"]`` (``.json`` and ``.npy``)."""
    import jax

    n_proc = spec["num_processes"]
    if n_proc > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{spec['port']}",
            num_processes=n_proc,
            process_id=spec["process_id"],
        )
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh

    import grounding as g

    cfg = spec["config"]
    head, tail, cost, sources = random_graph(cfg["n_nodes"], cfg["n_edges"], cfg["n_sources"])
    t0 = time.perf_counter()
    index = g.semiring.EdgeIndex.from_edges(head, tail, cfg["n_nodes"])
    build_s = time.perf_counter() - t0
    mesh = Mesh(np.array(jax.devices()), ("sources",)) if spec["mesh"] else None

    def field():
        out = index.energy_field(cost, sources, max_hops=HOPS, tau=TAU, mesh=mesh)
        return out.block_until_ready()

    t0 = time.perf_counter()
    for _ in range(cfg["warmup"]):
        out = field()
    first_s = time.perf_counter() - t0
    times = []
    for i in range(cfg["repeats"]):
        if n_proc > 1:
            multihost_utils.sync_global_devices(f"repeat{i}")
        t0 = time.perf_counter()
        field()
        times.append(time.perf_counter() - t0)
    # per repeat, the slowest process; the global field replicated on every process
    times = np.max(multihost_utils.process_allgather(np.asarray(times)).reshape(n_proc, -1), 0)
    out = multihost_utils.process_allgather(out, tiled=True) if n_proc > 1 else np.asarray(out)
    if jax.process_index() == 0:
        np.save(spec["out"] + ".npy", out)
        info = dict(
            devices=jax.device_count(),
            processes=jax.process_count(),
            build_s=build_s,
            warmup_s=first_s,
            times_s=times.tolist(),
            median_s=float(np.median(times)),
        )
        write_json(spec["out"] + ".json", info)


# ------------------------------------------------------------------------- launcher


def launch(name: str, cfg: dict, n_proc: int, n_dev: int, mesh: bool, tmp: Path) -> dict:
    """Run one configuration in ``n_proc`` child processes of ``n_dev`` host devices each;
    return process 0's measurements and the gathered field."""
    out = str(tmp / name)
    port = free_port()
    cmds = [
        [sys.executable, __file__, "--worker", json.dumps(dict(
            port=port, process_id=i, num_processes=n_proc, mesh=mesh, config=cfg, out=out))]
        for i in range(n_proc)
    ]  # fmt: skip
    (tmp / name).mkdir()
    run_processes(cmds, local_env(n_dev, ROOT), tmp / name, TIMEOUT_S)
    info = json.loads(Path(out + ".json").read_text())
    return dict(info, name=name, field=np.load(out + ".npy"))


def main() -> int:
    ap = parser(__doc__.split("\n")[0], quick="smaller sizes, under a minute")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one child process
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    mode, cfg = ("quick", QUICK) if args.quick else ("full", FULL)
    import jax

    print(
        f"machine: {os.cpu_count()} cores, jax {jax.__version__}; mode {mode}: "
        f"{cfg['n_nodes']} nodes, {cfg['n_edges']} edges, {cfg['n_sources']} sources, "
        f"hops={HOPS}, tau={TAU}, float32, EdgeIndex; medians of {cfg['repeats']} warm calls "
        f"after {cfg['warmup']} warm-up"
    )
    d = DEVICES_PER_PROCESS
    with tempfile.TemporaryDirectory() as tmp:
        runs = [
            launch("unsharded", cfg, 1, 1, False, Path(tmp)),
            launch("mesh", cfg, 1, d, True, Path(tmp)),
            launch("mesh, 2 processes", cfg, 2, d, True, Path(tmp)),
        ]
    ref = runs[0]["field"]
    results = []
    for r in runs:
        field = r.pop("field")
        same_inf = bool(np.array_equal(np.isinf(field), np.isinf(ref)))
        finite = np.isfinite(ref)
        r["max_abs_diff"] = float(np.max(np.abs(field[finite] - ref[finite]), initial=0.0))
        r["agrees"] = same_inf and r["max_abs_diff"] <= 1e-5 * max(
            1.0, float(np.abs(ref).max(initial=0, where=finite))
        )
        r["sources_per_s"] = cfg["n_sources"] / r["median_s"]
        results.append(r)
        print(
            f"{r['name']:>18}: {r['processes']} process(es), {r['devices']} device(s): "
            f"median {sig3(r['median_s'] * 1e3)} ms, {sig3(r['sources_per_s'])} sources/s "
            f"(warm-up {sig3(r['warmup_s'])} s, index build {sig3(r['build_s'])} s); "
            f"max |diff| vs unsharded {r['max_abs_diff']:.2g}, agrees {r['agrees']}"
        )
    ratio = results[2]["sources_per_s"] / results[1]["sources_per_s"]
    if args.out:
        final = dict(mode=mode, config=cfg, runs=results, ratio=ratio)
        write_json(args.out, final)
    print(f"multiprocess_throughput_ratio={sig3(ratio)}")
    return 0 if all(r["agrees"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
