"""Write llama.cpp's next-token log-probabilities and answer scores for fixed prompts, the
independent reference that ``tests/language/test_local.py`` checks
:class:`grounding.language.LocalLM` against (``tests/language/data/llamacpp_reference.json``).

llama.cpp is the reference implementation of the GGUF format; it is not a dependency of the
package. Build it without the AMX kernels, which crash on machines that do not grant the AMX
tile state (seen on the machine these numbers were written on)::

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \\
        pip install llama-cpp-python==0.3.36
    python scripts/llamacpp_reference.py

The prompts are rendered by :meth:`LocalLM.prompt` (the model's own chat template) in this
process, and llama.cpp runs in a child process (the two runtimes are not loaded together).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "llm" / "data" / "llamacpp_reference.json"
TOP = 32
QUESTIONS = [
    "What is the capital of France?",
    "What is a german shepherd dog a kind of?",
    "Name a part of a car.",
    "What is an oak a kind of?",
    "Which genus is the mustard family's member?",
    "What is the largest planet of the solar system?",
]
RAW = ["The quick brown fox jumps over the", "WordNet 3.0 Copyright 2006 by Princeton"]
ANSWERS = {0: ["Paris", "Lyon", "the city of Paris"], 1: ["dog", "shepherd dog", "a cat"]}

CHILD = r"""
import json, sys
import numpy as np
from llama_cpp import Llama
from scipy.special import log_softmax
job = json.load(sys.stdin)
ll = Llama(model_path=job["path"], verbose=False, logits_all=True, n_ctx=512, seed=0)
out = {"prompts": [], "answers": []}
for text in job["prompts"]:
    ids = ll.tokenize(text.encode(), add_bos=False, special=True)
    ll.reset()
    ll.eval(ids)
    lp = log_softmax(np.asarray(ll.scores[len(ids) - 1], np.float64))
    top = np.argsort(-lp)[: job["top"]]
    out["prompts"].append(
        {"text": text, "ids": ids, "top_ids": top.tolist(), "top_logprobs": lp[top].tolist()}
    )
for text, answer in job["answers"]:
    ids = ll.tokenize(text.encode(), add_bos=False, special=True)
    ans = ll.tokenize(answer.encode(), add_bos=False, special=True) + [job["end"]]
    ll.reset()
    ll.eval(ids + ans)
    lp = log_softmax(np.asarray(ll.scores[: len(ids) + len(ans)], np.float64), axis=-1)
    total = sum(lp[len(ids) - 1 + j, t] for j, t in enumerate(ans))
    out["answers"].append({"question_prompt": text, "answer": answer, "logprob": float(total)})
json.dump(out, sys.stdout)
"""


def main() -> None:
    from grounding.language import LocalLM

    lm = LocalLM.load()
    prompts = [lm.prompt(q) for q in QUESTIONS] + RAW
    answers = [(lm.prompt(QUESTIONS[i]), a) for i, alist in ANSWERS.items() for a in alist]
    job = {"path": str(lm.path), "prompts": prompts, "answers": answers, "top": TOP, "end": lm.end}
    run = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(job), capture_output=True, text=True
    )
    if run.returncode != 0:
        sys.exit(f"llama.cpp failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    ref = json.loads(run.stdout)
    import llama_cpp  # noqa: PLC0415 (only for its version)

    ref["llama_cpp_python"] = llama_cpp.__version__
    ref["model"] = lm.path.name
    ref["system"] = lm.system
    ref["questions"] = QUESTIONS
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(ref, indent=1) + "\n")
    print(f"wrote {OUT} ({len(prompts)} prompts, {len(answers)} answers)")


if __name__ == "__main__":
    main()
