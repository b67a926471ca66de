"""The run workflow through the real command line (`.venv/bin/mirrorspec` in a subprocess).

Only a couple of these start a JVM (each costs a Spark start-up); the error cases stop before it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.project_files import write, write_changes
from tests.support.mirror_cli import SHORT_JVM_CONF


MIRRORSPEC = Path(sys.executable).with_name("mirrorspec")


def write_project(root: Path) -> Path:
    files = {
        "mirrorspec_project.yml": {"name": "clitest", "version": "1"},
        "profiles.yml": {"clitest": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing_zone", "warehouse": "warehouse",
            "spark": {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": 1,
                                                     "spark.driver.memory": "1g",
                                                     **SHORT_JVM_CONF}}}}}},
        "tables/shop.yml": {"tables": [
            {"name": "good", "schema": "shop", "key_columns": ["id"], "tags": ["fine"],
             "columns": [{"name": "id", "type": "Int32"}, {"name": "v", "type": "String"}],
             "tests": ["unique", {"not_null": {"columns": ["v"], "severity": "warn"}}]},
            {"name": "bad", "schema": "shop", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int32"}, {"name": "v", "type": "String"}]},
        ]},
    }
    return write(root, files)


def land(root: Path, table: str, sequence: int, rows) -> None:
    write_changes(root / "landing_zone" / "shop.schema" / table, sequence, rows)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200", MIRRORSPEC_LOG_DIR=str(cwd))
    return subprocess.run([str(MIRRORSPEC), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture()
def project(tmp_path):
    root = write_project(tmp_path / "clitest")
    land(root, "good", 1, [(1, "a", 0), (2, "b", 0)])
    land(root, "good", 2, [(2, "B", 1), (1, None, 2), (3, None, 0)])
    land(root, "bad", 1, [(1, "x", 3)])  # marker 3: the table fails at its first file
    return root


@pytest.mark.spark  # starts a JVM (through the CLI)
def test_run_fails_one_table_runs_the_other_then_status_and_json_logs(project):
    done = cli("run", "--project-dir", ".", "--threads", "2", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "OK shop.good" in out and "ERROR shop.bad" in out
    assert "00000000000000000001.parquet" in out  # the bad file is named
    assert "Done. 1 OK, 1 ERROR of 2 table(s)" in out
    assert "1 table(s) failed: shop.bad" in done.stderr
    assert "Traceback" not in done.stderr
    doc = json.loads((project / "target" / "run_results.json").read_text())
    results = {r["unique_id"]: r for r in doc["results"]}
    assert results["shop.good"]["status"] == "success"
    # both files fold into one append to the new Delta table: (2, B) and (3, NULL)
    assert results["shop.good"]["files_applied"] == ["00000000000000000001.parquet",
                                                     "00000000000000000002.parquet"]
    assert (results["shop.good"]["rows_inserted"], results["shop.good"]["rows_updated"],
            results["shop.good"]["rows_deleted"]) == (2, 0, 0)
    assert results["shop.bad"]["status"] == "error"

    status = cli("status", "--project-dir", ".", "--json", cwd=project)
    # a Failed table makes `status` exit 1 (a CI gate and a probe: docs/orchestration.md)
    assert status.returncode == 1, status.stderr
    assert "1 table(s) Failed: shop.bad" in status.stderr
    tables = {t["sourceTableName"]: t for t in json.loads(status.stdout)["tables"]}
    assert tables["bad"]["status"] == "Failed" and tables["good"]["status"] == "Replicating"

    # build on the good table only, with JSON logs: run + tests, one JSON object per line
    built = cli("--log-format", "json", "build", "--project-dir", ".", "--select", "tag:fine",
                cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    events = [json.loads(line) for line in built.stdout.splitlines() if line.startswith("{")]
    finished = [e for e in events if e["event"] == "table_finished"]
    assert [e["table"] for e in finished] == ["shop.good"] and finished[0]["status"] == "success"
    tests = {e["test"]: e["status"] for e in events if e["event"] == "test_result"}
    assert tests == {"unique_shop.good_id": "pass", "not_null_shop.good_v": "warn"}
    test_doc = json.loads((project / "target" / "test_results.json").read_text())
    assert test_doc["counts"]["warn"] == 1


def test_user_errors_exit_1_before_spark_starts(project):
    done = cli("run", "--project-dir", ".", "--select", "colour:red", cwd=project)
    assert done.returncode == 1
    assert "unknown selector method 'colour'" in done.stderr and "Traceback" not in done.stderr
    done = cli("show", "nosuch", "--project-dir", ".", cwd=project)
    assert done.returncode == 1 and "no table 'nosuch'" in done.stderr
    done = cli("status", "--project-dir", ".", cwd=project)
    assert done.returncode == 1 and "no monitoring JSON" in done.stderr
    done = cli("run", "--project-dir", ".", "--select", "nothing_matches", cwd=project)
    assert done.returncode == 0
    assert "matched no table" in done.stdout and "Done. 0 OK, 0 ERROR of 0" in done.stdout


@pytest.mark.spark  # starts a JVM (through the CLI)
@pytest.mark.extra  # a slow end-to-end extra (50 s): `make test-extras`
def test_fail_fast_then_retry_after_the_bad_file_is_fixed(project):
    done = cli("build", "--fail-fast", "--threads", "1", "--log-format", "json", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    doc = json.loads((project / "target" / "run_results.json").read_text())
    statuses = {r["unique_id"]: (r["status"], r["skip_reason"]) for r in doc["results"]}
    assert statuses == {"shop.bad": ("error", None),
                        "shop.good": ("skipped", "--fail-fast: an earlier table failed")}
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {e["invocation_id"] for e in events} == {doc["metadata"]["invocation_id"]}
    land(project, "bad", 1, [(1, "x", 0)])  # the bad file re-written
    done = cli("retry", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "retrying `build` for 2 table(s): shop.bad, shop.good" in done.stdout
    doc = json.loads((project / "target" / "run_results.json").read_text())
    assert doc["command"] == "build" and doc["args"]["fail_fast"] is True
    assert doc["counts"]["success"] == 2
    tests = json.loads((project / "target" / "test_results.json").read_text())
    assert [(t["table"], t["status"]) for t in tests["results"]] == [  # shop.good's two tests
        ("shop.good", "pass"), ("shop.good", "warn")]
