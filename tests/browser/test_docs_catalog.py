"""What the docs site tells a dbt user (no browser): the last data-test results, declared vs
observed columns, links and lineage between tables, the Delta history, nullability only where
known, and the site refreshed by the commands that change its data."""

from __future__ import annotations

import html as html_lib
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _site import write_project

from mirrorspec.cli import cli


@pytest.fixture
def site(tmp_path) -> Path:
    project = write_project(tmp_path / "shop")
    result = CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return project / "target" / "docs"


def text_of(page: Path) -> str:
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", dom)))


def rows(page: Path, table_id: str) -> list[str]:
    """The text of each body row of the <table id=…> or of the section with that id."""
    html = page.read_text()
    match = re.search(rf'id="{table_id}".*?<tbody>(.*?)</tbody>', html, flags=re.S)
    assert match, table_id
    return [re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", row))).strip()
            for row in re.findall(r"<tr.*?</tr>", match.group(1), flags=re.S)]


def test_last_test_results_per_table(site):
    tests = rows(site / "tables" / "sales.orders.html", "tests")
    assert tests[0].startswith("unique error") and tests[0].endswith("PASS")
    assert "relationships error" in tests[2] and "FAIL 2" in tests[2]
    assert "no match in crm.customers.customer_id" in tests[2]
    assert "accepted_values warn" in tests[3] and "WARN 1" in tests[3]
    assert "refunded: 1" in tests[3]
    assert "2026-11-22T00:11:00Z" in text_of(site / "tables" / "sales.orders.html")
    # the index sums them up per table
    index = text_of(site / "index.html")
    assert re.search(r"sales\.orders .*?1 FAIL 1 WARN 2 PASS", index)


def test_tests_never_run_say_so(tmp_path):
    project = write_project(tmp_path / "shop", test_results=False)
    assert CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project)]
                              ).exit_code == 0
    page = project / "target" / "docs" / "tables" / "sales.orders.html"
    assert text_of(page).count("not run") >= 4
    assert "No target/test_results.json yet" in text_of(page)


def test_declared_and_observed_columns_side_by_side(site):
    columns = rows(site / "tables" / "crm.customers.html", "columns")
    by_name = {row.split()[1]: row for row in columns}
    # declared and in the table: both types; the observed one differs from the declared Int32
    assert by_name["customer_id"].split()[3:6] == ["Int32", "int", "bigint"]
    assert 'class="differs"' in (site / "tables" / "crm.customers.html").read_text()
    # declared, not landed yet
    assert "not in the table yet" in by_name["email"] and "String string —" in by_name["email"]
    # in the Delta table only: arrived by column union, listed after the declared ones
    assert [row.split()[1] for row in columns] == ["customer_id", "region", "email", "name",
                                                   "city", "active"]
    for name, data_type in (("name", "string"), ("city", "string"), ("active", "boolean")):
        assert "column union" in by_name[name] and f"— — {data_type}" in by_name[name]


def test_nullability_only_where_known(site):
    columns = {row.split()[1]: row for row in rows(site / "tables" / "crm.customers.html",
                                                   "columns")}
    assert columns["customer_id"].endswith("NOT NULL")  # declared nullable: false
    assert columns["email"].endswith("nullable")  # a declared DataType: IsNullable's default
    assert columns["city"].endswith("—")  # only observed: nothing says


def test_relationships_are_links_and_lineage_crosses_tables(site):
    orders = (site / "tables" / "sales.orders.html").read_text()
    assert re.search(r'to: <a href="\.\./tables/crm\.customers\.html">crm\.customers</a>', orders)
    assert "references" in text_of(site / "tables" / "sales.orders.html")
    customers = site / "tables" / "crm.customers.html"
    assert "referenced by sales.orders" in text_of(customers)
    for page in (site / "tables" / "sales.orders.html", customers):
        svg = page.read_text()
        assert svg.count('class="lineage-ref"') == 1
        assert "relationships: sales.orders → crm.customers" in svg
        # the related table is a node of the graph, linked to its page
        assert re.search(r'<a href="\.\./tables/(crm\.customers|sales\.orders)\.html"><g', svg)
    index = (site / "index.html").read_text()
    assert index.count('class="lineage-ref"') == 1


def test_delta_history_with_files_and_rows(site):
    history = rows(site / "tables" / "crm.customers.html", "history")
    assert history[0].split()[:3] == ["1", "2026-11-22T01:08:08Z", "MERGE"]
    assert "00000000000000000003.parquet" in history[0] and history[0].endswith("0 1 1")
    assert history[1].startswith("0 2026-11-22T00:57:05Z WRITE")
    assert "00000000000000000001.parquet 00000000000000000002.parquet" in history[1]
    assert history[1].endswith("3 0 0")
    assert "No Delta history yet" in text_of(site / "tables" / "sales.orders.html")


def test_catalog_holds_results_schema_and_history(site):
    catalog = json.loads((site / "catalog.json").read_text())
    tables = {t["unique_id"]: t for t in catalog["tables"]}
    orders, customers = tables["sales.orders"], tables["crm.customers"]
    assert [t["status"] for t in orders["tests"]] == ["pass", "pass", "fail", "warn"]
    assert orders["tests"][2]["related"] == "crm.customers"
    assert [c["origin"] for c in customers["columns"]] == \
        ["declared", "pending", "pending", "observed", "observed", "observed"]
    history = customers["delta"]["history"]
    assert history[0]["files_applied"] == ["00000000000000000003.parquet"]
    assert "user_metadata" not in history[0]  # the engine's bookkeeping stays out


def test_run_build_and_test_refresh_an_existing_site(tmp_path):
    """The refresh the commands call after they wrote their results (no JVM needed here)."""
    from mirrorspec.compile import compile_project
    from mirrorspec.docsite.build import refresh_if_present

    project = write_project(tmp_path / "shop", test_results=False)
    plan = compile_project(str(project)).plan
    target = project / "target"
    assert refresh_if_present(plan, target) is None  # no site: none is created
    assert not (target / "docs").exists()
    assert CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project)]
                              ).exit_code == 0
    page = target / "docs" / "tables" / "sales.orders.html"
    assert "FAIL" not in text_of(page)
    # a `mirrorspec test` writes its results, then refreshes the site
    (target / "test_results.json").write_text(json.dumps({"started_at": "x", "results": [
        {"name": "unique_sales.orders_order_id", "status": "fail", "failures": 3,
         "message": "3 duplicated"}]}))
    assert refresh_if_present(plan, target) == target / "docs"
    assert "FAIL 3" in text_of(page)


def test_the_commands_that_change_the_data_refresh_the_site():
    """run, publish, build, retry and test call the project context's refresh."""
    import inspect

    from mirrorspec.commands import datatest, run
    from mirrorspec.context.project import ProjectContext

    for command in (run.run, run.publish, run.build, run.retry, datatest.test):
        assert "project.refresh_site(" in inspect.getsource(command.callback)
    assert "refresh_site(self.console, ctx.plan, ctx.target_dir)" in \
        inspect.getsource(ProjectContext.refresh_site)
