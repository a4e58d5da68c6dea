"""The fused CPU backend of the path engine (``grounding.semiring.fused``) against the XLA
layouts: the segment reductions (the reference for traced edges) and the ELL blocks.

Every check compares whole fields: same ``+inf`` pattern, no NaN, values within float32
rounding of the float64 reference for float32 values, within float64 rounding for float64
ones. The kernel's factored fast path, its exact fallback at small ``tau`` (whose bound
depends on the precision), per-source costs, priors, ``jit``/``vmap``/``grad`` and the
min-plus semiring are each reached by a case below.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F32, F64
from hypothesis import given, settings
from hypothesis import strategies as st

import grounding as g
from grounding import semiring
from grounding.semiring import fused, layout, recursion
from grounding.semiring.kernels import SegmentEdges
from grounding.testing.strategies import seeds, weighted_digraphs

pytestmark = pytest.mark.skipif(not fused.AVAILABLE, reason="numba is not installed")

taus = st.one_of(st.just(0.0), st.floats(0.01, 5.0))
dtypes = st.sampled_from([np.float32, np.float64])


def assert_fields_equal(got, want, tol=F64):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and not np.isnan(got).any()
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], **tol)


def layouts(head, tail, n):
    """The fused index and the reference (segment) layout of one graph."""
    ref = SegmentEdges(jnp.asarray(head), jnp.asarray(tail), n)
    return semiring.EdgeIndex.from_edges(head, tail, n, backend="fused"), ref


# each example compiles the recursion for a new graph shape (~1 s): a quarter of the profile
@settings(max_examples=max(10, settings.default.max_examples // 4))
@given(weighted_digraphs(), st.integers(1, 4), taus, st.booleans(), st.booleans(), dtypes, seeds)
def test_fields_per_hop_fields_and_edge_usage_equal_the_segment_layout(
    gr, k, tau, prior, per_source, dtype, seed
):
    """Eq. (13)/(11) fields, exact-hop fields and Prop. 2 edge usage (the gradient through the
    kernel's backward pass) of float32 or float64 inputs against the float64 reference, with
    shared or per-source costs and priors."""
    rng = np.random.default_rng(seed)
    n_src = int(rng.integers(1, 4))
    sources = rng.integers(0, gr.n_nodes, n_src).astype(np.int32)
    # continuous costs (no ties: the min-plus gradient is then unique)
    cost = gr.cost + rng.uniform(0, 0.01, gr.cost.shape)
    if per_source:
        cost = cost[None] + rng.uniform(0, 1, (n_src, len(cost)))
    log_prior = gr.log_prior if prior else None
    fast, ref = layouts(gr.head, gr.tail, gr.n_nodes)
    c = cost.astype(dtype)
    p = None if log_prior is None else log_prior.astype(dtype)
    tol = F32 if dtype == np.float32 else F64
    for per_hop in (False, True):
        want = recursion.fields(ref, cost, sources, k, tau, log_prior, None, per_hop)
        got = recursion.fields(fast, c, sources, k, tau, p, None, per_hop)
        assert_fields_equal(got, np.asarray(want).astype(dtype), tol=tol)
    targets = rng.integers(0, gr.n_nodes, n_src).astype(np.int32)
    got = recursion.edge_usage(fast, c, sources, targets, k, tau, p)
    want = recursion.edge_usage(ref, cost, sources, targets, k, tau, log_prior)
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **tol)


@settings(max_examples=max(10, settings.default.max_examples // 4))
@given(
    st.integers(20, 200),
    st.one_of(st.integers(1, 8), st.integers(60, 130)),
    st.sampled_from([0.0, 0.005, 0.3, 2.0]),
    dtypes,
    seeds,
)
def test_kernel_equals_the_float64_reference(n, n_src, tau, dtype, seed):
    """Fields on random graphs with hubs equal the float64 reference to the rounding of their
    precision, at every temperature (float32: the polynomial ``exp``/``log``; both: the
    factored sum and, at ``tau = 0.005``, its exact fallback where terms underflow). With
    60-130 sources (one to three 64-bit words of reach bits) the rows that few sources reach
    take the source-by-source sum, the others the dense one."""
    rng = np.random.default_rng(seed)
    m = 6 * n
    head = rng.integers(0, n, m).astype(np.int32)
    tail = np.where(rng.random(m) < 0.2, 0, rng.integers(0, n, m)).astype(np.int32)  # a hub
    cost = rng.uniform(0, 3, m)
    sources = rng.choice(n, n_src).astype(np.int32)
    fast, ref = layouts(head, tail, n)
    want = recursion.fields(ref, cost, sources, 4, tau, None, None, False)
    got = recursion.fields(fast, cost.astype(dtype), sources, 4, tau, None, None, False)
    assert got.dtype == dtype
    tol = F32 if dtype == np.float32 else F64
    assert_fields_equal(got, np.asarray(want).astype(dtype), tol=tol)


def test_small_tau_rows_far_below_their_node_maximum_are_exact():
    """The factored sum shifts a node by its best source; a source ``1000 tau`` below it
    underflows there and its row must be recomputed exactly, not reported as ``+inf``."""
    # 0 -> 2 (cost 0) and 1 -> 2 (cost 10); sources 0 and 1; then 2 -> 3
    head, tail = np.array([0, 1, 2], np.int32), np.array([2, 2, 3], np.int32)
    cost = np.array([0.0, 10.0, 1.0], np.float32)
    fast, ref = layouts(head, tail, 4)
    for tau in (0.01, 1.0):
        got = fast.energy_field(cost, np.array([0, 1]), max_hops=2, tau=tau)
        want = ref_field = recursion.fields(ref, cost, np.array([0, 1]), 2, tau, None, None, False)
        assert_fields_equal(got, ref_field, tol=F32)
        np.testing.assert_allclose(np.asarray(want)[1, 3], 11.0, rtol=1e-6)


def test_fields_kept_across_calls_keep_their_values():
    """The kernel hands its result to JAX in a pooled array, reused only once nothing but the
    pool refers to it. Fields kept from earlier jitted calls (other sources) still equal
    their own values: this holds whether JAX copies a callback's result (as JAX 0.10 does)
    or keeps a reference to it."""
    rng = np.random.default_rng(3)
    n, m = 3000, 30000
    head, tail = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
    cost = rng.uniform(0, 2, m).astype(np.float32)
    fast, ref = layouts(head, tail, n)
    field = jax.jit(lambda s: fast.energy_field(cost, s, max_hops=3, tau=1.0))
    kept = [field(jnp.arange(8, dtype=jnp.int32) + 8 * k) for k in range(4)]
    for k, got in enumerate(kept):
        sources = np.arange(8, dtype=np.int32) + 8 * k
        want = recursion.fields(ref, cost, sources, 3, 1.0, None, None, False)
        assert_fields_equal(got, want, tol=F32)


def test_one_source_with_per_source_costs_is_not_read_as_shared():
    """``[1, E]`` per-source costs (one source) equal the same costs given as ``[E]``."""
    rng = np.random.default_rng(0)
    head, tail = (
        rng.integers(0, 30, 200).astype(np.int32),
        rng.integers(0, 30, 200).astype(np.int32),
    )
    cost = rng.uniform(0, 2, 200).astype(np.float32)
    fast, _ = layouts(head, tail, 30)
    for tau in (0.0, 0.5):
        kw = dict(max_hops=3, tau=tau)
        one = fast.energy_field(cost[None], np.array([4]), **kw)
        assert_fields_equal(one, fast.energy_field(cost, np.array([4]), **kw))
        usage = fast.edge_usage(cost[None], np.array([4]), np.array([7]), **kw)
        shared = fast.edge_usage(cost, np.array([4]), np.array([7]), **kw)
        np.testing.assert_allclose(np.asarray(usage), np.asarray(shared), **F32)


def test_jit_vmap_traced_tau_grad_and_hop_distances_match_the_ell_layout():
    rng = np.random.default_rng(1)
    n, m = 300, 2000
    head, tail = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
    cost = rng.uniform(0, 2, m).astype(np.float32)
    src = np.array([0, 5, 9], np.int32)
    fast = semiring.EdgeIndex.from_edges(head, tail, n, backend="fused")
    ell = semiring.EdgeIndex.from_edges(head, tail, n, backend="ell")

    def field(index, c, tau):
        return index.energy_field(c, src, max_hops=3, tau=tau)

    costs = jnp.stack([cost, 2 * cost])
    batched = [jax.vmap(lambda c, i=i: field(i, c, 0.5))(costs) for i in (fast, ell)]
    assert_fields_equal(*batched, tol=F32)
    for tau in (0.0, 0.7):  # a traced tau picks the semiring at run time
        traced = jax.jit(lambda t: field(fast, cost, t))(tau)
        assert_fields_equal(traced, field(ell, cost, tau), tol=F32)

    def total(index, c):  # a scalar through the whole recursion
        f = field(index, c, 0.4)
        return jnp.sum(jnp.where(jnp.isfinite(f), f, 0.0))

    grads = [jax.jit(jax.grad(total, argnums=1))(i, cost) for i in (fast, ell)]
    np.testing.assert_allclose(*map(np.asarray, grads), **F32)
    assert np.abs(np.asarray(grads[0])).sum() > 1.0
    np.testing.assert_array_equal(
        np.asarray(fast.hop_distances(src, max_hops=4)),
        np.asarray(ell.hop_distances(src, max_hops=4)),
    )
    closure = [i.energy_field(cost, src, max_hops=None, tau=0.0) for i in (fast, ell)]
    assert_fields_equal(*closure, tol=F32)


def test_empty_graph_isolated_nodes_and_no_sources():
    fast, _ = layouts(np.zeros(0, np.int32), np.zeros(0, np.int32), 3)
    assert np.isposinf(
        np.asarray(fast.energy_field(np.zeros(0), np.array([0]), max_hops=2, tau=1.0))
    ).all()
    head, tail = np.array([0], np.int32), np.array([1], np.int32)
    fast, _ = layouts(head, tail, 4)
    got = np.asarray(fast.energy_field(np.array([0.5]), np.array([0, 2]), max_hops=2, tau=1.0))
    np.testing.assert_allclose(got[0], [np.inf, 0.5, np.inf, np.inf])
    assert np.isposinf(got[1]).all()
    none = fast.energy_field(np.array([0.5]), np.zeros(0, np.int32), max_hops=2, tau=1.0)
    assert none.shape == (0, 4)


def test_backend_is_chosen_by_the_platform_and_validated():
    assert layout.default_backend() == ("fused" if jax.default_backend() == "cpu" else "ell")
    head, tail = np.array([0], np.int32), np.array([1], np.int32)
    assert semiring.EdgeIndex.from_edges(head, tail, 2).backend == layout.default_backend()
    with pytest.raises(ValueError, match="backend must be one of"):
        semiring.EdgeIndex.from_edges(head, tail, 2, backend="gpu")


def test_public_energy_field_on_a_large_graph_uses_the_fused_index():
    """``energy_field(head, tail, ...)`` lays out large concrete graphs as an ``EdgeIndex``
    with the platform's backend; its result equals the traced (segment) path."""
    rng = np.random.default_rng(5)
    n, m = 4000, layout.ELL_MIN_EDGES
    head, tail = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
    cost, src = rng.uniform(0, 2, m).astype(np.float32), np.array([0, 17, 250], np.int32)
    graph = layout.as_graph(head, tail, n)
    assert isinstance(graph, semiring.EdgeIndex) and graph.backend == layout.default_backend()
    kw = dict(n_nodes=n, max_hops=2, tau=0.5)
    traced = jax.jit(lambda h, t: g.semiring.energy_field(h, t, cost, src, **kw))(head, tail)
    assert_fields_equal(g.semiring.energy_field(head, tail, cost, src, **kw), traced, tol=F32)


def test_a_sharded_field_on_a_fused_index_over_two_devices_finishes_and_is_exact():
    """Regression: a million-entry field on a fused index under a 2-device mesh deadlocked
    (each device's callback waited on the other's arrays); it now takes the segment hop and
    equals the unsharded fused field."""
    code = """
import numpy as np, jax
from jax.sharding import Mesh
import grounding as g
rng = np.random.default_rng(0)
n, m = 20000, 200000
h, t = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
c, src = rng.random(m, dtype=np.float32), rng.choice(n, 64, replace=False).astype(np.int32)
index = g.semiring.EdgeIndex.from_edges(h, t, n, backend="fused")
mesh = Mesh(np.array(jax.devices()), ("sources",))
for tau in (1.0, 0.0):
    kw = dict(max_hops=3, tau=tau)
    got = np.asarray(index.energy_field(c, src, mesh=mesh, **kw))
    want = np.asarray(index.energy_field(c, src, **kw))
    assert (np.isinf(got) == np.isinf(want)).all() and np.isfinite(want).sum() > 1000
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-5, atol=1e-6)
print("ok")
"""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=240)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_float64_under_a_scoped_enable_x64_runs_the_kernel():
    """Regression: with 64-bit values enabled only inside ``jax.enable_x64`` (the experiments
    do this), a callback runs on a thread without it and JAX cast its float64 results to
    float32 ("Incorrect output dtype"). Results now travel as uint32 words: the float64
    field and edge usage come from the kernel and equal the segment layout's."""
    code = """
import jax, numpy as np
import grounding as g
from grounding.semiring import _fused_host as kernels, recursion
from grounding.semiring.kernels import SegmentEdges
calls = []
for name in ("forward_hops_host", "backward_host"):
    def counted(*a, _f=getattr(kernels, name), _n=name, **kw):
        calls.append(_n)
        return _f(*a, **kw)
    setattr(kernels, name, counted)
rng = np.random.default_rng(0)
n, m = 20000, 200000  # large enough that the callback runs on another thread
h, t = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
index = g.semiring.EdgeIndex.from_edges(h, t, n, backend="fused")
ref = SegmentEdges(jax.numpy.asarray(h), jax.numpy.asarray(t), n)
c, src = rng.uniform(0, 2, m), np.arange(64)
with jax.enable_x64(True):
    f = index.energy_field(c, src, max_hops=3, tau=0.5)
    u = index.edge_usage(c, np.array([0]), np.array([7]), max_hops=3, tau=0.5)
    want_f = recursion.fields(ref, c, src, 3, 0.5, None, None, False)
    want_u = recursion.edge_usage(ref, c, np.array([0]), np.array([7]), 3, 0.5, None)
assert f.dtype == u.dtype == np.float64 and set(calls) == {"forward_hops_host", "backward_host"}
f, want_f = np.asarray(f), np.asarray(want_f)
assert (np.isinf(f) == np.isinf(want_f)).all() and np.isfinite(f).sum() > 1000
ok = np.isfinite(want_f)
np.testing.assert_allclose(f[ok], want_f[ok], rtol=1e-9, atol=1e-10)
np.testing.assert_allclose(np.asarray(u), np.asarray(want_u), rtol=1e-9, atol=1e-10)
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=240)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_other_float_dtypes_take_the_xla_hop():
    """float16 values on a fused index (no kernel for them) get the segment layout's field."""
    rng = np.random.default_rng(0)
    head, tail = rng.integers(0, 200, 1000), rng.integers(0, 200, 1000)
    fast, ref = layouts(head, tail, 200)
    cost, sources = rng.uniform(0, 2, 1000).astype(np.float16), np.arange(3)
    got = recursion.fields(fast, cost, sources, 2, 1.0, None, None, False)
    want = recursion.fields(ref, cost, sources, 2, 1.0, None, None, False)
    assert got.dtype == jnp.float16
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
