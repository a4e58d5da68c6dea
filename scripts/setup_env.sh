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
say "ready: $(.venv/bin/python -c 'import grounding, jax; print("grounding", grounding.__version__, "with JAX", jax.__version__)')"
