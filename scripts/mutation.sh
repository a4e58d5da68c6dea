#!/usr/bin/env bash
# Mutation testing of the core modules listed under [tool.mutmut] in pyproject.toml.
#
#   ./scripts/mutation.sh                 # run every module (resumes: verdicts are cached in mutants/)
#   ./scripts/mutation.sh 'grounding.bounds.*'   # only the mutants whose names match
#   ./scripts/mutation.sh sample          # only the sampled mutants of scripts/mutation_sample.toml
#   ./scripts/mutation.sh report          # the per-module table of docs/theory.md, from the cache
#
# Not part of the default test run (hours on 2 cores). MUTATION_JOBS sets the worker count.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || ./scripts/setup_env.sh
[ -x .venv/bin/mutmut ] || .venv/bin/python -m pip install --quiet -e ".[mutation]"
export HYPOTHESIS_PROFILE=mutation
# Eight host devices, so that the in-process sharding test pads source batches that do not
# divide over the devices (the default test run has one device).
export XLA_FLAGS="${XLA_FLAGS:-} --xla_force_host_platform_device_count=8"
# Every mutant runs in a fresh process: JAX's persistent compilation cache lets it reuse the
# executables of every function the mutant did not change (about 3x faster per mutant).
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$PWD/mutants/.jax-cache}"
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1
if [ "${1:-}" = report ]; then
    exec .venv/bin/python scripts/mutation_report.py
fi
if [ "${1:-}" = sample ]; then
    shift
    mapfile -t sampled < <(.venv/bin/python scripts/mutation_sample.py names)
    set -- "${sampled[@]}" "$@"
fi
# A mutant that breaks a loop's exit can allocate without bound long before mutmut's CPU-time
# limit stops it; stop it at MUTATION_MAX_RSS_GB (default 8) resident, as that limit would.
max_kb=$(( ${MUTATION_MAX_RSS_GB:-8} * 1024 * 1024 ))
( while sleep 5; do
    ps -eo pid=,rss=,args= | awk -v m="$max_kb" '$2 > m && /mutmut run/ {print $1}' | xargs -r kill -9 2>/dev/null || true
  done ) &
watchdog=$!
trap 'kill $watchdog 2>/dev/null' EXIT
.venv/bin/mutmut run --max-children "${MUTATION_JOBS:-$(nproc)}" "$@"
.venv/bin/python scripts/mutation_report.py
