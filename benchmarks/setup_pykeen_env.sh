#!/usr/bin/env bash
# Create .venv-pykeen (git-ignored), the PyKEEN side of benchmarks/kge_pykeen.py. Idempotent.
# torch is installed FIRST from the CPU wheel index: a plain `pip install pykeen` would pull the
# multi-GB CUDA build of torch. The CPU index is an *extra* index so that a local wheel mirror
# (pip's find-links) still wins; override it with TORCH_CPU_INDEX=... if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-pykeen
if "$VENV/bin/python" -c "import torch, pykeen" 2>/dev/null; then
    echo "$VENV already set up: $("$VENV/bin/python" -c \
        'import torch, pykeen.version as v; print("torch", torch.__version__, "pykeen", v.get_version())')"
    exit 0
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install torch==2.13.0 \
    --extra-index-url "${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
"$VENV/bin/pip" install pykeen==1.11.1
"$VENV/bin/python" -c 'import torch, pykeen.version as v; print("torch", torch.__version__, "pykeen", v.get_version())'
