"""The learned-retriever experiment's full training schedule for its main variants on one graph:
SubgraphRAG, the structurally gated GNN and the ungated GNN trained on every training and
validation question of the benchmark (1-3 hops), early stopping with patience 10, at most 200
epochs, seeds 0-2, one candidate set shared by all, then tested blind (question text and topic
only) with paired bootstrap intervals.

Run: ``python benchmarks/learned_full_schedule.py --dataset codex-m --out results``
(``--small`` for a check at a toy scale). Writes ``<out>/learned_full_schedule_<dataset>.json``
after each variant (so a run stopped early keeps what it finished) and prints one line per
variant and comparison.

It calls the experiment's own functions (:mod:`experiments.learned_retrievers`: question
selection, candidate preparation, training, metrics, intervals) under 64-bit JAX, as the
experiment runs, and leaves out what the full experiment adds (the other ablations, the
downstream QA loop, transfer, the L = 4 oversmoothing models). It exists because the full
schedule is a GPU job: on an NVIDIA H200 the CoDEx-M run takes about 4 minutes, on the 2-core
CPU machine the docs were written on several hours.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's experiments
from experiments._io import write_json
from experiments.learned_retrievers import (
    HOPS,
    MAIN,
    VARIANTS,
    by_hop,
    ceilings,
    interval,
    make,
    scale,
    seed_mean,
    summarize,
    targets,
    train_variants,
)
from grounding.datasets import kgqa_benchmark
from grounding.query import Query

QUESTIONS_PER_HOP = {"codex-m": 500, "umls": 300}  # the experiment's benchmark sizes
PAIRS = (("gated", "subgraphrag"), ("ungated", "subgraphrag"), ("gated", "ungated"))


def main(argv=None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="codex-m", choices=sorted(QUESTIONS_PER_HOP))
    ap.add_argument("--out", type=Path, default=Path("results"))
    ap.add_argument("--small", action="store_true", help="a toy scale, to check the script")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"learned_full_schedule_{args.dataset}.json"
    with jax.enable_x64(True):
        return run(args.dataset, args.small, path)


def run(dataset: str, small: bool, path: Path) -> Path:
    t0 = time.perf_counter()
    sc = scale(True)
    if small:
        sc = dataclasses.replace(sc, train_per_hop=4, valid_per_hop=2, test_per_hop=3, epochs=2,
                                 seeds=(0, 1))  # fmt: skip
    bench = kgqa_benchmark(dataset, questions_per_hop=QUESTIONS_PER_HOP[dataset], seed=0)
    train = by_hop(bench, "train", sc.train_per_hop)
    valid = by_hop(bench, "valid", sc.valid_per_hop)
    test = by_hop(bench, "test", sc.test_per_hop)
    base = make(bench, VARIANTS["subgraphrag"], sc, 0, "base")
    prep = dict(base=base, facts=base.facts, valid=base.prepare([q.query() for q in valid]),
                test=base.prepare([Query(q.text, anchor=q.topic) for q in test]),  # blind
                train_all=base.prepare([q.query() for q in train]))  # fmt: skip
    prep["tgt"] = tgt = targets(bench, base.facts, test)
    hops = np.array([q.hops for q in test])
    ceil = ceilings(prep["test"], tgt)
    prepare_s = time.perf_counter() - t0
    print(f"{dataset} on {jax.devices()[0].platform}: {len(train)} training / {len(valid)} "
          f"validation / {len(test)} test questions prepared in {prepare_s:.1f} s; candidate "
          "ceiling " + " ".join(f"{h}-hop={np.nanmean(ceil[hops == h]):.3f}" for h in HOPS),
          flush=True)  # fmt: skip
    report: dict = dict(
        dataset=dataset, device=str(jax.devices()[0].device_kind), scale=dataclasses.asdict(sc),
        prepare_seconds=prepare_s, hops=hops.tolist(), ceiling=ceil.tolist(),
        candidate_cap_binds=float(np.mean(prep["test"].n_facts >= sc.max_facts)),
        variants={}, comparisons={},
    )  # fmt: skip
    runs: dict = {}
    for name in MAIN:
        t = time.perf_counter()
        r, logs, _ = train_variants(bench, sc, prep, {name: VARIANTS[name]}, None,
                                    lambda s: print(s, flush=True))  # fmt: skip
        runs[name] = r[name]
        report["variants"][name] = dict(
            seconds=time.perf_counter() - t, training=logs[name], recall=summarize(r[name], hops),
            per_question={m: seed_mean(r[name], m).tolist() for m in ("triple@100", "answer@100")},
        )  # fmt: skip
        for a, b in PAIRS:
            if name in (a, b) and a in runs and b in runs:
                A, B = seed_mean(runs[a], "triple@100"), seed_mean(runs[b], "triple@100")
                c = report["comparisons"][f"{a}-{b}"] = {"all": interval(A, B)} | {
                    str(h): interval(A[hops == h], B[hops == h]) for h in HOPS}  # fmt: skip
                print(f"{dataset} triple@100 {a} - {b}: {c['all']['diff']:+.4f} (95 % "
                      f"{c['all']['ci'][0]:+.4f} to {c['all']['ci'][1]:+.4f})", flush=True)  # fmt: skip
        report["seconds"] = time.perf_counter() - t0
        write_json(path, report)
    print(f"{dataset}: {report['seconds']:.1f} s in all; {path}", flush=True)
    return path


if __name__ == "__main__":
    main()
