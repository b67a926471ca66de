"""`mirrorspec docs generate` without a browser: files, content, escaping, offline-ness."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _site import write_project

from mirrorspec.cli import cli
from mirrorspec.docsite.collect import state_of
from mirrorspec.docsite.lineage import Edge, Node, render_svg


def generate(project: Path, *extra: str):
    result = CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project), *extra],
                                catch_exceptions=False)
    return result


@pytest.fixture
def site(tmp_path) -> Path:
    project = write_project(tmp_path / "shop")
    result = generate(project)
    assert result.exit_code == 0, result.output
    assert "Docs for 3 table(s) written to" in result.stdout
    return project / "target" / "docs"


def test_one_page_per_table_and_a_catalog(site):
    pages = sorted(p.name for p in (site / "tables").iterdir())
    assert pages == ["crm.customers.html", "dbo.events.html", "sales.orders.html"]
    catalog = json.loads((site / "catalog.json").read_text())
    assert [t["unique_id"] for t in catalog["tables"]] == \
        ["crm.customers", "dbo.events", "sales.orders"]
    orders = catalog["tables"][2]
    assert orders["metadata"]["keyColumns"] == ["order_id"]
    assert orders["state"] == "ok" and orders["run"]["rows_inserted"] == 4000


def test_compile_artifacts_are_written_too(site):
    assert (site.parent / "plan.json").exists()


def test_index_lists_tables_status_and_lineage(site):
    html = (site / "index.html").read_text()
    for text in ("sales.orders", "crm.customers", "dbo.events", "Replicating", "Failed",
                 "not run", "4,321", 'class="lineage"', "landing_zone", "external publisher"):
        assert text in html, text
    assert 'href="tables/sales.orders.html"' in html
    # three columns of the lineage graph: external publisher → folder → Delta table, the three
    # tables' publishers drawn as one node
    assert html.count('class="lineage-node') == 7
    assert html.count(">external publisher<") == 1 and "writes 3 landing folders" in html


def test_table_page_content(site):
    html = (site / "tables" / "sales.orders.html").read_text()
    for text in ("order_id", "customer_name", "Who ordered", "Int64", "bigint", "NOT NULL",
                 "Customer orders, one row per line", "finance", "daily", "sales.schema/orders",
                 "4,321", "1.5 s", "4,000", "300", "21", "not_null", "warn", "keyColumns"):
        assert text in html, text
    assert html.count('class="key-marker"') == 1
    assert 'href="../index.html"' in html


def test_compound_key_failure_and_delimited_metadata(site):
    html = (site / "tables" / "crm.customers.html").read_text()
    assert html.count('class="key-marker"') == 2
    assert "column region changed type" in html and "BadFile" in html
    assert "DelimitedText" in html and "tsv" in html
    assert "Not in the last" in html  # no run result for this table


def test_user_text_is_escaped(site):
    html = (site / "tables" / "dbo.events.html").read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; friends" in html
    assert "Columns are not declared" in html
    assert "none — the table accepts inserts only" in html


def test_site_needs_no_network(site):
    for page in site.rglob("*.html"):
        html = page.read_text()
        external = re.findall(r'(?:src|href)="(https?:)?//', html)
        assert external == [], page
        assert "<link" not in html  # CSS is inline
        assert "@import" not in html


def test_without_status_or_run_results(tmp_path):
    project = write_project(tmp_path / "bare", status=False, run_results=False)
    result = generate(project)
    assert result.exit_code == 0, result.output
    html = (project / "target" / "docs" / "tables" / "sales.orders.html").read_text()
    assert "No monitoring status yet" in html and "Not in the last" in html
    index = (project / "target" / "docs" / "index.html").read_text()
    assert index.count('<span class="badge none">not run</span>') == 3


def test_regenerate_replaces_the_site(tmp_path):
    project = write_project(tmp_path / "shop")
    assert generate(project).exit_code == 0
    stale = project / "target" / "docs" / "tables" / "old.html"
    stale.write_text("old")
    assert generate(project).exit_code == 0
    assert not stale.exists()


def test_generate_reports_project_errors(tmp_path):
    project = write_project(tmp_path / "bad", tables=[{"name": "x", "colums": []}])
    result = generate(project)
    assert result.exit_code == 1 and "shop.yml" in result.stderr


def test_serve_without_a_site_says_what_to_do(tmp_path):
    project = write_project(tmp_path / "shop")
    result = CliRunner().invoke(cli, ["docs", "serve", "--project-dir", str(project)])
    assert result.exit_code == 1
    assert "no docs site there" in result.stderr and "docs generate" in result.stderr


def test_lineage_svg_links_and_escapes():
    svg = render_svg([Node("f", 0, "qlik <feed>", "a/b"), Node("l", 1, "s.schema/t"),
                      Node("d", 2, "s.t", "Failed", href="tables/s.t.html", state="failed")],
                     [Edge("f", "l"), Edge("l", "d")], "Lineage")
    assert svg.startswith('<svg class="lineage"') and svg.endswith("</svg>")
    assert svg.count('class="lineage-edge"') == 2
    assert '<a href="tables/s.t.html">' in svg and "lineage-failed" in svg
    assert "qlik &lt;feed&gt;" in svg


@pytest.mark.parametrize("status, state", [("Replicating", "ok"), ("Running", "ok"),
                                           ("success", "ok"), ("Failed", "failed"),
                                           ("error", "failed"), ("waiting", "warn"),
                                           (None, "none"), ("Something new", "warn")])
def test_status_colours(status, state):
    assert state_of(status) == state


def test_serve_answers_and_stops_on_ctrl_c(site):
    """`mirrorspec docs serve --port 0` serves the site; SIGINT ends it cleanly (exit 0)."""
    import os
    import signal
    import subprocess
    import urllib.request

    project = site.parent.parent
    server = subprocess.Popen(
        [sys.executable, "-m", "mirrorspec", "docs", "serve", "--project-dir", str(project),
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = server.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        with urllib.request.urlopen(url + "tables/sales.orders.html") as response:
            page = response.read().decode()
        assert response.status == 200 and "customer_name" in page
        with urllib.request.urlopen(url) as response:  # / serves index.html
            assert "crm.customers" in response.read().decode()
    finally:
        server.send_signal(signal.SIGINT)
        rest, _ = server.communicate(timeout=60)
    assert server.returncode == 0, rest
    assert "Stopped." in rest


def test_serve_on_a_busy_port_says_what_to_do(site):
    import socket

    project = site.parent.parent
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(cli, ["docs", "serve", "--project-dir", str(project),
                                          "--port", str(port)])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
