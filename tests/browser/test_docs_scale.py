"""The docs site at 100 tables: the lineage collapses publishers per kind, focuses on a table and
its neighbours, pans and zooms; search finds columns; a phone (390 px) never scrolls sideways.
The browser tests drive a real headless Chromium (see test_docs_site.py)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _browser import PHONE_CHECK, find_browser, generated, looks_like_reference, measure, serving
from _site import write_many

from mirrorspec.docsite.lineage import NODE_H

browser = pytest.mark.browser


@pytest.fixture(scope="module")
def many(tmp_path_factory, request) -> Path:
    """The project of 100 tables with its site generated."""
    return generated(request, "ms-many-", write_many)


@pytest.fixture(scope="module")
def served(many, tmp_path_factory):
    browser_path = find_browser()
    with serving(many) as url:
        yield browser_path, url, tmp_path_factory.mktemp("many"), many / "target" / "docs"


def nodes_of(html: str) -> dict[str, tuple[float, float]]:
    """data-key → (x, y) of every node of the index's lineage graph."""
    return {key: (float(x), float(y)) for key, x, y in re.findall(
        r'data-key="([^"]+)" data-col="\d" transform="translate\(([\d.]+),([\d.]+)\)"', html)}


def test_one_publisher_node_per_kind_and_one_row_per_table(many):
    html = (many / "target" / "docs" / "index.html").read_text()
    where = nodes_of(html)
    feeds = sorted(k for k in where if k.startswith("feed:"))
    assert feeds == ["feed:csv", "feed:landing_zone", "feed:parquet"]
    assert "writes 60 landing folders" in html and "25 feeds → 25 folders" in html
    assert len(where) == 3 + 2 * 100
    # each folder beside its Delta table, no two boxes of a column overlapping
    for key, (_x, y) in where.items():
        if key.startswith("lz:"):
            assert where["delta:" + key[3:]][1] == y
    for column in {x for x, _y in where.values()}:
        ys = sorted(y for x, y in where.values() if x == column)
        assert all(b - a >= NODE_H for a, b in zip(ys, ys[1:]))
    # the tables of a kind are drawn together, their feed beside the first of them
    csv_rows = sorted(where[f"lz:{s}.t{n:03d}"][1] for n, s in
                      ((n, ("sales", "crm", "stock", "hr")[n % 4]) for n in range(60, 85)))
    assert csv_rows == [csv_rows[0] + i * (csv_rows[1] - csv_rows[0]) for i in range(25)]
    assert where["feed:csv"][1] == csv_rows[0]


def test_relationship_arcs_can_be_told_apart(many):
    html = (many / "target" / "docs" / "index.html").read_text()
    arcs = re.findall(r'<path class="lineage-ref" data-from="([^"]+)" data-to="([^"]+)" '
                      r'data-c="(\d)" d="([^"]+)"', html)
    assert len(arcs) == 96
    assert len({d for *_ends, d in arcs}) == 96  # no two arcs on the same curve
    # neighbouring arcs differ in colour, and each names its two tables
    assert all(a[2] != b[2] for a, b in zip(arcs, arcs[1:]))
    assert "relationships: crm.t057 → crm.t053" in html


def test_search_covers_columns_and_their_descriptions(many):
    html = (many / "target" / "docs" / "index.html").read_text()
    row = re.search(r"<tr data-search=\"crm\.t057[^\"]*\" data-columns='([^']*)'>", html)
    assert row, "no search data for crm.t057"
    columns = json.loads(row.group(1).replace("&#39;", "'"))
    assert ["attr_57", "IBAN of the supplier's bank account"] in columns


SEARCH = """function (d, w, out) {
  var input = d.getElementById("filter");
  out.results = {};
  ["iban", "attr_42", "parent_id", "crm iban", "sales iban", "failed bank"].forEach(function (q) {
    input.value = q;
    input.dispatchEvent(new w.Event("input"));
    var rows = Array.prototype.filter.call(d.querySelectorAll("#tables tbody tr"), function (r) { return !r.hidden; });
    out.results[q] = { rows: rows.map(function (r) { return r.querySelector("a").textContent; }),
                       hits: rows.length ? rows[0].querySelector(".hits").textContent : "",
                       count: d.getElementById("filter-count").textContent };
  });
}"""


@browser
def test_search_finds_tables_by_column_name_and_description(served):
    out = measure(served, served[3], "index.html", 1280, SEARCH)["results"]
    assert out["iban"]["rows"] == ["crm.t057"]
    assert out["iban"]["hits"] == "column attr_57 (IBAN of the supplier's bank account)"
    assert out["iban"]["count"] == "1 of 100 tables"
    assert out["attr_42"]["rows"] == ["stock.t042"]
    assert len(out["parent_id"]["rows"]) == 100
    assert out["crm iban"]["rows"] == ["crm.t057"] and out["sales iban"]["rows"] == []
    assert out["failed bank"]["rows"] == ["crm.t057"]  # its status + a description


LINEAGE = """function (d, w, out) {
  var svg = d.querySelector("svg.lineage"), wrap = svg.parentNode;
  function visible(selector) {
    return Array.prototype.filter.call(svg.querySelectorAll(selector), function (n) {
      return n.getBoundingClientRect().width > 0;
    }).map(function (n) { return n.getAttribute("data-key") || n.getAttribute("data-from") + ">" + n.getAttribute("data-to"); });
  }
  out.nodes = visible("[data-key]");
  out.refs = visible(".lineage-ref");
  out.box = wrap.getBoundingClientRect().height;
  out.overflow = d.documentElement.scrollWidth - w.innerWidth;
  out.width = svg.getBoundingClientRect().width;
  d.querySelector('[data-zoom="in"]').click();
  out.zoomed = svg.getBoundingClientRect().width;
  d.querySelector('[data-zoom="fit"]').click();
  out.fit = [svg.getBoundingClientRect().width, svg.getBoundingClientRect().height, wrap.clientHeight];
  out.select = d.getElementById("lineage-focus").value;
  var delta = svg.querySelector('[data-key="delta:crm.t057"]');
  delta.dispatchEvent(new w.PointerEvent("pointerenter"));
  out.highlighted = Array.prototype.map.call(svg.querySelectorAll(".on"), function (e) {
    return e.getAttribute("data-from") + ">" + e.getAttribute("data-to");
  });
  out.dimmed = svg.classList.contains("hl");
}"""


@browser
@pytest.mark.parametrize("width", [1280, 390])
def test_lineage_of_100_tables_fits_a_box_that_pans_and_zooms(served, width):
    out = measure(served, served[3], "index.html", width, LINEAGE)
    assert out["overflow"] <= 0  # the page never scrolls sideways: the graph's box does
    assert len(out["nodes"]) == 203 and out["select"] == ""
    assert out["box"] <= (560 if width > 640 else 420)  # not 6,000 px of page
    assert out["zoomed"] == pytest.approx(out["width"] * 1.25, rel=0.01)
    fit_w, fit_h, box_h = out["fit"]  # "fit" shows the whole graph in the box
    assert fit_h <= box_h + 1 and fit_w < out["width"]
    # pointing at a table brings out its edges among the 296 others (the rest are dimmed)
    assert out["dimmed"] and sorted(out["highlighted"]) == [
        "delta:crm.t057>delta:crm.t053", "delta:crm.t061>delta:crm.t057",
        "lz:crm.t057>delta:crm.t057"]


@browser
@pytest.mark.parametrize("width", [1280, 390])
def test_focus_on_a_table_shows_it_and_its_neighbours(served, width):
    out = measure(served, served[3], "index.html#focus=crm.t057", width, LINEAGE)
    assert sorted(out["nodes"]) == ["delta:crm.t053", "delta:crm.t057", "delta:crm.t061",
                                    "feed:landing_zone", "lz:crm.t057"]
    assert sorted(out["refs"]) == ["delta:crm.t057>delta:crm.t053",
                                   "delta:crm.t061>delta:crm.t057"]
    assert out["select"] == "delta:crm.t057" and out["overflow"] <= 0


@browser
def test_a_phone_sees_the_results_of_100_tables_without_scrolling_sideways(served):
    out = measure(served, served[3], "index.html", 390, PHONE_CHECK, height=800)
    assert out["overflow"] <= 0
    labels = [label for label, _visible in out["badges"]]
    assert len(labels) >= 200 and "1 FAIL" in labels and "Failed" in labels
    assert all(visible for _label, visible in out["badges"])


SHOTS = [("index.html", (1280, 1000)), ("index.html", (390, 1400)),
         ("index.html#focus=crm.t057", (1280, 800)), ("index.html#focus=crm.t057", (390, 800))]


@browser
@pytest.mark.parametrize("page,size", SHOTS, ids=[f"{p}@{s[0]}" for p, s in SHOTS])
def test_100_tables_look_like_their_reference_screenshots(served, page, size):
    name = "many." + page.replace("#", "_") + f".{size[0]}.png"
    looks_like_reference(served, page, size, name)
