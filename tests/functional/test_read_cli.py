"""`show`, `history` and `status` answer without a JVM: each runs in a subprocess that refuses
pyspark/py4j/delta imports, on a Delta table written by delta-rs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet
import pytest

from no_jvm import run_without_jvm
from project_files import write

deltalake = pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """WAREHOUSE/sales/orders: version 0 = ids 1-3, version 1 = id 4 appended; and the
    monitoring JSON of one table."""
    root = tmp_path_factory.mktemp("reads") / "warehouse"
    path = str(root / "sales" / "orders")
    deltalake.write_deltalake(path, pa.table({"Order_ID": [3, 1, 2],
                                              "Status": ["open", "closed", "open"]}))
    deltalake.write_deltalake(path, pa.table({"Order_ID": [4], "Status": ["open"]}),
                              mode="append")
    (root / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Replicating",
        "metrics": {"processedRows": 4, "processedBytes": 10,
                    "lastSyncDateTime": "2026-01-01T00:00:00Z", "lastSyncLatencyInSeconds": 1},
        "error": None}]}))
    (root / "replicator.json").write_text(json.dumps({"status": "Running",
                                                      "lastUpdated": "2026-01-01T00:00:00Z"}))
    return root


def rows_of(output: str) -> list[list[str]]:
    """Data rows of the table the CLI printed (run with --log-format json)."""
    events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    tables = [e for e in events if isinstance(e.get("rows"), list)]
    assert tables, output
    return [list(row.values()) for row in tables[-1]["rows"]]


def title_of(output: str) -> str:
    events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return next(e["message"] for e in events if isinstance(e.get("rows"), list))


def test_show_with_where_in_spark_sql_and_key_order(warehouse, tmp_path):
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse),
                           "--where", "status = \"open\" AND `order_id` > 1", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(rows_of(done.stdout)) == [["2", "open"], ["3", "open"], ["4", "open"]]
    assert "Spark" not in done.stdout + done.stderr


def test_show_limit_version_and_timestamp(warehouse, tmp_path):
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse), "-n", "2",
                           cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(rows_of(done.stdout)) == 2
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse),
                           "--version", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(r[0] for r in rows_of(done.stdout)) == ["1", "2", "3"]
    later = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse),
                           "--timestamp", later, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(version 1)" in title_of(done.stdout) and len(rows_of(done.stdout)) == 4
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse),
                           "--timestamp", "2001-01-01", cwd=tmp_path)
    assert done.returncode == 1 and "did not exist yet" in done.stdout + done.stderr


@pytest.mark.parametrize("args, message", [
    (["--timestamp", "yesterday"], "--timestamp 'yesterday' is not a date or time"),
    (["--version", "9"], "has no version 9 (the latest is 1)"),
    (["--where", "no_such = 1"], "No field named no_such"),
])
def test_bad_arguments_are_user_errors(warehouse, tmp_path, args, message):
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse), *args,
                           cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert message in done.stdout + done.stderr


def test_timestamp_is_checked_before_the_project_is_compiled(tmp_path):
    # no project here at all: the argument error still comes first
    done = run_without_jvm("show", "sales.orders", "--timestamp", "yesterday", cwd=tmp_path)
    assert done.returncode == 1 and "not a date or time" in done.stdout + done.stderr


def test_history_newest_first(warehouse, tmp_path):
    done = run_without_jvm("history", "sales.orders", "--warehouse", str(warehouse),
                           cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = rows_of(done.stdout)
    assert [r[0] for r in rows] == ["1", "0"]
    assert rows[0][2] == "WRITE" and rows[0][4] == "1" and rows[1][4] == "3"


def test_status(warehouse, tmp_path):
    done = run_without_jvm("status", "--warehouse", str(warehouse), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ["sales", "orders", "Replicating"] == rows_of(done.stdout)[0][:3]


def test_show_through_a_compiled_project(warehouse, tmp_path):
    root = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": str(warehouse)}}}},
        "tables/orders.yml": {"tables": [{"name": "orders", "schema": "sales",
                                          "key_columns": ["order_id"],
                                          "columns": [{"name": "order_id", "type": "Int64"},
                                                      {"name": "status", "type": "String"}]}]},
    })
    done = run_without_jvm("show", "orders", "--project-dir", str(root), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # sorted by the key column, whatever its case in the Delta table
    assert [r[0] for r in rows_of(done.stdout)] == ["1", "2", "3", "4"]


def shop_project(root, warehouse):
    return write(root, {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": str(warehouse)}}}},
        "tables/orders.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["order_id"]},
            {"name": "later", "schema": "sales", "key_columns": ["id"]}]},
    })


def test_maintain_refuses_a_short_retention_before_spark_starts(warehouse, tmp_path):
    root = shop_project(tmp_path / "shop", warehouse)
    done = run_without_jvm("maintain", "orders", "--retain-hours", "1", "--project-dir",
                           str(root), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sales.orders: --retain-hours 1 is below the table's retention of 168 hours" \
        in " ".join((done.stdout + done.stderr).split())
    assert "--allow-short-retention" in done.stdout + done.stderr


def test_maintain_skips_a_table_not_mirrored_yet_without_starting_spark(warehouse, tmp_path):
    root = shop_project(tmp_path / "shop", warehouse)
    done = run_without_jvm("maintain", "--select", "sales.later", "--project-dir", str(root),
                           cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sales.later: no Delta table yet" in done.stdout + done.stderr


def test_export_needs_no_jvm(warehouse, tmp_path):
    dest = tmp_path / "orders.parquet"
    done = run_without_jvm("export", "sales.orders", "--warehouse", str(warehouse), "--to",
                           str(dest), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(pa.parquet.read_table(dest).column("Order_ID").to_pylist()) == [1, 2, 3, 4]
