"""Driving a real headless Chromium for the docs-site tests: serving a generated site, dumping
a page's DOM, screenshots compared with references on a coarse grid, and a probe page that
measures a page (at a given width) from JavaScript and hands the figures back as JSON."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path

import pytest

SCREENS = Path(__file__).parent / "fixtures" / "screens"
# Screenshots are compared on a coarse grid of mean brightness, so fonts, antialiasing and the
# temporary paths printed on the pages don't matter but a missing or moved section does.
GRID = 48  # cells across
CELL_HEIGHT = 6  # pixels per grid row
MAX_SHIFT_PX = 30  # content may move up or down by about a line
CELL_TOLERANCE = 10  # brightness levels (of 255) a cell may differ by
MAX_DIFFERENT_CELLS = 0.05  # share of cells allowed beyond the tolerance (a blank page: ~19%,
#                             a section moved by 100 px: ~17%)

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SAFETY_TIMEOUT = 120  # seconds; only so a wedged browser can't hang the suite


def find_browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("MIRRORSPEC_SKIP_BROWSER") == "1":
        pytest.skip("no chromium and MIRRORSPEC_SKIP_BROWSER=1")
    pytest.fail("chromium is not installed: install it with `apt-get update && apt-get install "
                "-y chromium` (Debian/Ubuntu), or set MIRRORSPEC_SKIP_BROWSER=1 to skip "
                "the browser tests", pytrace=False)



def generated(request, prefix: str, write) -> Path:
    """`write(folder)`'s project with its site generated, in a new /tmp folder removed after
    the test. The pages print the project's absolute paths: a folder name of fixed length keeps
    their line wrapping, and so the screenshots, the same on every machine."""
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    project = write(home / "shop")
    result = CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return project


@contextmanager
def serving(project: Path):
    """The base URL of `mirrorspec docs serve --port 0` for `project` (stopped on exit)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    server = subprocess.Popen(
        [sys.executable, "-m", "mirrorspec", "docs", "serve", "--project-dir", str(project),
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        yield _announced_url(server)
    finally:
        server.terminate()
        try:
            server.wait(timeout=SAFETY_TIMEOUT)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _announced_url(server: subprocess.Popen) -> str:
    """Read the server's 'Serving … at http://…' line (it is printed once it listens)."""
    lines: list[str] = []

    def read() -> None:
        lines.append(server.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(SAFETY_TIMEOUT)
    line = lines[0] if lines else ""
    match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
    assert match, f"`mirrorspec docs serve` did not announce its URL: {line!r}"
    return match.group(1)


def chromium(browser: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"chromium-profile-{len(list(tmp.iterdir()))}"
    return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=SAFETY_TIMEOUT)


def dump_dom(served, page: str) -> str:
    browser, url, tmp = served[:3]
    done = chromium(browser, tmp, "--dump-dom", url + page)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def visible_text(dom: str) -> str:
    """Roughly what a person reads: the DOM without scripts, styles and tags."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", dom)
    return re.sub(r"\s+", " ", text)


def read_png(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated scanlines of a PNG (enough to tell it isn't blank)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))


def looks_like_reference(served, page: str, size: tuple[int, int], name: str = "") -> Path:
    """Screenshot `page` at `size` and compare it with the reference screenshot of that name
    (structure, not pixels). MIRRORSPEC_UPDATE_SCREENS=1 rewrites the reference after an
    intended change. Returns the screenshot, for a person to look at."""
    from PIL import Image

    browser, url, tmp = served[:3]
    shot = tmp / (name or page.replace("/", "_").replace("#", "_") + ".png")
    done = chromium(browser, tmp, f"--window-size={size[0]},{size[1]}", "--hide-scrollbars",
                    f"--screenshot={shot}", url + page)
    assert done.returncode == 0, done.stderr[-2000:]
    reference = SCREENS / shot.name
    if os.environ.get("MIRRORSPEC_UPDATE_SCREENS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, reference)
    actual, expected = Image.open(shot), Image.open(reference)
    assert actual.size == expected.size == size
    different = grid_difference(actual, expected)
    assert different <= MAX_DIFFERENT_CELLS, (
        f"{page}: {different:.1%} of the page differs from {reference.name} "
        f"(see {shot}); if the change is intended, rerun with MIRRORSPEC_UPDATE_SCREENS=1")
    # and the comparison can fail: a blank page is far from the reference
    blank = Image.new("RGB", size, "white")
    assert grid_difference(blank, expected) > MAX_DIFFERENT_CELLS
    return shot


PROBE = """<!DOCTYPE html><html><body><pre id="out">no answer</pre>
<iframe id="page" src="%(page)s" width="%(width)d" height="%(height)d" style="border:0"></iframe>
<script>
var frame = document.getElementById("page");
frame.onload = function () {
  setTimeout(function () {
    var out = {};
    try { (%(measure)s)(frame.contentDocument, frame.contentWindow, out); }
    catch (e) { out.error = String(e); }
    document.getElementById("out").textContent = JSON.stringify(out);
  }, 50);
};
</script></body></html>
"""


def measure(served, site: Path, page: str, width: int, script: str, height: int = 900) -> dict:
    """Open `page` in a `width`-pixel-wide frame and run `script` (a JavaScript
    `function (document, window, out)` that fills `out`) once it has loaded; returns `out`."""
    browser, url, tmp = served[:3]
    probe = f"probe-{len(list(site.glob('probe-*')))}.html"
    (site / probe).write_text(PROBE % {"page": page, "width": width, "height": height,
                                       "measure": script})
    done = chromium(browser, tmp, "--virtual-time-budget=5000", "--dump-dom", url + probe)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    out = json.loads(html.unescape(found.group(1)))
    assert "error" not in out, out
    return out


# On a phone: the page never scrolls sideways and every result badge is on screen.
PHONE_CHECK = """function (d, w, out) {
  out.overflow = d.documentElement.scrollWidth - w.innerWidth;
  out.badges = Array.prototype.map.call(d.querySelectorAll("td .badge"), function (b) {
    var r = b.getBoundingClientRect();
    return [b.textContent.trim(), r.left >= 0 && r.right <= w.innerWidth && r.width > 0];
  });
}"""


def grid_difference(actual, expected) -> float:
    """Share of grid cells whose mean brightness differs by more than CELL_TOLERANCE, at the
    best vertical offset within ±MAX_SHIFT_PX (a path wrapping onto one more line shifts what
    follows by a line; a missing section shifts it by far more)."""
    from PIL import Image

    rows = max(1, actual.size[1] // CELL_HEIGHT)
    a, b = (image.convert("L").resize((GRID, rows), Image.Resampling.BOX).tobytes()
            for image in (actual, expected))
    best = 1.0
    for offset in range(-MAX_SHIFT_PX // CELL_HEIGHT, MAX_SHIFT_PX // CELL_HEIGHT + 1):
        pairs = [(a[i], b[i + offset * GRID]) for i in range(len(a))
                 if 0 <= i + offset * GRID < len(b)]
        best = min(best, sum(abs(x - y) > CELL_TOLERANCE for x, y in pairs) / len(pairs))
    return best
