"""The learned-retriever experiment's full training schedule, variant by variant, on one graph:
every training and validation question of the benchmark (1-3 hops), early stopping with
patience 10, at most 200 epochs, seeds 0-2, one candidate set shared by all variants, then
tested blind (question text and topic only) with paired bootstrap intervals.

Run: ``python benchmarks/learned_full_schedule.py --dataset codex-m --out results
[--variants subgraphrag,gated,ungated] [--oversmoothing] [--downstream] [--seeds 0,1,2]``
(``--small``: a toy scale, to check the script). ``--variants all`` trains every variant of
the experiment's full run (the main three, the semantic gate, tags blind to anchors,
SubgraphRAG's exact labels, depths L = 1, 3, 4); ``--oversmoothing`` trains the L = 4 models
of the three gates (seed 0) and writes the normalized Dirichlet energy per layer. Results go to
``<out>/learned_full_schedule_<dataset>.json``, written after each variant; a later run with
other variants adds to that file (same dataset and scale), and the comparisons are recomputed
over every variant it holds, so the schedule can be split over several calls, even over
machines (each variant records the device that trained it).

``--downstream`` grounds the test questions with the seed-0 models of the three main variants
trained in the same call, blind and with the gold chain, through the experiment's
``downstream`` (the grounded-QA experiment's benchmark and answerer, built once; λ fitted on
validation).

It calls the experiment's own functions (those :mod:`experiments.learned_retrievers` takes from
:mod:`experiments._setup`: question selection, candidate preparation, training, metrics,
intervals, downstream grounding) under 64-bit JAX, as the experiment runs, and leaves out the
experiment's transfer. It exists
because the full schedule is a GPU job: on an NVIDIA H200 the three main variants take about
4 minutes on CoDEx-M, on the 2-core CPU machine the docs were written on several hours.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's experiments
# the experiment's report format (strict JSON, written atomically by grounding.io)
from experiments._io import write_json
from experiments._setup import (
    FULL_ONLY,
    HOPS,
    MAIN,
    VARIANTS,
    build,
    ceilings,
    compare_recall,
    deep_models,
    downstream,
    log_comparisons,
    oversmoothing,
    scale,
    seed_mean,
    setting,
    shared_candidates,
    summarize,
    train_variants,
)
from grounding.datasets import kgqa_benchmark

ALL = {**VARIANTS, **FULL_ONLY}


def main(argv=None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="codex-m", choices=("codex-m", "umls"))
    ap.add_argument("--out", type=Path, default=Path("results"))
    ap.add_argument("--variants", default=",".join(MAIN),
                    help=f"comma-separated, or 'all' (default {','.join(MAIN)}); from "
                    f"{', '.join(ALL)}")  # fmt: skip
    ap.add_argument("--oversmoothing", action="store_true",
                    help="also train the L = 4 models of the three gates (seed 0)")  # fmt: skip
    ap.add_argument("--downstream", action="store_true",
                    help="also ground the test questions with the seed-0 models of "
                    f"{', '.join(MAIN)} (trained in this call), blind and oracle")  # fmt: skip
    ap.add_argument("--seeds", help="comma-separated training seeds (default 0,1,2)")
    ap.add_argument("--small", action="store_true", help="a toy scale, to check the script")
    args = ap.parse_args(argv)
    names = list(ALL) if args.variants == "all" else [v.strip() for v in args.variants.split(",")]
    unknown = [n for n in names if n not in ALL]
    if unknown or not names:
        ap.error(f"--variants: unknown {unknown}; choose from {', '.join(ALL)} or 'all'")
    if args.downstream and not set(MAIN) <= set(names):
        ap.error(f"--downstream needs {', '.join(MAIN)} among --variants (trained in this call)")
    try:
        seeds = tuple(int(x) for x in args.seeds.split(",")) if args.seeds else None
    except ValueError:
        ap.error(f"--seeds: comma-separated integers, not {args.seeds!r}")
    if seeds is not None and (not seeds or len(set(seeds)) != len(seeds)):
        ap.error(f"--seeds: distinct integers, not {args.seeds!r}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"learned_full_schedule_{args.dataset}.json"
    with jax.enable_x64(True):
        return run(args.dataset, names, args.oversmoothing, args.small, path, seeds,
                   args.downstream)  # fmt: skip


def run(dataset: str, names: list, deep: bool, small: bool, path: Path, seeds=None,
        down: bool = False) -> Path:  # fmt: skip
    t0 = time.perf_counter()
    sc = scale(True)
    if small:
        sc = dataclasses.replace(sc, train_per_hop=4, valid_per_hop=2, test_per_hop=3, epochs=2,
                                 seeds=(0, 1))  # fmt: skip
    if seeds is not None:
        sc = dataclasses.replace(sc, seeds=seeds)
    # the experiment's benchmark; with ``down``, built with its answerer and PCR (one benchmark)
    if down:
        bench, answerer, (pcr, _), _ = build(setting(dataset))
    else:
        bench = kgqa_benchmark(dataset, questions_per_hop=setting(dataset).questions_per_hop,
                               seed=0)  # fmt: skip
    answerer_s = time.perf_counter() - t0 if down else None
    t_prep = time.perf_counter()
    prep, train, valid, test = shared_candidates(bench, sc, {n: ALL[n] for n in names})
    tgt = prep["tgt"]
    hops = np.array([q.hops for q in test])
    ceil = ceilings(prep["test"], tgt)
    prepare_s = time.perf_counter() - t_prep
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
    if path.exists():  # add to an earlier run of the same dataset and scale
        old = json.loads(path.read_text())
        same = json.loads(json.dumps(report["scale"])) == old.get("scale")  # tuples as lists
        if not same or old.get("hops") != report["hops"]:
            raise SystemExit(f"{path}: another scale or question set; move it away to start anew")
        report["variants"] = old.get("variants", {})
        for v in report["variants"].values():  # reports written before devices were kept
            v.setdefault("device", old.get("device", "unknown"))
        for key in ("oversmoothing", "oversmoothing_device", "downstream", "downstream_seconds",
                    "answerer_seconds"):  # fmt: skip
            if key in old:  # kept until a call computes them again
                report[key] = old[key]
    trained = {}
    for name in names:
        t = time.perf_counter()
        r, logs, models = train_variants(bench, sc, prep, {name: ALL[name]}, None,
                                         lambda s: print(s, flush=True))  # fmt: skip
        trained.update(models)
        report["variants"][name] = dict(
            seconds=time.perf_counter() - t, device=report["device"], training=logs[name],
            recall=summarize(r[name], hops),
            per_question={m: seed_mean(r[name], m).tolist() for m in ("triple@100", "answer@100")},
        )  # fmt: skip
        report["comparisons"] = compare_recall(
            {n: np.asarray(v["per_question"]["triple@100"], float)
             for n, v in report["variants"].items()}, hops)  # fmt: skip
        log_comparisons(dataset, report["comparisons"], print)
        report["seconds"] = time.perf_counter() - t0
        write_json(path, report)
    if deep:
        report["oversmoothing"] = oversmoothing(deep_models(bench, sc, prep, trained), prep["test"])
        report["oversmoothing_device"] = report["device"]
        print("dirichlet energy per layer (L = 4): " + " ".join(
            f"{g}={[round(x, 3) for x in e]}" for g, e in report["oversmoothing"].items()),
            flush=True)  # fmt: skip
        report["seconds"] = time.perf_counter() - t0
        write_json(path, report)
    if down:
        t = time.perf_counter()
        report["downstream"] = downstream(bench, answerer, pcr, {n: trained[n] for n in MAIN},
                                          test, valid, lambda s: print(s, flush=True))  # fmt: skip
        report["downstream_seconds"] = time.perf_counter() - t
        report["answerer_seconds"] = answerer_s
        report["seconds"] = time.perf_counter() - t0
        write_json(path, report)
    print(f"{dataset}: {time.perf_counter() - t0:.1f} s; {path}", flush=True)
    return path


if __name__ == "__main__":
    main()
