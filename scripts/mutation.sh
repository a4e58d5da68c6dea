#!/usr/bin/env bash
# Mutation testing of the core modules listed under [tool.mutmut] in pyproject.toml.
#
#   ./scripts/mutation.sh                 # run every module (resumes: verdicts are cached in mutants/)
#   ./scripts/mutation.sh 'grounding.bounds.*'   # only the mutants whose names match
#   ./scripts/mutation.sh report          # the per-module table of docs/theory.md, from the cache
#
# Not part of the default test run (hours on 2 cores). MUTATION_JOBS sets the worker count.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || ./scripts/setup_env.sh
[ -x .venv/bin/mutmut ] || .venv/bin/python -m pip install --quiet -e ".[mutation]"
export HYPOTHESIS_PROFILE=mutation
if [ "${1:-}" = report ]; then
    exec .venv/bin/python scripts/mutation_report.py
fi
.venv/bin/mutmut run --max-children "${MUTATION_JOBS:-$(nproc)}" "$@"
.venv/bin/python scripts/mutation_report.py
