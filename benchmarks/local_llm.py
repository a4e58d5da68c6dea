"""Benchmark the in-process language model (``grounding.language.LocalLM``, SmolLM2-135M-Instruct in
JAX) against llama.cpp (llama-cpp-python, the reference implementation of GGUF) on the work
the WordNet experiment asks of it, side by side in one run on this machine.

Workload: ``--questions`` WordNet-style questions under the model's chat template with one
worked example (a shared prompt prefix), ``--candidates`` candidate answers each (2-4 tokens).

- **Answer scoring** (candidates/s): ``log p(answer, <|im_end|> | prompt)`` of every candidate.
  Ours: ``LocalLM.score_batch`` (the prompts evaluated together, the answers batched against
  their cache). llama.cpp: ``Llama.eval`` of each question's prompt once, its state saved
  (``save_state``), then each answer evaluated from that state (``load_state``, ``eval``).
- **Answer proposal** (questions/s): the ``--beams`` best complete answers by beam search.
  Ours: ``LocalLM.propose_batch``. llama.cpp has no beam search in its Python API: its row is
  the time of ``--beams`` sampled completions per question (``create_chat_completion``), the
  nearest thing it offers, reported for scale only.

Warm-up: each side scores and proposes once before timing (our first calls compile). llama.cpp
runs in a child process (the two runtimes are not loaded in one process). Run:
``python benchmarks/local_llm.py [--questions 32] [--candidates 8] [--beams 6]``. Last line:
``scoring_cands_per_s_ours=<x> scoring_cands_per_s_llamacpp=<y> propose_q_per_s_ours=<z>``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

QUESTIONS = [
    "What is the broader category of {x}?",
    "Name the part of {x}.",
    "Which entity is whatever {x} has as its member?",
    "Tell me the subject area of {x}.",
]
WORDS = ["oak", "dog", "violin", "canada", "genus rosa", "sonata", "tennis", "bank", "ozone"]
ANSWERS = ["tree", "animal", "musical instrument", "country", "plant genus", "music", "sport",
           "financial institution", "gas", "woody plant", "shrub", "string instrument"]  # fmt: skip
EXAMPLE = ("What is the broader category of rose?", "shrub")

CHILD = r"""
import json, sys, time
import numpy as np
from llama_cpp import Llama
job = json.load(sys.stdin)
ll = Llama(model_path=job["path"], verbose=False, logits_all=True, n_ctx=1024, seed=0)
def logprob(first, answer_ids):
    z = np.concatenate([first[None], ll.scores[ll.n_tokens - len(answer_ids) : ll.n_tokens - 1]])
    z = z.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(sum(lp[j, t] for j, t in enumerate(answer_ids)))
def score_question(prompt, answers):
    # the prompt once, its state saved; each answer evaluated from that state
    ids = ll.tokenize(prompt.encode(), add_bos=False, special=True)
    ll.reset()
    ll.eval(ids)
    first = np.array(ll.scores[len(ids) - 1])
    state = ll.save_state()
    out = []
    for a in answers:
        ll.load_state(state)
        ans = ll.tokenize(a.encode(), add_bos=False, special=True) + [job["end"]]
        ll.eval(ans)
        out.append(logprob(first, ans))
    return out
score_question(job["prompts"][0], job["answers"][0])
t = time.perf_counter()
for p, al in zip(job["prompts"], job["answers"]):
    score_question(p, al)
scoring = time.perf_counter() - t
msgs = job["messages"]
ll.create_chat_completion(msgs[0], max_tokens=job["max_tokens"], temperature=1.0)
t = time.perf_counter()
for m in msgs:
    for _ in range(job["beams"]):
        ll.create_chat_completion(m, max_tokens=job["max_tokens"], temperature=1.0)
sampling = time.perf_counter() - t
json.dump({"scoring_s": scoring, "sampling_s": sampling}, sys.stdout)
"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=32)
    ap.add_argument("--candidates", type=int, default=8)
    ap.add_argument("--beams", type=int, default=6)
    args = ap.parse_args(argv)
    from grounding.language import LocalLM

    lm = LocalLM.load(examples=[EXAMPLE])
    qs = [
        QUESTIONS[i % len(QUESTIONS)].format(x=WORDS[i % len(WORDS)]) for i in range(args.questions)
    ]
    answers = [
        [ANSWERS[(i + j) % len(ANSWERS)] for j in range(args.candidates)] for i in range(len(qs))
    ]
    n_cands = len(qs) * args.candidates
    lm.score_batch(qs[:4], answers[:4])
    lm.propose_batch(qs[:4], args.beams)
    t = time.perf_counter()
    lm.score_batch(qs, answers)
    ours_scoring = time.perf_counter() - t
    t = time.perf_counter()
    lm.propose_batch(qs, args.beams)
    ours_propose = time.perf_counter() - t
    row = {
        "ours_scoring_cands_per_s": n_cands / ours_scoring,
        "ours_propose_q_per_s": len(qs) / ours_propose,
    }
    print(
        f"ours: scoring {n_cands / ours_scoring:.1f} candidates/s ({ours_scoring:.1f} s for {n_cands}); "
        f"beam proposal ({args.beams} beams) {len(qs) / ours_propose:.2f} questions/s",
        flush=True,
    )
    job = {
        "path": str(lm.path),
        "prompts": [lm.prompt(q) for q in qs],
        "answers": answers,
        "end": lm.end,
        "messages": [lm._messages(q) for q in qs],
        "beams": args.beams,
        "max_tokens": lm.max_answer_tokens,
    }
    run = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(job), capture_output=True, text=True
    )
    if run.returncode != 0:
        print(f"llama.cpp side failed (exit {run.returncode}): {run.stderr[-500:]}")
        print(
            f"scoring_cands_per_s_ours={row['ours_scoring_cands_per_s']:.1f} "
            f"scoring_cands_per_s_llamacpp=nan propose_q_per_s_ours={row['ours_propose_q_per_s']:.2f}"
        )
        return
    ref = json.loads(run.stdout)
    cpp = n_cands / ref["scoring_s"]
    print(
        f"llama.cpp: scoring {cpp:.1f} candidates/s ({ref['scoring_s']:.1f} s); "
        f"{args.beams} sampled completions per question {len(qs) / ref['sampling_s']:.2f} questions/s"
    )
    print(
        f"scoring_cands_per_s_ours={row['ours_scoring_cands_per_s']:.1f} "
        f"scoring_cands_per_s_llamacpp={cpp:.1f} propose_q_per_s_ours={row['ours_propose_q_per_s']:.2f}"
    )


if __name__ == "__main__":
    main()
