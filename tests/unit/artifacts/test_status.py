"""The Fabric-shaped monitoring JSON (mirrorspec.artifacts.status)."""

from __future__ import annotations

import json

from mirrorspec.artifacts.status import read_status, write_status


def outcome(name, status, schema=None, error=None, rows=0):
    return {"schema": schema, "name": name, "status": status, "error": error,
            "processed_rows": rows, "processed_bytes": 10 * rows, "seconds": 1.5}


def test_write_status_shapes(tmp_path):
    docs = write_status(str(tmp_path), [outcome("a", "Replicating", rows=3),
                                        outcome("b", "Failed", "sales",
                                                {"errorCode": "BadFile", "message": "m",
                                                 "file": "f", "row": 2})])
    replicator = json.loads((tmp_path / "replicator.json").read_text())
    assert replicator["status"] == "Failed"
    assert replicator["tables"] == {"total": 2, "failed": 1}
    assert replicator["lastUpdated"].endswith("Z")
    tables = json.loads((tmp_path / "tables.json").read_text())["tables"]
    assert tables == docs["tables"]["tables"]
    a = next(t for t in tables if t["sourceTableName"] == "a")
    assert a["sourceSchemaName"] == "dbo" and a["error"] is None
    assert a["metrics"]["processedRows"] == 3 and a["metrics"]["processedBytes"] == 30
    assert set(a["metrics"]) == {"processedRows", "processedBytes", "lastSyncDateTime",
                                 "lastSyncLatencyInSeconds"}
    b = next(t for t in tables if t["sourceTableName"] == "b")
    assert b["sourceSchemaName"] == "sales"
    assert b["error"] == {"errorCode": "BadFile", "message": "m"}


def test_status_merges_with_the_previous_pass(tmp_path):
    write_status(str(tmp_path), [outcome("a", "Failed", error={"errorCode": "X", "message": "m"}),
                                 outcome("b", "Replicating")])
    write_status(str(tmp_path), [outcome("a", "Replicating")])
    status = read_status(str(tmp_path))
    assert status["replicator"]["status"] == "Running"
    assert {t["sourceTableName"]: t["status"] for t in status["tables"]} == {
        "a": "Replicating", "b": "Replicating"}


def test_read_status_of_an_empty_warehouse(tmp_path):
    assert read_status(str(tmp_path)) == {"replicator": {}, "tables": []}


def test_waiting_tables_name_the_awaited_file(tmp_path):
    gap = dict(outcome("g", "Waiting"), awaiting="00000000000000000003.parquet")
    write_status(str(tmp_path), [gap])
    entry = read_status(str(tmp_path))["tables"][0]
    assert entry["status"] == "Waiting"
    assert entry["awaitingFile"] == "00000000000000000003.parquet"


def test_replicator_is_running_only_while_its_writer_process_lives(tmp_path):
    import subprocess
    import sys

    write_status(str(tmp_path), [outcome("a", "Replicating")])
    assert read_status(str(tmp_path))["replicator"]["status"] == "Running"  # we are alive
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    doc = json.loads((tmp_path / "replicator.json").read_text())
    doc["process"]["pid"] = int(ended.stdout)
    (tmp_path / "replicator.json").write_text(json.dumps(doc))
    assert read_status(str(tmp_path))["replicator"]["status"] == "Stopped"
    # an older file without the writer: nothing vouches for a running replicator
    del doc["process"]
    (tmp_path / "replicator.json").write_text(json.dumps(doc))
    assert read_status(str(tmp_path))["replicator"]["status"] == "Stopped"
    # a writer on another host can't be checked from here: its word stands
    doc["process"] = {"pid": int(ended.stdout), "host": "some-other-host.invalid"}
    (tmp_path / "replicator.json").write_text(json.dumps(doc))
    assert read_status(str(tmp_path))["replicator"]["status"] == "Running"
    # Failed stays Failed
    doc["status"] = "Failed"
    (tmp_path / "replicator.json").write_text(json.dumps(doc))
    assert read_status(str(tmp_path))["replicator"]["status"] == "Failed"
