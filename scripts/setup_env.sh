#!/usr/bin/env bash
# Create .venv (if missing) and install the package with its test extra. Idempotent.
# Needs only Python >= 3.11 with pip and venv.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test]"
