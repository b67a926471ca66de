"""The docs site as a person sees it: `mirrorspec docs serve` + a real headless Chromium.

Needs Debian's `chromium` package (`apt-get install -y chromium`); without it the test fails
saying so, unless MIRRORSPEC_SKIP_BROWSER=1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _browser import PHONE_CHECK, chromium, dump_dom, find_browser, generated, \
    looks_like_reference, measure, read_png, serving, visible_text
from _site import write_project


pytestmark = pytest.mark.browser  # every test here drives a real headless Chromium


@pytest.fixture(scope="module")
def served(tmp_path_factory, request):
    """(browser, base URL, tmp dir): the generated site behind `mirrorspec docs serve --port 0`."""
    browser = find_browser()
    project = generated(request, "ms-docs-", write_project)
    with serving(project) as url:
        yield browser, url, tmp_path_factory.mktemp("docs"), project / "target" / "docs"


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
    browser, url, tmp = served[:3]
    shot = tmp / "index.png"
    done = chromium(browser, tmp, "--window-size=1280,1000", "--hide-scrollbars",
                    f"--screenshot={shot}", url + "index.html")
    assert done.returncode == 0, done.stderr[-2000:]
    width, height, pixels = read_png(shot.read_bytes())
    assert (width, height) == (1280, 1000)
    assert len(set(pixels)) > 20  # text, badges and the graph, not a blank page


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
         ("tables/crm.customers.html", (1280, 2300)), ("index.html", (390, 1400)),
         ("tables/sales.orders.html", (390, 1700))]


@pytest.mark.parametrize("page,size", PAGES, ids=[f"{p}@{s[0]}" for p, s in PAGES])
def test_pages_look_like_their_reference_screenshots(served, page, size):
    """Each page rendered by Chromium against a reference screenshot (structure, not pixels),
    on a desktop and on a phone (390 px). MIRRORSPEC_UPDATE_SCREENS=1 rewrites the references
    after an intended change."""
    name = page.replace("/", "_") + ("" if size[0] > 400 else ".390") + ".png"
    looks_like_reference(served, page, size, name)


@pytest.mark.parametrize("page", ["index.html", "tables/sales.orders.html"])
def test_a_phone_sees_results_without_scrolling_sideways(served, page):
    out = measure(served, served[3], page, 390, PHONE_CHECK)
    assert out["overflow"] <= 0
    labels = [label for label, _visible in out["badges"]]
    assert any("FAIL" in label for label in labels) and any("PASS" in label for label in labels)
    assert all(visible for _label, visible in out["badges"]), out["badges"]
