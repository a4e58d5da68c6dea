"""Several JAX processes on one machine, for multi-process tests and benchmarks.

JAX's CPU collectives (gloo) let processes on one host form one device mesh: each process
runs ``jax.config.update("jax_cpu_collectives_implementation", "gloo")`` and
``jax.distributed.initialize(f"127.0.0.1:{port}", num_processes, process_id)`` with the same
coordinator port. :func:`local_env` is the environment that gives each process its host
devices, :func:`free_port` a port for the coordinator, :func:`run_processes` runs the
processes side by side and reports every one's output when one fails or hangs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from grounding._checks import check_int

__all__ = ["free_port", "local_env", "run_processes"]


def free_port() -> int:
    """A localhost TCP port free at the time of the call (for the JAX coordinator)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_env(n_devices: int, path: str | os.PathLike | None = None) -> dict:
    """This process's environment for a child with ``n_devices`` CPU devices (JAX on the CPU
    only), ``path`` (the source tree the child must import) first on ``PYTHONPATH``."""
    check_int(n_devices, "n_devices")
    paths = [str(path) if path is not None else None, os.environ.get("PYTHONPATH")]
    return dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={n_devices}",
        PYTHONPATH=os.pathsep.join(filter(None, paths)),
    )


def run_processes(
    cmds: Sequence[Sequence[str]], env: dict, log_dir: str | os.PathLike, timeout_s: float
) -> None:
    """Run the commands as concurrent processes, each one's output to ``log_dir /
    "process<i>.log"``; stop when all have exited, one has failed (the others would wait for
    it) or ``timeout_s`` has passed; kill those still running then. Raises ``RuntimeError``
    with the end of every process's output when one failed or had to be killed."""
    if not cmds:
        raise ValueError("run_processes: no commands")
    logs = [Path(log_dir) / f"process{i}.log" for i in range(len(cmds))]
    procs = []
    try:
        for cmd, path in zip(cmds, logs):
            with open(path, "w") as log:
                procs.append(
                    subprocess.Popen(list(cmd), env=env, stdout=log, stderr=subprocess.STDOUT)
                )
        deadline = time.monotonic() + timeout_s
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
        raise RuntimeError(f"multi-process run failed (limit {timeout_s} s):\n{report}")
