"""What the benchmark scripts share: their common options, number formatting, timing and
memory helpers, the random graph several of them time, and result writing.

A script imports it as ``_common``: run as ``python benchmarks/<name>.py``, its own directory
is first on ``sys.path``. No benchmark imports another benchmark script; what two of them
share lives here (and what a benchmark shares with an experiment, in ``experiments._setup``).

Nothing heavy is imported at module level (JAX and the package only inside the functions
that need them): the ``spawn`` children of :func:`in_child` re-import their script, and their
peak RSS must stay attributable to the side they measure.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing as mp
import os
import platform
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "parser",
    "output_file",
    "sig3",
    "random_graph",
    "median_time",
    "peak_rss_mib",
    "in_child",
    "machine",
    "write_json",
    "save_png",
]


def parser(
    description: str,
    *,
    quick: str | None = None,
    out: str | None = "write all measurements as JSON (atomically)",
    out_default: str | None = None,
) -> argparse.ArgumentParser:
    """A benchmark's argument parser with the common options: ``--quick`` (when ``quick``
    gives its help: smaller sizes) and ``--out PATH`` (when ``out`` gives its help: where
    :func:`write_json` puts the measurements; default ``out_default``)."""
    ap = argparse.ArgumentParser(description=description)
    if quick is not None:
        ap.add_argument("--quick", action="store_true", help=quick)
    if out is not None:
        ap.add_argument("--out", default=out_default, type=output_file, help=out)
    return ap


def output_file(value: str) -> str:
    """An argument naming a file to write at the end of a run, checked when the arguments are
    parsed (an ``argparse`` type), so that a run of minutes never ends on a path it cannot
    write: not empty, no NUL byte, not a directory, its folder a directory (created if
    missing) that this process may write in."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"must name a file, got {value!r}")
    if "\0" in value:
        raise argparse.ArgumentTypeError("a path cannot hold a NUL byte")
    path = Path(value)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is a directory, not a file")
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot create the folder of {value!r}: {err}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write in {str(folder)!r}")
    return value


def sig3(x: float) -> str:
    """``x`` to 3 significant digits without an exponent (``41.2``, ``0.161``, ``1230``)."""
    return f"{float(f'{x:.3g}'):g}"


def random_graph(n_nodes: int, n_edges: int, n_sources: int, seed: int = 0):
    """Uniform random directed multigraph: ``(head, tail, cost, sources)``, int32 endpoints,
    float32 costs ``U(0, 1)`` and ``n_sources`` distinct source nodes."""
    rng = np.random.default_rng(seed)
    head = rng.integers(0, n_nodes, n_edges, dtype=np.int32)
    tail = rng.integers(0, n_nodes, n_edges, dtype=np.int32)
    cost = rng.random(n_edges, dtype=np.float32)
    sources = rng.choice(n_nodes, n_sources, replace=False).astype(np.int32)
    return head, tail, cost, sources


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` (seconds)."""
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


def in_child(fn, *args):
    """``fn(*args)`` in a fresh ``spawn`` child process (its own peak RSS, its own JAX)."""
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def machine() -> dict:
    """CPU model, cores, Python, the 1-minute load and the versions of the libraries timed."""
    import jax
    import networkx as nx
    import scipy

    cpu = "unknown"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if "model name" in ln), cpu)
    versions = {m.__name__: m.__version__ for m in (np, scipy, jax, nx)}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return dict(
        cpu=cpu, cores=os.cpu_count(), python=platform.python_version(), load=load, **versions
    )


def _plain(x: Any) -> Any:
    """NumPy (and JAX) scalars and arrays as Python numbers and lists; called by ``json`` only
    for what it cannot write itself."""
    if isinstance(x, np.generic):
        return x.item()
    if hasattr(x, "__array__"):
        return np.asarray(x).tolist()
    raise TypeError(f"not JSON serializable: {type(x).__name__}")


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON, atomically (:func:`grounding.io.atomic_write_bytes`:
    a reader never sees a half-written file; an interrupted run keeps the old one)."""
    from grounding.io import atomic_write_bytes  # the package (and JAX) only when writing

    return atomic_write_bytes(path, json.dumps(data, indent=2, default=_plain).encode())


def save_png(fig, path: str | os.PathLike, dpi: int) -> Path:
    """Write a matplotlib figure as PNG, atomically (like :func:`write_json`)."""
    from grounding.io import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return atomic_write_bytes(path, buf.getvalue())
