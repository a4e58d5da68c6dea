#!/usr/bin/env bash
# Build the documentation site into site/ (MkDocs, strict: a broken reference fails the
# build), then check that every public name of the package is in its API reference.
# Installs the `docs` extra into .venv when it is missing. About 5 s after the install.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || ./scripts/setup_env.sh
if ! { .venv/bin/python -c "import mkdocs, material, mkdocstrings_handlers.python" 2>/dev/null \
        && [ -x .venv/bin/ruff ]; }; then
    echo "build_docs: installing grounding[docs]" >&2
    .venv/bin/python -m pip install --quiet -e ".[docs]"
fi
export NO_MKDOCS_2_WARNING=1
.venv/bin/mkdocs build --strict --site-dir "${1:-site}"
.venv/bin/python scripts/check_api_docs.py "${1:-site}"
