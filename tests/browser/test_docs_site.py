"""The docs site as a person sees it: `mirrorspec docs serve` + a real headless Chromium.

Needs Debian's `chromium` package (`apt-get install -y chromium`); without it the test fails
saying so, unless MIRRORSPEC_SKIP_BROWSER=1.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _site import write_project

from mirrorspec.cli import cli

pytestmark = pytest.mark.browser  # every test here drives a real headless Chromium

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


@pytest.fixture(scope="module")
def served(tmp_path_factory, request):
    """(browser, base URL, tmp dir): the generated site behind `mirrorspec docs serve --port 0`."""
    browser = find_browser()
    tmp = tmp_path_factory.mktemp("docs")
    # The pages print the project's absolute paths: a folder name of fixed length keeps their
    # line wrapping, and so the screenshots, the same on every machine.
    home = Path(tempfile.mkdtemp(prefix="ms-docs-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    project = write_project(home / "shop")
    result = CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    server = subprocess.Popen(
        [sys.executable, "-m", "mirrorspec", "docs", "serve", "--project-dir", str(project),
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        url = _announced_url(server)
        yield browser, url, tmp
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
    browser, url, tmp = served
    done = chromium(browser, tmp, "--dump-dom", url + page)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def visible_text(dom: str) -> str:
    """Roughly what a person reads: the DOM without scripts, styles and tags."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", dom)
    return re.sub(r"\s+", " ", text)


def test_index_shows_every_table_with_status_and_lineage(served):
    dom = dump_dom(served, "index.html")
    text = visible_text(dom)
    assert "shop" in text
    for name in ("sales.orders", "crm.customers", "dbo.events"):
        assert name in text
    assert "Replicating" in text and "Failed" in text and "not run" in text
    assert "4,321" in text  # processed rows from the monitoring JSON
    assert re.search(r'<svg[^>]*class="lineage"', dom)
    assert "external publisher" in text and "sales.schema/orders" in text
    # the filter script ran without breaking the page: every row is still shown
    assert dom.count("<tr data-search=") == 3 and " hidden" not in dom


def test_table_page_shows_columns_keys_metadata_and_status(served):
    dom = dump_dom(served, "tables/crm.customers.html")
    text = visible_text(dom)
    for column in ("customer_id", "region", "email"):
        assert column in text
    assert dom.count('class="key-marker"') == 2 and "KEY" in text
    assert "Failed" in text and "column region changed type" in text
    assert '"keyColumns"' in text and "DelimitedText" in text
    assert re.search(r'<svg[^>]*class="lineage"', dom)


def test_links_between_pages_resolve(served):
    dom = dump_dom(served, "tables/sales.orders.html")
    assert "Customer orders, one row per line" in visible_text(dom)
    assert 'href="../index.html"' in dom
    index = dump_dom(served, "index.html")
    assert 'href="tables/sales.orders.html"' in index


def test_screenshot_is_a_rendered_page(served):
    browser, url, tmp = served
    shot = tmp / "index.png"
    done = chromium(browser, tmp, "--window-size=1280,1000", "--hide-scrollbars",
                    f"--screenshot={shot}", url + "index.html")
    assert done.returncode == 0, done.stderr[-2000:]
    width, height, pixels = read_png(shot.read_bytes())
    assert (width, height) == (1280, 1000)
    assert len(set(pixels)) > 20  # text, badges and the graph, not a blank page


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


def test_table_page_shows_test_results_schema_links_and_history(served):
    dom = dump_dom(served, "tables/sales.orders.html")
    text = visible_text(dom)
    assert "FAIL" in text and "WARN" in text and "no match in crm.customers" in text
    assert re.search(r'<a href="\.\./tables/crm\.customers\.html">crm\.customers</a>', dom)
    dom = dump_dom(served, "tables/crm.customers.html")
    text = visible_text(dom)
    assert "column union" in text and "boolean" in text  # `active` came by column union
    assert "MERGE" in text and "00000000000000000003.parquet" in text  # the Delta history
    assert "referenced by" in text and 'class="lineage-ref"' in dom


PAGES = [("index.html", (1280, 1200)), ("tables/sales.orders.html", (1280, 1900)),
         ("tables/crm.customers.html", (1280, 2300))]


@pytest.mark.parametrize("page,size", PAGES, ids=[p for p, _ in PAGES])
def test_pages_look_like_their_reference_screenshots(served, page, size):
    """Each page rendered by Chromium against a reference screenshot (structure, not pixels).
    MIRRORSPEC_UPDATE_SCREENS=1 rewrites the references after an intended change."""
    from PIL import Image

    browser, url, tmp = served
    shot = tmp / (page.replace("/", "_") + ".png")
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
