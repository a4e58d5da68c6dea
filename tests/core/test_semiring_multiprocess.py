"""The sharded energy field across processes: two JAX processes on this machine (two host
devices each, CPU collectives over gloo) form one 4-device mesh, and the global result
gathered to the host equals the single-process unsharded one (``tests/_multiprocess_worker.py``
is each process's program)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from _multiprocess_worker import energy_fields

from grounding.testing.processes import free_port, local_env, run_processes

WORKER = Path(__file__).resolve().parents[1] / "_multiprocess_worker.py"
ROOT = WORKER.parents[1]  # the workers import the package this test process imports
N_PROCESSES, TIMEOUT_S = 2, 240


def run_workers(out_dir: Path) -> list[Path]:
    """Launch the worker processes and return their result files."""
    env, port = local_env(2, ROOT), free_port()
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


def test_a_failed_or_hung_process_is_reported_with_every_process_output(tmp_path):
    """The launcher stops the others when one process fails, kills those past the limit, and
    its error carries each process's exit and output."""
    fail = [sys.executable, "-c", "import sys; print('bad input'); sys.exit(3)"]
    wait = [sys.executable, "-c", "import time; print('waiting', flush=True); time.sleep(60)"]
    with pytest.raises(RuntimeError, match="(?s)process 0: exit 3.*bad input.*process 1: killed"):
        run_processes([fail, wait], local_env(1), tmp_path, timeout_s=30)
    with pytest.raises(RuntimeError, match="(?s)limit 0.5 s.*process 0: killed while running"):
        run_processes([wait], local_env(1), tmp_path, timeout_s=0.5)
    run_processes([[sys.executable, "-c", "print('ok')"]], local_env(1), tmp_path, 30)
    assert (tmp_path / "process0.log").read_text() == "ok\n"
    with pytest.raises(ValueError, match="n_devices"):
        local_env(0)
