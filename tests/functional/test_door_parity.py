"""The two front doors over one layer: for the same project and the same inputs, the command
line (`mirrorspec …`) and the Python API (`mirrorspec.api.Project`) compile the same plan, hand
the runner the same threads and selection, and read the same rows, status and change feed.
JVM-free: the runner is replaced by a recorder, the tables are written with delta-rs."""

from __future__ import annotations

import json
import sys
import types

import pyarrow as pa
import pytest
from click.testing import CliRunner

from mirrorspec.api import Project
from mirrorspec.artifacts.run_results import RunResults, TableRunResult
from mirrorspec.cli import cli
from mirrorspec.context.threads import default_table_threads
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")


def shop(root, output: dict | None = None):
    return write(root, {
        "mirrorspec_project.yml": {"name": "shop", "profile": "shop"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse", **(output or {})}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["id"], "tags": ["nightly"],
             "columns": [{"name": "id", "type": "Int64"}, {"name": "note", "type": "String"}]},
            {"name": "customers", "schema": "sales", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int64"}]}]},
    })


def cli_run(*args: str) -> object:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture()
def recorder(monkeypatch):
    """The runner (mirrorspec.spark.run) replaced: each call's keyword arguments recorded, an
    empty RunResults returned, no JVM."""
    calls: list[dict] = []

    def run_plan(plan, **kwargs):
        calls.append({"tables": [t.unique_id for t in plan.tables], **kwargs})
        return RunResults(command=kwargs["command"], args=kwargs["args"])

    fake = types.ModuleType("mirrorspec.spark.run")
    fake.run_plan = run_plan
    fake.SUMMARY_COLUMNS, fake.summary_rows = (), lambda results: []
    monkeypatch.setitem(sys.modules, "mirrorspec.spark.run", fake)
    return calls


def _same_call(cli_call: dict, api_call: dict) -> None:
    """What the runner got from each door: equal but for the door's own invocation args."""
    def runner_view(call):
        args = {k: v for k, v in call["args"].items() if k not in ("api", "project_dir")}
        return {**{k: v for k, v in call.items() if k not in ("args", "console", "warm_server",
                                                              "target_dir")}, "args": args}
    assert runner_view(cli_call) == runner_view(api_call)
    assert cli_call["target_dir"] == api_call["target_dir"]


@pytest.mark.parametrize("profile, flag, expected", [
    ({"threads": 3}, None, 3),     # the profile's `threads`
    ({"threads": 3}, 5, 5),        # the argument over it
    ({}, None, None),              # neither: twice the cores, 2 to 8
])
def test_run_gets_the_same_threads_from_both_doors(tmp_path, monkeypatch, recorder, profile,
                                                   flag, expected):
    root = shop(tmp_path / "shop", profile)
    monkeypatch.chdir(root)
    cli_run("run", "--select", "tag:nightly", *(["--threads", str(flag)] if flag else []))
    Project(root).run(select="tag:nightly", **({"threads": flag} if flag else {}))
    cli_call, api_call = recorder
    assert cli_call["threads"] == api_call["threads"] == (expected or default_table_threads())
    assert api_call["args"]["threads"] == cli_call["threads"]  # run_results.json says so too
    _same_call(cli_call, api_call)


def test_publish_and_retry_take_the_same_path(tmp_path, monkeypatch, recorder):
    root = shop(tmp_path / "shop", {"threads": 2})
    monkeypatch.chdir(root)
    cli_run("publish", "--exclude", "sales.customers", "--fail-fast")
    Project(root).run(exclude="sales.customers", fail_fast=True, publish_only=True)
    _same_call(*recorder)
    assert recorder[0]["publish_only"] and recorder[0]["command"] == "publish"
    # the last run left a table to retry: both doors run it again with that run's options
    last = RunResults(command="publish", args={"threads": 2, "fail_fast": True},
                      results=[TableRunResult("sales.orders")])
    last.results[0].fail("a bad file")
    last.write(root / "target")
    recorder.clear()
    retried = CliRunner().invoke(cli, ["retry"], catch_exceptions=False)
    assert retried.exit_code == 0, retried.output
    Project(root).retry()
    assert len(recorder) == 2, retried.output
    _same_call(*recorder)
    assert recorder[0]["select"] == ("id:sales.orders",) and recorder[0]["command"] == "publish"


def test_compile_writes_the_same_plan_from_both_doors(tmp_path, monkeypatch):
    root = shop(tmp_path / "shop", {"threads": 3})
    monkeypatch.chdir(root)
    cli_run("compile", "--vars", "{env: prod}")
    by_cli = {p.relative_to(root / "target"): p.read_bytes()
              for p in (root / "target").rglob("*") if p.is_file()}
    for path in (root / "target").rglob("*.json"):
        path.unlink()
    result = Project(root, vars={"env": "prod"}).compile()
    by_api = {p.relative_to(root / "target"): p.read_bytes()
              for p in (root / "target").rglob("*") if p.is_file()}
    assert by_cli == by_api and len(by_cli) > 1
    assert json.loads(by_cli[result.plan_path.relative_to(root / "target")])["threads"] == 3


def test_reading_gives_the_same_rows_status_and_changes(tmp_path, monkeypatch):
    root = shop(tmp_path / "shop")
    table = root / "warehouse" / "sales" / "orders"
    deltalake.write_deltalake(str(table), pa.table({
        "id": pa.array([2, 1], pa.int64()), "note": pa.array(["b", None])}),
        configuration={"delta.enableChangeDataFeed": "true"})
    deltalake.write_deltalake(str(table), pa.table({
        "id": pa.array([3], pa.int64()), "note": pa.array([""])}), mode="append")
    (root / "warehouse" / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Running",
        "metrics": {"lastSyncDateTime": "2026-01-01T00:00:00Z"}}]}))
    monkeypatch.chdir(root)
    project = Project(root)

    shown = json.loads(cli_run("show", "sales.orders", "--format", "json", "-n", "2").output)
    assert shown["rows"] == [{"id": 1, "note": None}, {"id": 2, "note": "b"}]
    assert project.show("sales.orders", limit=2).to_pylist() == shown["rows"]

    feed = json.loads(cli_run("changes", "sales.orders", "--format", "json",
                              "--from-version", "1").output)
    rows = project.changes("sales.orders", from_version=1, limit=20).to_pylist()
    untimed = [{c: v for c, v in r.items() if c != "_commit_timestamp"} for r in rows]
    assert untimed == [{c: v for c, v in r.items() if c != "_commit_timestamp"}
                       for r in feed["rows"]]
    assert [r["id"] for r in rows] == [3] and rows[0]["_change_type"] == "insert"

    status = json.loads(cli_run("status", "--json").output)
    assert project.status().to_dict()["tables"] == status["tables"]
