"""Per-question cost of retrieval -> evidence -> compact evidence for the grounded QA loop on
CoDEx-M, the per-question path against the batched one, side by side in one run.

Run: ``python benchmarks/retrieval_batch.py [--questions 300] [--hops 2] [--k-nodes 100]
[--repeats 3] [--seed 0]``. Last line: ``evidence_ms_per_question_before=<b> after=<a>``.

- before: ``PCR.retrieve`` per question, then its ``.evidence`` (``subgraph_evidence``: a
  walk back along shortest paths node by node), then ``compact_evidence`` of each state alone
  (one state per call) to one shared size (the power of two the batched call picks);
- after: ``PCR.retrieve_batch`` (one breadth-first search per chunk of questions gives the
  candidate sets and the evidence, precomputed), then one ``compact_evidence`` call for the
  batch (what ``ground_batch`` runs first).

Both sides get the same questions (templated CoDEx-M questions of ``--hops`` hops, PCR with
``max_hops = hops``), the same text index and the same kept entities (the topic); the outputs
are compared (same ranked nodes and scores, same compact graphs). Index builds are excluded;
each side runs once untimed, then the best of ``--repeats`` interleaved passes is reported,
stage by stage. The ranking (cosine top-k, the same arithmetic on both sides) is inside
``retrieve`` and ``retrieve_batch``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from grounding.datasets import kgqa_benchmark
from grounding.retrieval import PCR, Query, TextIndex
from grounding.solver.compact import compact_evidence


def stages_before(pcr: PCR, queries, keep, k: int) -> tuple[list[float], tuple]:
    """The per-question path, timed by stage: retrieve, evidence, compaction to one size."""
    t0 = time.perf_counter()
    rs = [pcr.retrieve(q, k) for q in queries]
    t1 = time.perf_counter()
    states = [r.evidence for r in rs]
    t2 = time.perf_counter()
    size = 1 << (max(64, *(touched(s, kp) for s, kp in zip(states, keep))) - 1).bit_length()
    compact = [compact_evidence([s], [kp], min_size=size)[0] for s, kp in zip(states, keep)]
    t3 = time.perf_counter()
    return [t1 - t0, t2 - t1, t3 - t2], (rs, compact)


def touched(state, keep) -> int:
    """Entities a compact state keeps (as ``grounding.solver.compact.compact_evidence`` counts
    them)."""
    g = state.graph
    named = [g.entity_index(x) for x in keep]
    return len(np.unique(np.concatenate([np.asarray(g.head), np.asarray(g.tail), named])))


def stages_after(pcr: PCR, queries, keep, k: int) -> tuple[list[float], tuple]:
    """The batched path, timed by stage: retrieve_batch (evidence included), compaction."""
    t0 = time.perf_counter()
    rs = pcr.retrieve_batch(queries, k)
    states = [r.evidence for r in rs]  # precomputed
    t1 = time.perf_counter()
    compact = compact_evidence(states, keep)
    t2 = time.perf_counter()
    return [t1 - t0, t2 - t1], (rs, compact)


def interleaved(fns, repeats: int) -> tuple[list[np.ndarray], list]:
    """Stage times of each function, the best pass of ``repeats`` (by total), the passes of
    the functions interleaved (a busy machine slows both alike), after one untimed pass."""
    outs = [fn()[1] for fn in fns]
    best: list[np.ndarray | None] = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = np.asarray(fn()[0])
            if best[i] is None or t.sum() < best[i].sum():
                best[i] = t
    return best, outs


def same(a, b) -> bool:
    """The same retrievals and compact graphs."""
    for (ra, ca), (rb, cb) in zip(zip(*a), zip(*b)):
        if not (np.array_equal(ra.index, rb.index) and np.array_equal(ra.scores, rb.scores)):
            return False
        ga, gb = ca.graph, cb.graph
        if ga.entities != gb.entities:
            return False
        for x, y in zip((ga.head, ga.relation, ga.tail), (gb.head, gb.relation, gb.tail)):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
    return True


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=300, help="questions (default 300)")
    ap.add_argument("--hops", type=int, default=2, choices=(1, 2, 3), help="hops (default 2)")
    ap.add_argument("--k-nodes", type=int, default=100, help="retrieved nodes (default 100)")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = ap.parse_args(argv)

    bench = kgqa_benchmark("codex-m", questions_per_hop=max(args.questions, 100), seed=args.seed)
    qs = [q for q in bench.questions if q.hops == args.hops][: args.questions]
    queries = [Query(q.text, anchor=q.topic) for q in qs]
    keep = [(q.topic,) for q in qs]
    index = TextIndex(bench.graph)
    pcr = PCR(index, max_hops=args.hops)
    n, k = len(qs), args.k_nodes

    (tb, ta), (out_before, out_after) = interleaved(
        [
            lambda: stages_before(pcr, queries, keep, k),
            lambda: stages_after(pcr, queries, keep, k),
        ],
        args.repeats,
    )
    ms = lambda t: f"{1e3 * t / n:.2f} ms"  # noqa: E731
    print(f"CoDEx-M, {n} questions of {args.hops} hops, {k} nodes retrieved (per question)")
    print(
        f"before: {ms(tb.sum())} = retrieve {ms(tb[0])} + evidence {ms(tb[1])} + "
        f"compaction {ms(tb[2])}"
    )
    print(
        f"after:  {ms(ta.sum())} = retrieve_batch with evidence {ms(ta[0])} + compaction {ms(ta[1])}"
    )
    if not same(out_before, out_after):
        raise SystemExit("the two paths disagree")
    print("outputs identical (ranked nodes, scores, compact graphs)")
    print(
        f"evidence_ms_per_question_before={1e3 * tb.sum() / n:.3f} after={1e3 * ta.sum() / n:.3f}"
    )


if __name__ == "__main__":
    main()
