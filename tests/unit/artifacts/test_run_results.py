"""target/run_results.json (pure Python)."""

from __future__ import annotations

import json

import pytest

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.artifacts.run_results import (RunResults, StepTiming, TableRunResult, read_run_results,
                                    safe_args)


def test_written_artifact_holds_every_documented_field(tmp_path):
    ok = TableRunResult("sales.orders", files_published=["00000000000000000001.parquet"],
                        files_applied=["00000000000000000001.parquet"], rows_inserted=3,
                        rows_updated=1, rows_deleted=2, execution_time=1.23456,
                        mirror_status="Replicating", delta_version=4,
                        timing=[StepTiming("mirror", "2026-01-01T00:00:00Z",
                                           "2026-01-01T00:00:01Z", 1.0004)])
    bad = TableRunResult("sales.lines")
    bad.fail("00000000000000000002.parquet, row 3: __rowMarker__ 3 is not one of 0, 1, 2, 4",
             "BadFile")
    bad.fail("a later error", "Other")  # the first error is the cause and is kept
    results = RunResults("run", safe_args(select=("sales.*",), vars={"password": "hunter2"},
                                          threads=2), [ok, bad], elapsed_time=2.5)
    path = results.write(tmp_path / "target")
    doc = json.loads(path.read_text())
    assert path.name == "run_results.json"
    assert doc["command"] == "run"
    assert doc["elapsed_time"] == 2.5
    assert doc["counts"] == {"success": 1, "error": 1, "waiting": 0, "not_started": 0,
                             "skipped": 0}
    assert doc["metadata"]["invocation_id"] and doc["metadata"]["mirrorspec_version"]
    first, second = doc["results"]
    assert first["unique_id"] == "sales.orders" and first["status"] == "success"
    assert (first["rows_inserted"], first["rows_updated"], first["rows_deleted"]) == (3, 1, 2)
    assert first["files_applied"] == ["00000000000000000001.parquet"]
    assert first["execution_time"] == 1.235
    assert first["timing"][0]["name"] == "mirror" and first["timing"][0]["seconds"] == 1.0
    assert second["status"] == "error" and second["error_code"] == "BadFile"
    assert "__rowMarker__ 3" in second["error"]
    assert results.failed
    # no secrets: vars values never reach the artifact
    assert "hunter2" not in path.read_text()
    assert doc["args"]["vars"] == ["password"] and doc["args"]["select"] == ["sales.*"]
    assert read_run_results(tmp_path / "target")["results"][1]["unique_id"] == "sales.lines"


def test_waiting_is_not_a_failure():
    waiting = TableRunResult("dbo.t", status="waiting", awaiting="00000000000000000003.parquet")
    assert not RunResults("run", {}, [waiting]).failed


def test_read_missing_or_broken_results(tmp_path):
    with pytest.raises(MirrorspecError, match="no run results"):
        read_run_results(tmp_path)
    (tmp_path / "run_results.json").write_text("{oops")
    with pytest.raises(MirrorspecError, match="invalid JSON"):
        read_run_results(tmp_path)
