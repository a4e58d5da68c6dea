"""Check that the documentation site's search works when the site is opened from disk.

A manual, optional check (not part of the test suite or CI: it needs a Chromium browser).
It opens ``site/index.html`` as a ``file://`` URL in headless Chromium, types a query into
the search box as a reader would, and exits non-zero when no search result appears.

Needs:

* Chromium, e.g. Debian's ``apt-get install -y chromium`` (``/usr/bin/chromium``); another
  binary with ``--chromium PATH``. No browser download is needed or made.
* Playwright for Python, in any environment (a scratch one keeps it out of the project's):
  ``python3 -m venv /tmp/pwvenv && /tmp/pwvenv/bin/pip install playwright``. Do not run
  ``playwright install``: the check drives the system Chromium.

Run::

    /tmp/pwvenv/bin/python scripts/check_docs_offline.py             # builds the site first
    /tmp/pwvenv/bin/python scripts/check_docs_offline.py site        # checks a built site
    /tmp/pwvenv/bin/python scripts/check_docs_offline.py site --query "energy"

Without a site path it builds one with ``./scripts/build_docs.sh`` into a temporary
folder. Exit status: 0 when the query finds results, 1 when it finds none, 2 when the
check cannot run (no Chromium, no Playwright, no ``index.html``).
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent

# Flags that keep Chromium quiet on a closed network (without them its background
# connections hang) and make it run headless as root.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def search_from_disk(
    site: pathlib.Path, query: str, chromium: str, timeout_s: float
) -> tuple[int, str, list[str], list[str]]:
    """Open ``site/index.html`` from disk, search for ``query`` and read the results.

    Args:
        site: the built site's folder (the one holding ``index.html``).
        query: the text typed into the search box.
        chromium: path to the Chromium executable.
        timeout_s: how long to wait for the page and for the first result.

    Returns:
        ``(count, meta, titles, errors)``: the number of results shown, the search
        panel's status line (e.g. "12 matching documents"), the first few result titles,
        and the page's console errors and failed requests (to explain a failure).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    url = (site / "index.html").resolve().as_uri()
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=chromium,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 800},
            )
            try:
                page = context.new_page()
                page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
                page.on(
                    "console",
                    lambda msg: (
                        errors.append(f"console {msg.type}: {msg.text}")
                        if msg.type in ("error", "warning")
                        else None
                    ),
                )
                page.on(
                    "requestfailed",
                    lambda req: errors.append(
                        f"request failed: {req.url} ({req.failure or 'unknown'})"
                    ),
                )
                timeout_ms = timeout_s * 1000
                page.goto(url, wait_until="load", timeout=timeout_ms)
                box = page.locator("input.md-search__input")
                try:
                    box.wait_for(state="visible", timeout=timeout_ms)
                except PlaywrightTimeout:
                    # Material hides the search box when its index or worker fails to load.
                    return 0, "(the search box never became visible)", [], errors
                box.click(timeout=timeout_ms)
                box.press_sequentially(query, delay=50)
                results = page.locator(".md-search-result__item")
                try:
                    results.first.wait_for(state="attached", timeout=timeout_ms)
                except PlaywrightTimeout:
                    pass
                meta = page.locator(".md-search-result__meta").first
                meta_text = meta.inner_text().strip() if meta.count() else "(no status line)"
                titles = [
                    t.strip()
                    for t in page.locator(".md-search-result__item h1").all_inner_texts()[:5]
                ]
                return results.count(), meta_text, titles, errors
            finally:
                context.close()


def main(argv: list[str] | None = None) -> int:
    """Build or take a site, search it from disk in headless Chromium, report.

    Args:
        argv: command-line arguments (``sys.argv[1:]`` when None).

    Returns:
        0 when results appear, 1 when none do, 2 when the check cannot run.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", help="built site folder (default: build one)")
    parser.add_argument("--query", default="certificate", help="text to search for")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="Chromium binary")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait")
    args = parser.parse_args(argv)

    if not pathlib.Path(args.chromium).is_file():
        print(f"check_docs_offline: no Chromium at {args.chromium} (--chromium PATH)")
        return 2
    try:
        import playwright  # noqa: F401
    except ImportError:
        print(
            "check_docs_offline: Playwright for Python is not installed in "
            f"{sys.executable}; see the top of this script"
        )
        return 2

    with tempfile.TemporaryDirectory(prefix="docs-site-") as built:
        if args.site is None:
            site = pathlib.Path(built) / "site"
            print(f"check_docs_offline: building the site into {site}")
            subprocess.run([str(REPO / "scripts" / "build_docs.sh"), str(site)], check=True)
        else:
            site = pathlib.Path(args.site)
        if not (site / "index.html").is_file():
            print(f"check_docs_offline: {site / 'index.html'} does not exist")
            return 2
        count, meta, titles, errors = search_from_disk(
            site, args.query, args.chromium, args.timeout
        )

    print(f"opened {(site / 'index.html').resolve().as_uri()}, searched {args.query!r}")
    print(f"search status: {meta}")
    print(f"results shown: {count}")
    for title in titles:
        print(f"  - {title}")
    if count == 0:
        for line in errors[:20]:
            print(f"  {line}")
        print("FAIL: search shows no results when the site is opened from disk")
        return 1
    print("OK: search works when the site is opened from disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
