"""The sharded energy field across processes: two JAX processes on this machine (two host
devices each, CPU collectives over gloo) form one 4-device mesh, and the global result
gathered to the host equals the single-process unsharded one (``tests/_multiprocess_worker.py``
is each process's program)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _multiprocess_worker import energy_fields

WORKER = Path(__file__).with_name("_multiprocess_worker.py")
ROOT = WORKER.parents[1]  # the workers import the package this test process imports
N_PROCESSES, TIMEOUT_S = 2, 240


def free_port() -> int:
    """A localhost TCP port free at the time of the call (for the JAX coordinator)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_processes(cmds: list[list[str]], env: dict, log_dir: Path, timeout_s: float) -> None:
    """Run the commands as concurrent processes (each one's output to a log in ``log_dir``);
    kill those still running when one fails or at the deadline, and fail with every
    process's output then."""
    logs, procs = [], []
    for i, cmd in enumerate(cmds):
        logs.append(log_dir / f"stderr{i}.txt")
        with open(logs[-1], "w") as err:
            procs.append(subprocess.Popen(cmd, env=env, stdout=err, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout_s
    try:  # until all exit, one fails (the others would wait for it) or the deadline passes
        while time.monotonic() < deadline:
            codes = [p.poll() for p in procs]
            if None not in codes or any(codes):
                break
            time.sleep(0.1)
    finally:
        hung = [p.poll() is None for p in procs]
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if any(hung) or any(p.returncode for p in procs):
        report = "\n".join(
            f"--- process {i}: {'killed while running' if h else f'exit {p.returncode}'}\n"
            f"{log.read_text()[-3000:]}"
            for i, (p, h, log) in enumerate(zip(procs, hung, logs))
        )
        raise AssertionError(f"multi-process run failed (limit {timeout_s} s):\n{report}")


def run_workers(out_dir: Path) -> list[Path]:
    """Launch the worker processes and return their result files."""
    xla = "--xla_force_host_platform_device_count=2"
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=xla, PYTHONPATH=path)
    port = free_port()
    outs = [out_dir / f"fields{i}.npz" for i in range(N_PROCESSES)]
    cmds = [
        [sys.executable, str(WORKER), str(port), str(i), str(N_PROCESSES), str(out)]
        for i, out in enumerate(outs)
    ]
    run_processes(cmds, env, out_dir, TIMEOUT_S)
    return outs


def test_sharded_over_two_processes_equals_unsharded(tmp_path):
    outs = run_workers(tmp_path)
    want = {k: np.asarray(v) for k, v in energy_fields(None).items()}
    for i, out in enumerate(outs):
        with np.load(out) as got:
            assert sorted(got.files) == sorted(want), (i, got.files)
            for name, w in want.items():
                g, msg = got[name], f"process {i}: {name}"
                assert g.shape == w.shape and g.dtype == w.dtype == np.float32, msg
                np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w), err_msg=msg)
                assert np.isfinite(w).any() and np.isposinf(w).any(), msg  # both kinds checked
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=msg)
