"""Compiled programs in a long-lived process: every input dimension reaches the solver's program
bucketed (so a workload compiles finitely many programs), the cache is capped with eviction,
and :func:`grounding.programs.release_programs` frees them."""

from __future__ import annotations

import sys

import jax.numpy as jnp
import numpy as np
import pytest

import grounding as g
from grounding import programs


@pytest.fixture
def fresh():
    programs.clear_solver_programs()
    old = programs.max_programs()
    yield
    programs.set_max_programs(old)


def _solver_compilations() -> int:
    return programs.program_info()["compilations"]


def _star(n: int) -> g.TypedGraph:
    """``hub -r-> leaf_i`` and ``leaf_i -s-> hub``: every leaf one hop from the hub."""
    triples = [("hub", "r", f"leaf{i}") for i in range(n)]
    triples += [(f"leaf{i}", "s", "hub") for i in range(n)]
    return g.TypedGraph.from_triples(triples)


def test_anchor_counts_share_programs(fresh):
    """Questions with 1..8 anchors meet 4 anchor buckets (1, 2, 4, 8), not 8 programs."""
    graph = _star(12)
    leaves = [f"leaf{i}" for i in range(12)]
    lp = jnp.log(jnp.full(4, 0.25))
    for a in range(1, 9):
        p = g.GroundingProblem("q", tuple(leaves[8:12]), lp, anchors=tuple(leaves[:a]),
                               max_hops=2)  # fmt: skip
        r = g.ground(p, graph, lam=1.0, kappa=3.0, tau=0.7, n_paths=0)
        assert np.all(np.isfinite(r.raw_energy))
    assert programs.program_info()["by_kind"]["solver"] == 4


def test_entropic_energy_counts_each_anchor_once():
    """Eq. (13) with the uniform prior over walks from the anchors: with anchors ``{a, b}``
    (a count that pads to 2, nothing repeated) and ``{a, b, c}`` (pads to 4, ``a`` repeated),
    the energy is the closed form ``-tau * log(#walks to x / #walks)``: 1/2 both times, and
    the padding anchor ``a`` (whose one walk ends at ``y``) would make it 2/5 if it counted."""
    tri = [("a", "r", "y"), ("b", "r", "x"), ("c", "r", "y"), ("c", "r", "x")]
    graph = g.TypedGraph.from_triples(tri)
    lp = jnp.log(jnp.array([0.5, 0.5]))
    tau = 0.5
    for anchors, walks_x, walks in ((("a", "b"), 1, 2), (("a", "b", "c"), 2, 4)):
        p = g.GroundingProblem("q", ("x", "y"), lp, anchors=anchors, max_hops=1)
        r = g.ground(p, graph, lam=1.0, kappa=9.0, tau=tau, n_paths=0)
        # every edge has cost 0 at reliability 1 (alpha, xi, hop_cost defaults): the energy is
        # the log-share of the walks that end at x
        want = -tau * np.log(walks_x / walks)
        np.testing.assert_allclose(float(r.raw_energy[0]), want, rtol=1e-6)


def test_an_out_of_graph_longer_chain_adds_no_program(fresh):
    """The chains' width is bucketed: an out-of-graph 3-hop chain beside 1-hop chains (it is
    in no slot, but it sets the width) uses the program of the 1-hop question."""
    graph = _star(4)
    lp = jnp.log(jnp.full(4, 1 / 4))
    one_hop = [g.ClaimChain(("hub", f"leaf{i}"), ("r",)) for i in range(3)]
    p1 = g.GroundingProblem("q", (*one_hop, g.ClaimChain(("leaf3", "hub"), ("s",))), lp)
    long = g.ClaimChain(("hub", "leaf0", "hub", "nowhere"), ("r", "s", "r"))
    p3 = g.GroundingProblem("q", (*one_hop, long), lp)
    g.ground(p1, graph, lam=1.0, kappa=1.0, n_paths=0)
    before = _solver_compilations()
    r = g.ground(p3, graph, lam=1.0, kappa=1.0, n_paths=0)
    assert _solver_compilations() == before
    assert not np.isfinite(r.raw_energy[3])  # out of graph: no walk


def test_batch_sizes_meet_bucketed_programs(fresh):
    """Batches of 1..16 questions meet 5 batch buckets (1, 2, 4, 8, 16)."""
    graph = _star(6)
    lp = jnp.log(jnp.full(2, 0.5))
    p = g.GroundingProblem("q", ("leaf0", "leaf1"), lp, anchors=("hub",), max_hops=1)
    for n in range(1, 17):
        g.ground_batch([p] * n, graph, lam=1.0, kappa=1.0, n_paths=0)
    assert programs.program_info()["by_kind"]["solver"] == 5


def test_large_graphs_of_nearby_sizes_share_a_program(fresh):
    """Graphs from ``ELL_MIN_EDGES`` edges up are padded in eighth-of-an-octave buckets (nodes
    and edges): 70,000 and 70,003 edges, 70,001 and 70,004 nodes, one program; the energies
    are those of the unpadded graph (a small graph's walks, checked by hand)."""
    from grounding.semiring.layout import ELL_MIN_EDGES

    n = 70_000
    assert n >= ELL_MIN_EDGES
    lp = jnp.log(jnp.array([0.5, 0.5]))
    for extra in (0, 3):
        names = [f"v{i}" for i in range(n + 1 + extra)]
        head = np.arange(n + extra)
        tail = head + 1
        graph = g.TypedGraph(
            head=head.astype(np.int32), relation=np.zeros(n + extra, np.int32),
            tail=tail.astype(np.int32), reliability=np.ones(n + extra, np.float32),
            entities=tuple(names), relations=("next",),
        )  # fmt: skip
        p = g.GroundingProblem("q", ("v2", "v5"), lp, anchors=("v0",), max_hops=2)
        r = g.ground(p, graph, lam=1.0, kappa=1.0, n_paths=0)
        assert np.isfinite(r.raw_energy[0]) and not np.isfinite(r.raw_energy[1])
    assert programs.program_info()["by_kind"]["solver"] == 1


def test_the_cap_evicts_least_recently_used_programs_and_results_stay_right(fresh):
    graph = _star(6)
    lp = jnp.log(jnp.full(2, 0.5))
    p = g.GroundingProblem("q", ("leaf0", "leaf1"), lp, anchors=("hub",), max_hops=1)
    want = g.ground(p, graph, lam=1.0, kappa=1.0, n_paths=0)
    assert programs.set_max_programs(2) == programs.DEFAULT_MAX_PROGRAMS
    for n in (1, 2, 3, 5, 9):  # five batch buckets
        g.ground_batch([p] * n, graph, lam=1.0, kappa=1.0, n_paths=0)
    info = programs.program_info()
    assert info["live"] == 2 and info["evictions"] >= 4
    assert info["recompilations"] == 0  # each shape compiled once
    again = g.ground(p, graph, lam=1.0, kappa=1.0, n_paths=0)  # evicted: compiled again
    np.testing.assert_array_equal(again.log_posterior, want.log_posterior)
    after = programs.program_info()
    assert after["recompilations"] == 1 and after["compilations"] == info["compilations"] + 1
    g.ground_batch([p] * 9, graph, lam=1.0, kappa=1.0, n_paths=0)  # live: no compilation
    assert programs.program_info()["recompilations"] == 1
    with pytest.raises(ValueError, match="max_programs"):
        programs.set_max_programs(0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/maps")
def test_release_frees_the_memory_maps_of_compiled_programs(fresh):
    """Programs hold memory maps; releasing them gives most back (Linux' limit is on maps)."""

    def maps() -> int:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    graph = _star(6)
    lp = jnp.log(jnp.full(2, 0.5))
    p = g.GroundingProblem("q", ("leaf0", "leaf1"), lp, anchors=("hub",), max_hops=1)
    programs.release_programs()
    base = maps()
    for n in (1, 2, 3, 5, 9, 17):
        g.ground_batch([p] * n, graph, lam=1.0, kappa=1.0, n_paths=0)
    grown = maps()
    before = programs.release_programs()
    assert before["live"] == 6 and programs.program_info()["live"] == 0
    assert grown - base > 60  # six programs hold maps
    assert maps() - base < (grown - base) / 2


def test_checking_inputs_of_new_shapes_compiles_nothing():
    """Graphs, problems and evidence of ever new sizes are checked on the host: building them
    compiles no program (``jnp.asarray`` of a NumPy array compiled and kept one per shape, so
    a long-lived process grew with every new size it checked)."""
    import jax

    compiled = []

    def count(event: str, duration: float, **_) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(event)

    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        g.TypedGraph.from_triples([("a", "r", "b")], [0.5])  # scalars' and dtypes' first use
        compiled.clear()
        for n in range(3, 40, 3):  # 13 new sizes of each
            graph = _star(n)
            g.TypedGraph(graph.head, graph.relation, graph.tail, np.full(2 * n, 0.5),
                         graph.entities, graph.relations)  # fmt: skip
            g.GroundingProblem(
                "?", graph.entities[:n], np.log(np.full(n, 1.0 / n)), anchors=("hub",)
            )
            g.EvidenceState(graph)
        assert compiled == []
    finally:
        jax.monitoring.unregister_event_duration_listener(count)


def test_a_list_of_traced_values_is_still_checked_under_jit():
    """Host arrays go by device_put; a list of tracers (a prior built inside ``jit``) is
    staged as before, not refused as 'not numbers'."""
    import jax

    from grounding._checks import check_log_prob

    @jax.jit
    def total(a, b):
        return check_log_prob([a, b], "log_prior", normalized=False).sum()

    assert float(total(-1.0, -2.0)) == -3.0
