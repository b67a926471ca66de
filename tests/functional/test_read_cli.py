"""`show`, `history` and `status` answer without a JVM: each runs in a subprocess that refuses
pyspark/py4j/delta imports, on a Delta table written by delta-rs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet
import pytest

from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write

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
    assert sorted(rows_of(done.stdout)) == [[2, "open"], [3, "open"], [4, "open"]]
    assert "Spark" not in done.stdout + done.stderr


def test_show_limit_version_and_timestamp(warehouse, tmp_path):
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse), "-n", "2",
                           cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(rows_of(done.stdout)) == 2
    done = run_without_jvm("show", "sales.orders", "--warehouse", str(warehouse),
                           "--version", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(r[0] for r in rows_of(done.stdout)) == [1, 2, 3]
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
    assert [r[0] for r in rows] == [1, 0]
    assert rows[0][2] == "WRITE" and rows[0][4] == 1 and rows[1][4] == 3


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
    assert [r[0] for r in rows_of(done.stdout)] == [1, 2, 3, 4]


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


@pytest.fixture(scope="module")
def nulls(tmp_path_factory):
    """WAREHOUSE/dbo/t: a NULL and an empty string, a boolean, a decimal and a timestamp."""
    from decimal import Decimal

    root = tmp_path_factory.mktemp("nulls") / "warehouse"
    deltalake.write_deltalake(str(root / "dbo" / "t"), pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "name": pa.array([None, ""], pa.string()),
        "ok": pa.array([True, None], pa.bool_()),
        "amount": pa.array([Decimal("1.50"), Decimal("12345678901234567.89")],
                           pa.decimal128(20, 2)),
        "at": pa.array([datetime(2026, 1, 2, 3, 4, 5), None], pa.timestamp("us")),
    }))
    return root


def test_show_formats_keep_null_apart_from_the_empty_string(nulls, tmp_path):
    text = run_without_jvm("show", "dbo.t", "--warehouse", str(nulls), cwd=tmp_path,
                           log_format="text")
    assert text.returncode == 0, text.stderr
    first = next(line for line in text.stdout.splitlines() if line.startswith("1 "))
    assert first.split()[:3] == ["1", "NULL", "true"]
    done = run_without_jvm("show", "dbo.t", "--warehouse", str(nulls), "--format", "json",
                           cwd=tmp_path, log_format="text")
    doc = json.loads(done.stdout)
    assert doc["table"] == "dbo.t" and doc["version"] == 0
    assert doc["rows"] == [
        {"id": 1, "name": None, "ok": True, "amount": 1.5, "at": "2026-01-02T03:04:05"},
        # a decimal no float holds exactly stays exact, as text
        {"id": 2, "name": "", "ok": None, "amount": "12345678901234567.89", "at": None}]
    done = run_without_jvm("show", "dbo.t", "--warehouse", str(nulls), "--format", "csv",
                           cwd=tmp_path, log_format="text")
    assert done.stdout.splitlines() == ["id,name,ok,amount,at", "1,,true,1.50,2026-01-02 03:04:05",
                                        '2,"",,12345678901234567.89,']
    # the JSON log's table event is typed too
    events = run_without_jvm("show", "dbo.t", "--warehouse", str(nulls), cwd=tmp_path)
    assert rows_of(events.stdout)[1][:3] == [2, "", None]


def test_history_json_lists_every_file_and_typed_counts(warehouse, tmp_path):
    done = run_without_jvm("history", "sales.orders", "--warehouse", str(warehouse),
                           "--format", "json", cwd=tmp_path, log_format="text")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert [r["version"] for r in rows] == [1, 0]
    assert rows[1]["inserted"] == 3 and rows[1]["landing files"] == []
    assert rows[0]["timestamp"].endswith("Z")


def test_json_log_events_carry_time_level_and_invocation_id(warehouse, tmp_path):
    done = run_without_jvm("show", "nosuch.table", "--warehouse", str(warehouse), cwd=tmp_path)
    assert done.returncode == 1
    event = json.loads(done.stdout.splitlines()[-1])
    assert event["level"] == "error" and event["event"] == "error"
    assert datetime.fromisoformat(event["time"].replace("Z", "+00:00")).tzinfo is not None
    assert len(event["invocation_id"]) == 36


def test_usage_errors_are_json_under_log_format_json(tmp_path):
    done = run_without_jvm("show", "--limit", "lots", "t", cwd=tmp_path)
    assert done.returncode == 2
    event = json.loads(done.stdout)
    assert event["error_type"] == "UsageError" and "'--limit'" in event["message"]
    done = run_without_jvm("--log-format", "json", "nosuchcommand", cwd=tmp_path,
                           log_format="text")
    assert json.loads(done.stdout)["message"].startswith("No such command 'nosuchcommand'")


def test_no_color_and_the_no_color_flag_drop_ansi(tmp_path):
    import os
    import subprocess
    import sys

    from tests.support.no_jvm import REPO

    script = ("import click, sys; click.utils.should_strip_ansi = lambda *a, **k: False; "
              "from mirrorspec.cli import main; sys.argv = ['mirrorspec'] + sys.argv[1:]; main()")
    for env_extra, flags in (({"NO_COLOR": "1"}, []), ({}, ["--no-color"])):
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env.update(PYTHONPATH=str(REPO), **env_extra)
        done = subprocess.run([sys.executable, "-c", script, *flags, "show", "x", "--warehouse",
                               str(tmp_path)], capture_output=True, text=True, env=env)
        assert done.returncode == 1 and "Error: " in done.stderr
        assert "\x1b[" not in done.stderr + done.stdout
    done = subprocess.run([sys.executable, "-c", script, "show", "x", "--warehouse",
                           str(tmp_path)], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "NO_COLOR"}
                          | {"PYTHONPATH": str(REPO)})
    assert "\x1b[" in done.stderr  # the check above can fail


def _status_warehouse(root, status, last):
    root.mkdir(parents=True, exist_ok=True)
    (root / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "sales", "sourceTableName": "orders", "status": status,
        "metrics": {"lastSyncDateTime": last}, "error": None}]}))
    (root / "replicator.json").write_text(json.dumps({"status": "Running", "lastUpdated": last}))
    return root


def test_status_exit_codes_failed_and_stale(tmp_path):
    now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    fresh = _status_warehouse(tmp_path / "fresh", "Replicating", now)
    assert run_without_jvm("status", "--warehouse", str(fresh), "--stale-after", "1h",
                           cwd=tmp_path).returncode == 0
    old = _status_warehouse(tmp_path / "old", "Replicating", "2025-12-01T00:00:00Z")
    assert run_without_jvm("status", "--warehouse", str(old), cwd=tmp_path).returncode == 0
    done = run_without_jvm("status", "--warehouse", str(old), "--stale-after", "15m",
                           "--json", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "sales.orders (last sync 2025-12-01T00:00:00Z)" in done.stdout
    failed = _status_warehouse(tmp_path / "failed", "Failed", now)
    done = run_without_jvm("status", "--warehouse", str(failed), cwd=tmp_path)
    assert done.returncode == 1 and "1 table(s) Failed: sales.orders" in done.stdout
    done = run_without_jvm("status", "--warehouse", str(failed), "--stale-after", "soon",
                           cwd=tmp_path)
    assert done.returncode == 1 and "--stale-after 'soon' is not a duration" in done.stdout


def test_export_needs_no_jvm(warehouse, tmp_path):
    dest = tmp_path / "orders.parquet"
    done = run_without_jvm("export", "sales.orders", "--warehouse", str(warehouse), "--to",
                           str(dest), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(pa.parquet.read_table(dest).column("Order_ID").to_pylist()) == [1, 2, 3, 4]
