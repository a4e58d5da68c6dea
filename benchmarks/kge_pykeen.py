"""Benchmark ``grounding.learn.kge`` (JAX) against PyKEEN (PyTorch) on CPU: training epochs/s and
filtered test metrics for the same model, data and hyperparameters.

Run: ``python benchmarks/kge_pykeen.py [--dataset umls] [--model transe|rotate] [--epochs 100]
[--quick] [--out results/bench_kge_pykeen.json]`` in the ``grounding`` venv; PyKEEN runs in a
subprocess in ``.venv-pykeen`` (create it with ``benchmarks/setup_pykeen_env.sh``). The last
line printed is ``epochs_per_s_ratio_vs_pykeen=<x> mrr_ours=<y> mrr_pykeen=<z>``.

Hyperparameters are ``grounding.learn.kge.DEFAULTS[model]`` for both sides, with a fixed number of
epochs and no early stopping. What is timed:

- ours: ``train()`` with ``eval_every = epochs`` is run twice with the identical config; the
  first run is the untimed warm-up (``TrainConfig`` is a static jit argument, so a shorter
  warm-up run would compile a different ``_epoch`` and warm nothing). Its excess over the
  second run is reported as the compile/warm-up overhead. The second run's ``seconds``
  includes one final validation evaluation, which is timed on its own (median of 3) and
  subtracted; the epochs' host work (permutation, transfer, loss check) stays in.
- PyKEEN: wall time of ``training_loop.train(...)`` only (no compile step to exclude).

Differences between the two implementations (checked against the PyKEEN 1.11.1 source):

- Negatives: ours draws, for each of the K negatives independently, the side (head or tail)
  with probability 1/2 and the entity uniformly over all n (it may equal the true one).
  PyKEEN's ``basic`` sampler corrupts the head in the first half of the batch's B*K negatives
  and the tail in the second half (after ``repeat_interleave``, i.e. per positive triple:
  half the batch's positives get only head, the other half only tail corruptions), and draws
  uniformly over the n - 1 entities other than the true one. Neither filters false negatives.
- Batches: both reshuffle each epoch and take ceil(m / B) steps; ours wraps the last batch
  to full size (static shapes for ``lax.scan``), PyKEEN's last batch is smaller.
- TransE: same L_p distance and entities renormalized to the unit sphere after every step
  (and at init) in both. Relation init: ours U(+-sqrt(6 / (n + d))) per coordinate (norm
  ~ sqrt(2d / (n + d))), PyKEEN U(+-sqrt(6 / d)) then rows normalized to norm 1.
- RotatE: ours has ``dim`` real coordinates = dim/2 complex ones, relation angles
  U[-pi, pi) and the distance sum_i |z_i| (sum of complex moduli, as in the RotatE paper).
  PyKEEN's ``embedding_dim`` counts complex coordinates (we pass dim // 2); its relations are
  complex numbers projected to unit modulus after every step, and its distance is the complex
  L2 norm sqrt(sum_i |z_i|^2), so the same margin gamma is not on the same scale: the RotatE
  MRRs are not a like-for-like comparison (the epochs/s are).
- Entity init: Xavier-uniform in both, with different fan conventions (ours
  sqrt(6 / (n + d)), PyKEEN sqrt(6 / fan_out)).
- Losses: "margin" is the same mean hinge over the B x K pairs (``MarginRankingLoss``);
  "softplus" with self-adversarial weights is ``NSSALoss`` (detached softmax weights in both),
  which PyKEEN scales by 0.5, harmless under Adam. Optimizer: Adam(lr), default betas/eps,
  no regularizer in either.
- Evaluation: both filtered on train + valid + test, realistic (expected) ranks, pooled over
  head and tail queries.
- Execution: ours is one jit-compiled ``lax.scan`` per epoch on XLA:CPU (its own thread
  pool); PyKEEN is eager PyTorch with ``torch.get_num_threads()`` threads, data loader in the
  main process, ``automatic_memory_optimization=False`` (else it probes sub-batch sizes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import parser, sig3, write_json

ROOT = Path(__file__).resolve().parents[1]
PYKEEN_PYTHON = ROOT / ".venv-pykeen" / "bin" / "python"
PYKEEN_SIDE = Path(__file__).resolve().parent / "_pykeen_side.py"
DATA = ROOT / "grounding" / "datasets" / "data"


def run_ours(dataset: str, kind: str, epochs: int) -> dict:
    import jax

    from grounding.datasets import load_kg
    from grounding.learn import kge

    kg = load_kg(dataset)
    cfg = dataclasses.replace(kge.DEFAULTS[kind], epochs=epochs, eval_every=epochs)
    t0 = time.perf_counter()
    kge.train(kg, kind, cfg, progress=False)  # warm-up: compiles _epoch and the evaluation
    warmup_s = time.perf_counter() - t0
    cache_size = getattr(kge._epoch, "_cache_size", lambda: None)
    compiled_before = cache_size()
    res = kge.train(kg, kind, cfg, progress=False)
    recompiled = compiled_before is not None and cache_size() != compiled_before
    assert res.epochs_run == epochs, res.epochs_run
    valid_eval_s = []
    for _ in range(3):
        t0 = time.perf_counter()
        kge.evaluate_link_prediction(res.model, kg, "valid")
        valid_eval_s.append(time.perf_counter() - t0)
    valid_eval = float(np.median(valid_eval_s))
    train_s = res.seconds - valid_eval
    t0 = time.perf_counter()
    test = kge.evaluate_link_prediction(res.model, kg, "test")
    return {
        "versions": {"jax": jax.__version__, "backend": jax.default_backend()},
        "config": dataclasses.asdict(cfg),
        "warmup_run_seconds": warmup_s,
        "compile_overhead_seconds": warmup_s - res.seconds,
        "recompiled_in_timed_run": recompiled,
        "train_call_seconds": res.seconds,
        "valid_eval_seconds_subtracted": valid_eval,
        "train_seconds": train_s,
        "epochs_per_s": epochs / train_s,
        "final_loss": res.history[-1]["loss"],
        "test_eval_seconds": time.perf_counter() - t0,
        "test": test,
    }


def require_pykeen_venv() -> None:
    if not PYKEEN_PYTHON.exists():
        raise SystemExit(
            f"{PYKEEN_PYTHON} not found: create the PyKEEN venv with benchmarks/setup_pykeen_env.sh"
        )


def run_pykeen(dataset: str, kind: str, epochs: int) -> dict:
    from grounding.learn.kge import DEFAULTS

    require_pykeen_venv()
    cfg = DEFAULTS[kind]
    files = {s: str(DATA / dataset / f"{s}.txt") for s in ("train", "valid", "test")}
    with tempfile.TemporaryDirectory(prefix="bench_pykeen_") as tmp:
        out = Path(tmp) / "pykeen.json"
        args = dict(
            dataset=dataset,
            **files,
            model=kind,
            dim=cfg.dim,
            epochs=epochs,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            num_negs_per_pos=cfg.n_negatives,
            loss=cfg.loss,
            margin=cfg.margin,
            adversarial_temperature=cfg.adversarial_temperature,
            p=cfg.p,
            seed=cfg.seed,
            out=out,
        )
        cmd = [str(PYKEEN_PYTHON), str(PYKEEN_SIDE)]
        for k, v in args.items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        env = dict(os.environ, PYSTOW_HOME=str(Path(tmp) / "pystow"))  # not ~/.data
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"PyKEEN side failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(out.read_text())


def main() -> None:
    ap = parser(
        __doc__.splitlines()[0],
        quick="nations, 20 epochs (unless given)",
        out="the report, JSON written atomically (default results/bench_kge_pykeen.json)",
        out_default="results/bench_kge_pykeen.json",
    )
    ap.add_argument("--dataset", default=None, help="umls (default), nations or kinships")
    ap.add_argument("--model", default="transe", choices=("transe", "rotate"))
    ap.add_argument("--epochs", type=int, default=None, help="default 100 (--quick: 20)")
    args = ap.parse_args()
    dataset = args.dataset or ("nations" if args.quick else "umls")
    epochs = args.epochs or (20 if args.quick else 100)
    require_pykeen_venv()  # fail before spending time on our side

    print(f"{args.model} on {dataset}, {epochs} epochs, CPU ({os.cpu_count()} cores)", flush=True)
    ours = run_ours(dataset, args.model, epochs)
    pyk = run_pykeen(dataset, args.model, epochs)

    rows = [("ours (JAX)", ours), (f"PyKEEN {pyk['versions']['pykeen']}", pyk)]
    print(f"{'':18}{'epochs/s':>10}{'MRR':>8}{'H@1':>8}{'H@10':>8}")
    for name, r in rows:
        t = r["test"]
        print(
            f"{name:18}{r['epochs_per_s']:10.2f}{t['mrr']:8.4f}{t['hits1']:8.4f}{t['hits10']:8.4f}"
        )
    print(
        f"ours: compile/warm-up overhead {ours['compile_overhead_seconds']:.2f} s, "
        f"valid evaluation subtracted {ours['valid_eval_seconds_subtracted']:.3f} s; "
        f"PyKEEN: torch threads {pyk['torch_num_threads']}"
    )
    if ours["recompiled_in_timed_run"]:
        print("warning: the timed run of ours recompiled _epoch; its time includes a compile")
    ratio = ours["epochs_per_s"] / pyk["epochs_per_s"]
    report = {
        "dataset": dataset,
        "model": args.model,
        "epochs": epochs,
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
        },
        "timing_protocol": (
            "ours: second of two identical train() runs (first = warm-up/compile), minus the "
            "median time of one validation evaluation; pykeen: wall time of "
            "training_loop.train() only"
        ),
        "ours": ours,
        "pykeen": pyk,
        "epochs_per_s_ratio_vs_pykeen": ratio,
    }
    write_json(args.out, report)
    print(f"wrote {args.out}")
    print(
        f"epochs_per_s_ratio_vs_pykeen={sig3(ratio)} "
        f"mrr_ours={ours['test']['mrr']:.4f} mrr_pykeen={pyk['test']['mrr']:.4f}"
    )


if __name__ == "__main__":
    main()
