"""Look at the built documentation site as a reader would: headless Chromium.

    ./scripts/build_docs.sh && .venv/bin/python scripts/render_docs.py [SITE_DIR] [OUT_DIR]

Serves ``SITE_DIR`` (default ``site``) on localhost, opens pages in headless Chromium
(Debian's ``chromium`` package, ``/usr/bin/chromium``; not needed by anything else), and
checks in the DOM after the scripts ran that

- every formula of the theory, concepts and core API pages was typeset by KaTeX (each
  ``span.arithmatex`` holds KaTeX output, and no raw ``\\(``, ``\\[`` or ``$`` delimiters
  are left in them);
- every API page loads and shows its objects' headings.

Saves a PNG of each checked page into ``OUT_DIR`` (default ``site-screenshots``) and prints
one line per page. Not part of the test suite (it needs a browser). Exit status 1 on a
failed check.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
]  # fmt: skip
MATH_PAGES = ["theory.html", "concepts.html", "api/core.html"]


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium not found: apt-get install chromium (Debian) to run this script")
    return exe


def _run(args: list[str], profile: str) -> str:
    out = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return out.stdout


def dom(url: str, profile: str) -> str:
    """The page's DOM after its scripts ran (a 5 s virtual-time budget)."""
    return _run(["--virtual-time-budget=5000", "--dump-dom", url], profile)


def screenshot(url: str, path: Path, profile: str) -> None:
    _run(["--virtual-time-budget=5000", "--window-size=1280,1400", f"--screenshot={path}", url],
         profile)  # fmt: skip


def check_math(html: str) -> tuple[int, list[str]]:
    """(formulas, problems): each arithmatex span must contain KaTeX output and no raw TeX
    delimiters outside it."""
    spans = re.findall(r'<(span|div) class="arithmatex">(.*?)</\1>', html, flags=re.S)
    problems = []
    for _, inner in spans:
        if 'class="katex' not in inner:
            problems.append(f"not typeset: {inner[:80]!r}")
    visible = re.sub(r'<span class="katex.*?</annotation>', "", html, flags=re.S)
    if re.search(r"\\\(|\\\[", re.sub(r"<(script|style).*?</\1>", "", visible, flags=re.S)):
        problems.append("raw \\( or \\[ delimiters left in the page")
    return len(spans), problems


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "site").resolve()
    out = Path(argv[1] if len(argv) > 1 else "site-screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.func.log_message = lambda *a, **k: None  # quiet: one line per page is printed
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    failed = False
    with tempfile.TemporaryDirectory() as profile:
        for page in MATH_PAGES:
            n, problems = check_math(dom(f"{base}/{page}", profile))
            ok = n > 0 and not problems
            failed |= not ok
            print(
                f"{'ok ' if ok else 'BAD'} {page}: {n} formulas"
                + "".join(f"\n    {p}" for p in problems)
            )
        for page in sorted(p.relative_to(site).as_posix() for p in (site / "api").glob("*.html")):
            html = dom(f"{base}/{page}", profile)
            headings = len(re.findall(r'class="doc doc-heading"', html))
            ok = page == "api/index.html" or headings > 0
            failed |= not ok
            print(f"{'ok ' if ok else 'BAD'} {page}: {headings} documented objects")
        for page in ("index.html", *MATH_PAGES, "api/plot.html"):
            png = out / (page.replace("/", "_").removesuffix(".html") + ".png")
            screenshot(f"{base}/{page}", png, profile)
            print(f"    screenshot {png}")
    server.shutdown()
    return int(failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
