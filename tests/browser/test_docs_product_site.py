"""The documentation site (`make docs`: mkdocs.yml, docs/) as a reader sees it in a real headless
Chromium: no code span shows the `\\|` its Markdown escapes a pipe with, and at 1280 px no code
block of the first pages a newcomer opens hides its lines behind a scrollbar.

The site is built as `make docs` builds it (`mkdocs build --strict`, so a broken link or anchor
fails here too). Needs Debian's `chromium` (see test_docs_site.py)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _browser import chromium, find_browser

pytestmark = pytest.mark.browser  # every test here drives a real headless Chromium

REPO = Path(__file__).resolve().parents[2]
WIDTH = 1280  # a laptop's browser window
# The pages a newcomer reads first; getting-started's diagram and run synopsis were clipped.
UNCLIPPED_PAGES = ("", "getting-started/")
# The pages whose code spans showed `\|` (the generated command reference foremost); every
# other page is checked in its HTML (test_no_page_escapes_a_pipe_in_code), without a browser.
ESCAPED_PAGES = ("cli/", "onelake/", "security/", "project-reference/", "performance/",
                 "reliability/")

# For each page: the code elements whose text holds a literal `\|`, and the code blocks whose
# lines are wider than the block (scrollWidth beyond clientWidth: a scrollbar hides the rest).
MEASURE = """function (d, w) {
  var out = {escaped: [], clipped: []};
  d.querySelectorAll("code").forEach(function (code) {
    if (code.textContent.indexOf("\\\\|") >= 0) out.escaped.push(code.textContent.slice(0, 80));
  });
  d.querySelectorAll("pre, pre > code").forEach(function (block) {
    var style = w.getComputedStyle(block);
    var hidden = style.overflowX !== "visible";
    if (hidden && block.scrollWidth > block.clientWidth + 1)
      out.clipped.push([block.scrollWidth, block.clientWidth, block.textContent.slice(0, 60)]);
  });
  return out;
}"""

# Every page in turn in one frame of WIDTH pixels, in one browser start; the figures of all of
# them are written into #out once the last page has been measured.
PROBE = """<!DOCTYPE html><html><body><pre id="out">no answer</pre>
<iframe id="page" width="%(width)d" height="900" style="border:0"></iframe>
<script>
var pages = %(pages)s, index = 0, results = {}, measure = %(measure)s;
var frame = document.getElementById("page");
frame.onload = function () {
  setTimeout(function () {
    try { results[pages[index]] = measure(frame.contentDocument, frame.contentWindow); }
    catch (e) { results[pages[index]] = {error: String(e)}; }
    index += 1;
    next();
  }, 50);
};
function next() {
  if (index < pages.length) { frame.src = pages[index]; return; }
  document.getElementById("out").textContent = JSON.stringify(results);
}
next();
</script></body></html>
"""


def build_site(destination: Path) -> Path:
    """`mkdocs build --strict` of the repository's docs into `destination`."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--config-file", str(REPO / "mkdocs.yml"), "--site-dir",
                           str(destination)], capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return destination


def site_pages(site: Path) -> list[str]:
    """Every page of the site as a relative URL (`""`, `cli/`, `sources/kafka/`)."""
    pages = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        if relative.split("/")[0] in ("assets", "search", "stylesheets"):
            continue
        pages.append("" if relative == "." else relative + "/")
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, freshly built."""
    return build_site(tmp_path_factory.mktemp("product-site") / "site")


@pytest.fixture(scope="module")
def measured(site, tmp_path_factory) -> dict[str, dict]:
    """{page: its figures at WIDTH px} for the pages checked in the browser."""
    browser = find_browser()
    tmp = tmp_path_factory.mktemp("product-site-browser")
    pages = [*UNCLIPPED_PAGES, *ESCAPED_PAGES]
    assert set(pages) <= set(site_pages(site)), "a checked page is no longer in the site"
    (site / "probe.html").write_text(PROBE % {"width": WIDTH, "pages": json.dumps(pages),
                                              "measure": MEASURE})
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/probe.html"
        done = chromium(browser, tmp, "--virtual-time-budget=120000", "--dump-dom", url)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    results = json.loads(html.unescape(found.group(1)))
    assert sorted(results) == sorted(pages), "the probe did not measure every page"
    assert [page for page, out in results.items() if "error" in out] == []
    return results


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_args) -> None:  # the test's output is the assertions
        pass


def test_no_code_span_shows_the_backslash_of_an_escaped_pipe(measured):
    escaped = {page: out["escaped"] for page, out in measured.items() if out["escaped"]}
    assert escaped == {}


def test_no_page_escapes_a_pipe_in_code(site):
    """The same check over every page's HTML (code text holds no markup that could hide it)."""
    code = re.compile(r"<code\b[^>]*>(.*?)</code>", re.S)
    escaped = {page: found for page in site_pages(site)
               if (found := [c[:80] for c in code.findall(
                   (site / page / "index.html").read_text(encoding="utf-8")) if "\\|" in c])}
    assert escaped == {}


@pytest.mark.parametrize("page", UNCLIPPED_PAGES)
def test_code_blocks_and_the_diagram_fit_at_1280_px(measured, page):
    assert measured[page]["clipped"] == [], f"{page or 'index'}: code wider than its block"

