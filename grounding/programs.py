"""Compiled programs in a long-lived process: a bounded cache, its counters, and the call that
releases them.

Every compiled program the solver runs (:func:`grounding.ground`, :func:`grounding.ground_batch`
and the systems built on them) and every program of the in-process language model
(:class:`grounding.language.LocalLM`: its forward pass and cache moves) is compiled ahead of
time for one configuration and one set of input shapes, and kept in one least-recently-used
cache of at most :func:`max_programs`
programs (default :data:`DEFAULT_MAX_PROGRAMS`). Every input dimension is padded to a shape
bucket first (:func:`grounding._shapes.bucket`: candidates, anchors, chain widths, nodes,
edges and batch rows), so a workload meets finitely many shapes and, when they fit under the
cap, compiles each once and stops compiling once it has seen them (a workload with more
shapes than the cap compiles evicted ones again: :func:`program_info` counts those
``recompilations``, and a count that keeps growing says the cap is below the workload's
working set); an evicted program's executable is freed with it.

A compiled program holds tens to hundreds of memory maps, and Linux stops a process at
``vm.max_map_count`` (65,530 by default), so the cap is what keeps a process that grounds for
days alive: at the default cap the solver's programs hold about 11,000 maps (about 170 each,
measured) whatever the workload. :func:`release_programs` drops every compiled program of the
process (the solver's and JAX's own caches) and returns the freed heap to the operating system;
the QA systems call it between batches when built with ``release_programs=True``.

Example:
    >>> import grounding
    >>> info = grounding.programs.program_info()
    >>> sorted(info)
    ['by_kind', 'compilations', 'evictions', 'live', 'max_programs', 'recompilations']
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Callable, Hashable
from typing import Any

import jax

from grounding._checks import check_int, is_concrete

__all__ = [
    "clear_solver_programs",
    "max_programs",
    "program_info",
    "release_programs",
    "set_max_programs",
]

#: Programs the solver keeps compiled at once unless :func:`set_max_programs` says otherwise.
#: A program holds about 70-400 memory maps, so 64 of them stay far below Linux's default
#: ``vm.max_map_count`` of 65,530.
DEFAULT_MAX_PROGRAMS = 64

_LOCK = threading.RLock()
_CACHE: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
_STATE = {"max_programs": DEFAULT_MAX_PROGRAMS, "compilations": 0, "evictions": 0,
          "recompilations": 0}  # fmt: skip
#: Hashes of the keys of the last evicted programs (to count recompilations; bounded).
_EVICTED: collections.OrderedDict[int, None] = collections.OrderedDict()
_EVICTED_MAX = 16_384  # (about 2 MB at most)
_TRACED: dict[Hashable, Callable] = {}  # jit wrappers for traced arguments (jax.grad, jit)


def max_programs() -> int:
    """The cap on compiled programs kept at once (see the module docstring)."""
    return _STATE["max_programs"]


def set_max_programs(n: int) -> int:
    """Set the cap on compiled programs kept at once (``n >= 1``); the least recently used
    programs beyond it are dropped now. Returns the previous cap.

    Raises:
        ValueError, TypeError: ``n`` is not an integer ``>= 1``.
    """
    n = check_int(n, "max_programs", 1)
    with _LOCK:
        old, _STATE["max_programs"] = _STATE["max_programs"], n
        _evict()
    return old


def program_info() -> dict[str, Any]:
    """Counters of the program cache: ``live`` programs, the cap ``max_programs``, and since
    the process started (or the last :func:`release_programs`) the ``compilations``, the
    ``evictions`` and the ``recompilations``: compilations of a program the cap had evicted
    (one of the last 16,384 evicted). A count that keeps growing means the workload uses more
    programs than the cap holds: each comes back compiled again (0.4-7 s), and JAX's own trace
    caches keep what each compilation traced until :func:`release_programs` (the limits page
    of the documentation); raise the cap if the memory maps allow. ``by_kind``: live programs
    per kind (``"solver"``: the grounding program; ``"chain costs"``: the walk report's
    costs; ``"local model"``: the in-process language model's programs)."""
    with _LOCK:
        kinds = collections.Counter(key[0][0] for key in _CACHE)
        return dict(
            live=len(_CACHE),
            max_programs=_STATE["max_programs"],
            compilations=_STATE["compilations"],
            evictions=_STATE["evictions"],
            recompilations=_STATE["recompilations"],
            by_kind=dict(kinds),
        )


def release_programs() -> dict[str, int]:
    """Drop every compiled program of the process and return the freed memory: the solver's
    cache, JAX's own compilation and tracing caches (``jax.clear_caches``), then a garbage
    collection and, with glibc, ``malloc_trim(0)`` (without it the freed heap stays mapped to
    the process). The next call of each program compiles it again. Returns
    :func:`program_info` as it was before the release; the counters restart at zero.

    Call it between batches, never while another thread is inside :func:`grounding.ground`.
    """
    with _LOCK:
        before = program_info()
        clear_solver_programs()
    jax.clear_caches()
    gc.collect()
    _malloc_trim()
    return before


def clear_solver_programs() -> None:
    """Empty the solver's cache and restart its counters, leaving JAX's own caches alone (a
    cheaper :func:`release_programs` for code that only needs the solver to compile afresh,
    e.g. a test that counts compilations)."""
    with _LOCK:
        _CACHE.clear()
        _TRACED.clear()
        _EVICTED.clear()
        _STATE.update(compilations=0, evictions=0, recompilations=0)


def _malloc_trim() -> None:
    """Return freed heap pages to the operating system (glibc only; a no-op elsewhere)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def _evict() -> None:
    """Drop the least recently used programs beyond the cap, then return the heap their
    executables held (without the trim, a process that keeps compiling and evicting grows
    its resident memory by fragments of freed programs)."""
    dropped = 0
    while len(_CACHE) > _STATE["max_programs"]:
        _EVICTED[hash(_CACHE.popitem(last=False)[0])] = None
        dropped += 1
    while len(_EVICTED) > _EVICTED_MAX:
        _EVICTED.popitem(last=False)
    _STATE["evictions"] += dropped
    if dropped:
        _malloc_trim()


def _signature(args: tuple) -> Hashable:
    """What an ahead-of-time executable is specific to: the arguments' tree structure and each
    leaf's shape, dtype, weak type and (JAX arrays) sharding."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    return tree, tuple(
        (x.shape, x.dtype, x.weak_type, x.sharding)
        if isinstance(x, jax.Array)
        else (getattr(x, "shape", ()), getattr(x, "dtype", type(x)))
        for x in leaves
    )


def run_program(key: tuple, make: Callable[[], Callable], *args: Any) -> Any:
    """``jax.jit(make())(*args)`` through the bounded cache: the program of ``key`` (a hashable
    description of everything ``make`` closes over; ``key[0]`` names its kind) for these
    arguments' shapes is compiled ahead of time on first use and kept until evicted. Traced
    arguments (an outer ``jit``, ``grad`` or ``vmap``) go through a plain ``jax.jit`` of
    ``make()``, kept per ``key`` (at most 16 such wrappers; :func:`release_programs` drops
    them with the rest)."""
    if not is_concrete(*jax.tree_util.tree_leaves(args)):
        with _LOCK:
            fn = _TRACED.get(key)
            if fn is None:
                if len(_TRACED) >= 16:
                    _TRACED.pop(next(iter(_TRACED)))
                fn = _TRACED[key] = jax.jit(make())
        return fn(*args)
    full = (key, _signature(args))
    with _LOCK:
        exe = _CACHE.get(full)
        if exe is not None:
            _CACHE.move_to_end(full)
        else:
            exe = jax.jit(make()).lower(*args).compile()
            _CACHE[full] = exe
            _STATE["compilations"] += 1
            seen = hash(full)
            if seen in _EVICTED:  # the cap had evicted it
                del _EVICTED[seen]
                _STATE["recompilations"] += 1
            _evict()
    return exe(*args)
