"""One process of the multi-process energy-field check
(``tests/core/test_semiring_multiprocess.py``).

Run as ``python tests/_multiprocess_worker.py PORT PROCESS_ID NUM_PROCESSES OUT.npz`` with
``XLA_FLAGS=--xla_force_host_platform_device_count=2``: the process joins the JAX distributed
system on ``127.0.0.1:PORT`` with CPU collectives over gloo, computes :func:`energy_fields` on
a mesh over every device of every process, gathers the global results to the host and saves
them to ``OUT.npz``. Importing this module runs no JAX code (the test imports
:func:`energy_fields` for its unsharded reference).
"""

from __future__ import annotations

import sys

import numpy as np

N_NODES, N_EDGES, MAX_HOPS = 200, 1_000, 3


def energy_fields(mesh) -> dict:
    """The checked fields (``mesh=None``: unsharded) on a fixed float32 random graph: totals at
    ``tau`` 0.5 and 0, per-hop fields, and an :class:`~grounding.semiring.EdgeIndex` field with
    per-source costs for a batch of 6 sources (padded to a multiple of the device count)."""
    import grounding as g

    rng = np.random.default_rng(0)
    head = rng.integers(0, N_NODES, N_EDGES).astype(np.int32)
    tail = rng.integers(0, N_NODES, N_EDGES).astype(np.int32)
    cost = rng.uniform(0, 2, N_EDGES).astype(np.float32)
    cost[rng.random(N_EDGES) < 0.05] = np.inf  # removed edges
    sources = rng.choice(N_NODES, 8, replace=False).astype(np.int32)
    per_source = (cost + rng.uniform(0, 1, (6, N_EDGES))).astype(np.float32)
    kw = dict(n_nodes=N_NODES, max_hops=MAX_HOPS, mesh=mesh)
    index = g.semiring.EdgeIndex.from_edges(head, tail, N_NODES)
    return {
        "field_tau0.5": g.semiring.energy_field(head, tail, cost, sources, tau=0.5, **kw),
        "field_tau0": g.semiring.energy_field(head, tail, cost, sources, tau=0.0, **kw),
        "hops_tau0.5": g.semiring.hop_energy_fields(head, tail, cost, sources, tau=0.5, **kw),
        "index_per_source_tau0.5": index.energy_field(
            per_source, sources[:6], max_hops=MAX_HOPS, tau=0.5, mesh=mesh
        ),
    }


def main(port: int, process_id: int, num_processes: int, out: str) -> None:
    """Join the distributed system, compute the fields on the global mesh, save them."""
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=num_processes,
        process_id=process_id,
    )
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh

    n_local = jax.local_device_count()
    assert jax.device_count() == num_processes * n_local, jax.devices()
    mesh = Mesh(np.array(jax.devices()), ("sources",))
    fields = energy_fields(mesh)
    for name, x in fields.items():
        assert not x.is_fully_addressable, name  # a global array over both processes
        assert len(x.addressable_shards) == n_local, (name, x.sharding)
    # non-fully-addressable arrays come back whole (replicated) on every process
    np.savez(out, **multihost_utils.process_allgather(fields, tiled=True))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
