#!/usr/bin/env bash
# Build the documentation site into site/ (MkDocs, strict: a broken reference fails the
# build), then check that every public name of the package is in its API reference.
# Installs the `docs` extra into .venv when it is missing. About 5 s after the install.
# The site opens from disk (file://) with search working.
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
# Search from file:// needs the offline plugin's script copy of the index and a local Web
# Worker shim; scripts/check_docs_offline.py checks it in a browser (needs Chromium).
if [ ! -s "${1:-site}/search/search_index.js" ]; then
    echo "build_docs: ${1:-site}/search/search_index.js is missing: search would not work" \
         "when the site is opened from disk (mkdocs.yml: plugins: offline)" >&2
    exit 1
fi
if grep -qE '<script[^>]* src="(https?:)?//' "${1:-site}/index.html"; then
    echo "build_docs: ${1:-site}/index.html loads a script from the network; the site must" \
         "work from disk without one (mkdocs.yml: extra: polyfills)" >&2
    exit 1
fi
.venv/bin/python scripts/check_api_docs.py "${1:-site}"
