"""Train relation maps on a shipped real KG and report filtered link prediction on the test split.

``python -m experiments.link_prediction --dataset umls --model transe`` trains with the
documented defaults (:data:`grounding.learn.DEFAULTS`), early-stopping on validation MRR, writes
the best model to ``<out>/checkpoints/<dataset>_<model>.npz`` and the metrics to
``<out>/link_prediction_<dataset>_<model>.json`` (both atomically), and prints as its final
line ``mrr=<x> hits1=<y> hits10=<z>`` (test split, both directions, realistic ties).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments._io import write_json
from grounding.datasets import KG_DATASETS, load_kg
from grounding.learn import DEFAULTS, KINDS, evaluate_link_prediction, train


def main(argv: Sequence[str] | None = None) -> dict:

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=KG_DATASETS, default="umls")
    ap.add_argument("--model", choices=KINDS, default="transe")
    ap.add_argument("--epochs", type=int, default=None, help="maximum epochs (default: DEFAULTS)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("results"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(list(argv) if argv is not None else None)

    kg = load_kg(args.dataset)
    cfg = DEFAULTS[args.model]
    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    cfg = dataclasses.replace(cfg, **overrides)
    ckpt = args.out / "checkpoints" / f"{args.dataset}_{args.model}.npz"
    res = train(kg, args.model, cfg, checkpoint=ckpt, progress=not args.no_progress)
    test = evaluate_link_prediction(res.model, kg, "test")
    report = dict(
        dataset=args.dataset,
        model=args.model,
        config=dataclasses.asdict(cfg),
        best_epoch=res.best_epoch,
        epochs_run=res.epochs_run,
        seconds=res.seconds,
        valid_mrr=res.best_valid_mrr,
        test=test,
        history=res.history,
        checkpoint=str(ckpt),
    )
    write_json(args.out / f"link_prediction_{args.dataset}_{args.model}.json", report)
    print(
        f"{args.dataset} {args.model}: best epoch {res.best_epoch} of {res.epochs_run} "
        f"({res.seconds:.1f} s), valid mrr {res.best_valid_mrr:.4f}, test mean rank "
        f"{test['mean_rank']:.2f}, hits3 {test['hits3']:.4f}"
    )
    print(f"mrr={test['mrr']:.4f} hits1={test['hits1']:.4f} hits10={test['hits10']:.4f}")
    return report


if __name__ == "__main__":
    main()
    sys.exit(0)
