"""Shared plumbing for the experiments: arguments, atomic writes, figures, progress bars.

Every output file is written atomically: the bytes go to a temporary file in the target
directory, which is then ``os.replace``-d onto the final name, so a reader never sees a
half-written figure or table (and an interrupted run leaves the previous file intact).
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import jax  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from grounding import plot as gplot  # noqa: E402
from grounding.io import atomic_write_bytes  # noqa: E402

__all__ = [
    "parse_args",
    "float64",
    "atomic_write_bytes",
    "atomic_write_text",
    "write_json",
    "write_csv",
    "save_figure",
    "styled",
    "progress",
    "plt",
]


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default unless it is a flag's ``True``/``False`` or ``None``."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)


def parser(description: str, prog: str) -> argparse.ArgumentParser:
    """The common options: ``--quick`` (default) / ``--full`` and ``--out DIR``."""
    ap = argparse.ArgumentParser(
        prog=prog,
        description=description.replace("``", ""),
        formatter_class=_Defaults,
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="full", action="store_false", help="small run (the default)")
    mode.add_argument("--full", dest="full", action="store_true", help="full-size run (slow)")
    ap.add_argument("--out", type=out_dir, default=Path("results"), help="output directory")
    ap.add_argument(
        "--seeds",
        type=positive_int,
        default=None,
        metavar="N",
        help="seeds 0..N-1: benchmark seeds where questions are sampled (learned_retrievers: "
        "training seeds; default: 1 quick, 3 full)",
    )
    ap.add_argument(
        "--per-hop",
        type=positive_int,
        default=None,
        metavar="N",
        help="quick mode: N questions per hop count where an experiment takes a subset "
        "(pankrag: the test questions answered, 15 by default; proh: the questions drawn, "
        "20 by default, a tenth of them test questions; metaqa: the test questions answered, "
        "150 by default)",
    )
    ap.set_defaults(full=False)
    return ap


def positive_int(text: str) -> int:
    """The ``--seeds`` argument type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def seeds(args: argparse.Namespace) -> tuple[int, ...]:
    """The benchmark seeds of a run: ``--seeds N`` gives ``0..N-1``; by default one seed in
    quick mode and three in full mode."""
    return tuple(range(args.seeds if args.seeds is not None else (3 if args.full else 1)))


def out_dir(text: str) -> Path:
    """The ``--out`` argument type: a directory name, never empty or blank (``Path("")`` would
    silently mean the working directory) and without a NUL byte."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"must name a directory, got {text!r} (use --out . for the working directory)"
        )
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"a directory name cannot hold a NUL byte, got {text!r}")
    return Path(text)


def checked_out_dir(ap: argparse.ArgumentParser, out: Path) -> Path:
    """Create ``out`` and check that files can be written there, before any computation
    (an unwritable directory is an argument error, not a traceback after the whole run)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        ap.error(f"--out {out}: cannot write there ({e.strerror or e})")
    return out


def parse_args(
    argv: Sequence[str] | None, description: str, prog: str | None = None
) -> argparse.Namespace:
    """Parse the common options of an experiment (``prog``: its command line, by default
    ``python -m experiments.<module>`` of the caller) and check ``--out``."""
    if prog is None:  # the caller's module name, also when it runs as __main__ (-m)
        caller = sys._getframe(1).f_globals
        spec = caller.get("__spec__")
        prog = f"python -m {spec.name if spec else caller.get('__name__', 'experiments')}"
    ap = parser(description, prog)
    args = ap.parse_args(list(argv) if argv is not None else None)
    checked_out_dir(ap, args.out)
    return args


def float64(main: Callable) -> Callable:
    """Run ``main`` with 64-bit JAX arrays (measured values are compared with bounds to
    ~1e-12), scoped to the call: the caller's own ``jax_enable_x64`` setting is untouched."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs):
        with jax.enable_x64(True):
            return main(*args, **kwargs)

    return wrapped


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _jsonable(x: Any) -> Any:
    """Plain JSON: numpy/JAX scalars and arrays to Python; non-finite floats to strings."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.ndarray, jax.Array)):
        return _jsonable(np.asarray(x).tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))
    return x


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    text = json.dumps(_jsonable(obj), indent=2, allow_nan=False, sort_keys=False)
    return atomic_write_text(path, text + "\n")


def write_csv(
    path: str | os.PathLike, header: Sequence[str], rows: Iterable[Sequence[Any]]
) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_fmt(v) for v in row])
    return atomic_write_text(path, buf.getvalue())


def _fmt(v: Any) -> Any:
    """A CSV cell: floats to 10 significant digits (``0.69``, not ``0.6900000000000002``; the
    JSON beside each CSV keeps every digit), numpy scalars as Python ones."""
    if isinstance(v, (float, np.floating)):
        return format(float(v), ".10g")
    if isinstance(v, (np.integer, np.bool_)):
        return v.item()
    return v


def styled(plot: Callable) -> Callable:
    """Draw inside :func:`grounding.plot.style` (the package's one figure style)."""

    @functools.wraps(plot)
    def wrapped(*args, **kwargs):
        with gplot.style():
            return plot(*args, **kwargs)

    return wrapped


def save_figure(fig: Any, path: str | os.PathLike, *, quick: bool, dpi: int = 150) -> list[Path]:
    """Write ``fig`` as PNG and every panel's drawn numbers as ``<stem>.panels.json``
    (:func:`grounding.plot.figure_data`), both atomically, and close it. A ``quick`` run's
    figure says so in its corner."""
    path = Path(path)
    if quick:
        gplot.mark_quick(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    panels = gplot.figure_data(fig)
    plt.close(fig)
    return [
        atomic_write_bytes(path, buf.getvalue()),
        write_json(
            path.with_suffix(".panels.json"),
            {"figure": path.name, "quick": quick, "panels": panels},
        ),
    ]


def progress(iterable: Iterable, desc: str, total: int | None = None) -> Iterable:
    """A tqdm bar on stderr (disappears when done)."""
    return tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True)
