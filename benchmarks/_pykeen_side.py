"""PyKEEN side of ``benchmarks/kge_pykeen.py``: run inside ``.venv-pykeen`` (see
``benchmarks/setup_pykeen_env.sh``), never imported by the ``grounding`` venv.

Trains PyKEEN's TransE or RotatE with the sLCWA loop on the given triple files for a fixed
number of epochs (no early stopping), times only ``training_loop.train(...)``, evaluates the
test split with the filtered (train + valid + test) rank-based evaluator and writes a JSON
file atomically. Hyperparameter mapping (checked against the PyKEEN 1.11.1 source):

- ``--dim`` counts *real* coordinates, as in ``grounding.learn.kge``; PyKEEN's RotatE
  ``embedding_dim`` counts complex ones, so RotatE gets ``embedding_dim = dim // 2``.
- ``--loss margin``: ``MarginRankingLoss(margin)`` (mean over the [B, K] pairs).
  ``--loss softplus``: ``NSSALoss(margin, adversarial_temperature)``; with temperature 0 its
  softmax weights are uniform, i.e. our uniform softplus loss. NSSALoss multiplies by 0.5
  (``factor``), irrelevant under Adam up to its epsilon.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True, help="name, only recorded in the output")
    ap.add_argument("--train", required=True)
    ap.add_argument("--valid", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--model", choices=("transe", "rotate"), required=True)
    ap.add_argument("--dim", type=int, required=True, help="real coordinates")
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--num-negs-per-pos", type=int, required=True)
    ap.add_argument("--loss", choices=("margin", "softplus"), required=True)
    ap.add_argument("--margin", type=float, required=True)
    ap.add_argument("--adversarial-temperature", type=float, default=0.0)
    ap.add_argument("--p", type=int, default=2, help="TransE norm (RotatE: PyKEEN fixes L2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    return ap.parse_args()


def write_json_atomic(path: str, obj: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".pykeen_side.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=2)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main() -> None:
    args = parse_args()
    import torch
    from pykeen.evaluation import RankBasedEvaluator
    from pykeen.losses import MarginRankingLoss, NSSALoss
    from pykeen.models import RotatE, TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory
    from pykeen.utils import set_random_seed
    from pykeen.version import get_version

    set_random_seed(args.seed)
    training = TriplesFactory.from_path(args.train)
    shared = dict(entity_to_id=training.entity_to_id, relation_to_id=training.relation_to_id)
    valid = TriplesFactory.from_path(args.valid, **shared)
    test = TriplesFactory.from_path(args.test, **shared)

    if args.loss == "margin":
        loss = MarginRankingLoss(margin=args.margin)
    else:
        loss = NSSALoss(margin=args.margin, adversarial_temperature=args.adversarial_temperature)
    common = dict(triples_factory=training, loss=loss, random_seed=args.seed)
    if args.model == "transe":
        model = TransE(embedding_dim=args.dim, scoring_fct_norm=args.p, **common)
    else:
        if args.dim % 2:
            raise SystemExit(f"rotate needs an even --dim, got {args.dim}")
        model = RotatE(embedding_dim=args.dim // 2, **common)  # complex coordinates
    model = model.to("cpu")

    loop = SLCWATrainingLoop(
        model=model,
        triples_factory=training,
        optimizer=torch.optim.Adam(params=model.get_grad_params(), lr=args.lr),
        negative_sampler="basic",
        negative_sampler_kwargs=dict(num_negs_per_pos=args.num_negs_per_pos),
        automatic_memory_optimization=False,  # else it probes sub-batch sizes inside train()
    )
    t0 = time.perf_counter()
    losses = loop.train(
        triples_factory=training,
        num_epochs=args.epochs,
        batch_size=args.batch_size,
        use_tqdm=False,
        use_tqdm_batch=False,
        pin_memory=False,  # CPU only
    )
    train_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    result = RankBasedEvaluator(filtered=True).evaluate(
        model=model,
        mapped_triples=test.mapped_triples,
        additional_filter_triples=[training.mapped_triples, valid.mapped_triples],
        batch_size=256,
        use_tqdm=False,
        device=torch.device("cpu"),
    )
    eval_s = time.perf_counter() - t0
    metric = {
        "mrr": "inverse_harmonic_mean_rank",
        "hits1": "hits_at_1",
        "hits3": "hits_at_3",
        "hits10": "hits_at_10",
        "mean_rank": "arithmetic_mean_rank",
    }
    test_metrics = {k: float(result.get_metric(f"both.realistic.{v}")) for k, v in metric.items()}
    write_json_atomic(
        args.out,
        {
            "versions": {"pykeen": get_version(), "torch": torch.__version__},
            "torch_num_threads": torch.get_num_threads(),
            "config": vars(args),
            "pykeen_embedding_dim": model.entity_representations[0].shape[0],
            "n_triples": {
                "train": training.num_triples,
                "valid": valid.num_triples,
                "test": test.num_triples,
            },
            "train_seconds": train_s,
            "epochs_per_s": args.epochs / train_s,
            "final_loss": float(losses[-1]),
            "test_eval_seconds": eval_s,
            "test": test_metrics,
        },
    )


if __name__ == "__main__":
    main()
