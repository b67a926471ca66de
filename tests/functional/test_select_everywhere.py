"""--select on compile, status, show, history and docs generate: each takes the
tables chosen, as `run` does; show and history then print one table after the other."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirrorspec.cli import cli

REPO = Path(__file__).resolve().parents[2]
deltalake = pytest.importorskip("deltalake")


@pytest.fixture
def project(tmp_path):
    """projects/parquet_orders (4 tables in sales and inventory), its sales tables mirrored
    (written by delta-rs) with a monitoring JSON."""
    import pyarrow as pa

    folder = tmp_path / "project"
    shutil.copytree(REPO / "projects" / "parquet_orders", folder)
    warehouse = folder / "warehouse"
    entries = []
    for schema, table in (("sales", "customers"), ("sales", "orders"),
                          ("inventory", "products")):
        deltalake.write_deltalake(str(warehouse / schema / table),
                                  pa.table({"id": [1, 2], "note": [f"{table}-a", f"{table}-b"]}))
        entries.append({"sourceSchemaName": schema, "sourceTableName": table,
                        "status": "Replicating", "metrics": {"processedRows": 2}})
    (warehouse / "tables.json").write_text(json.dumps({"tables": entries}))
    (warehouse / "replicator.json").write_text(json.dumps({"status": "Stopped"}))
    return folder


def _cli(project, *args):
    result = CliRunner().invoke(cli, ["--log-format", "json", *args, "--project-dir",
                                      str(project)])
    events = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    return result, events


def test_compile_lists_only_the_selected_tables_and_keeps_the_whole_plan(project):
    result, events = _cli(project, "compile", "--select", "sales.*")
    assert result.exit_code == 0, result.output
    listed = next(e for e in events if e["event"] == "table")["rows"]
    assert sorted(r["table"] for r in listed) == ["sales.customers", "sales.orders"]
    done = events[-1]
    assert done["selected"] == ["sales.customers", "sales.orders"] and done["tables"] == 4
    plan = json.loads((project / "target" / "plan.json").read_text())
    assert len(plan["tables"]) == 4


def test_status_show_and_history_take_a_selection(project):
    result, events = _cli(project, "status", "--select", "sales.*", "--exclude", "orders")
    assert result.exit_code == 0, result.output
    rows = next(e for e in events if e["event"] == "status")["rows"]
    assert [(r["schema"], r["table"]) for r in rows] == [("sales", "customers")]

    result, events = _cli(project, "show", "--select", "sales.*")
    assert result.exit_code == 0, result.output
    shown = [e["message"].split(" ")[0] for e in events if e["event"] == "rows"]
    assert shown == ["sales.customers", "sales.orders"]

    result, events = _cli(project, "history", "-s", "inventory.products")
    assert result.exit_code == 0, result.output
    assert [e["message"] for e in events if e["event"] == "history"] == [
        "history of inventory.products"]


def test_show_without_table_or_selection_says_what_to_give(project):
    result, _events = _cli(project, "show")
    assert result.exit_code == 1 and "name a TABLE or give --select" in result.output


def test_docs_generate_writes_only_the_selected_pages(project):
    result, events = _cli(project, "docs", "generate", "--select", "inventory.*")
    assert result.exit_code == 0, result.output
    assert events[-1]["tables"] == 2
    site = (project / "target" / "docs" / "index.html").read_text()
    assert "inventory.products" in site and "sales.orders" not in site
