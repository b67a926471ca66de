"""mirrorspec.api end to end on one small project: run (a failing table, --fail-fast, the
callback), retry, test, status, show as a pyarrow.Table, mirror_landing_zone; the result objects
hold what run_results.json holds, and nothing exits the process."""

from __future__ import annotations

import json
from datetime import timedelta

import jsonschema
import pyarrow as pa
import pytest
from tests.support.project_files import write, write_changes

from mirrorspec.api import FailedRun, Project, artifact_schema, mirror_landing_zone
from mirrorspec.base.errors import LandingZoneError

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`


def shop(root):
    write(root, {
        "mirrorspec_project.yml": {"name": "apitest", "version": "1"},
        "profiles.yml": {"apitest": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing_zone", "warehouse": "warehouse",
            "spark": {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": 1}}}}}},
        "tables/shop.yml": {"tables": [
            {"name": name, "schema": "shop", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int32"}, {"name": "v", "type": "String"}],
             "tests": ["unique"]} for name in ("bad", "good")]},
    })
    write_changes(root / "landing_zone" / "shop.schema" / "good", 1,
                  [(1, "a", 0), (2, None, 0), (3, "", 0)])
    write_changes(root / "landing_zone" / "shop.schema" / "bad", 1, [(1, "x", 3)])  # bad marker
    return root


def test_project_api_end_to_end(spark, tmp_path):
    root = shop(tmp_path / "shop")
    events = []
    project = Project(root, on_event=events.append)
    compiled = project.compile()
    assert compiled.plan_path.is_file()

    # fail_fast with one thread: shop.bad fails first, shop.good is skipped, nothing raises
    results = project.run(fail_fast=True, threads=1)
    by_id = {r.unique_id: r for r in results.results}
    assert by_id["shop.bad"].status == "error" and "00000000000000000001" in by_id["shop.bad"].error
    assert by_id["shop.good"].status == "skipped"
    assert by_id["shop.good"].skip_reason.startswith("--fail-fast")
    on_disk = json.loads((root / "target" / "run_results.json").read_text())
    assert on_disk["results"] == results.to_dict()["results"]
    assert on_disk["metadata"]["invocation_id"] == results.invocation_id
    assert {e["invocation_id"] for e in events} == {results.invocation_id}
    assert any(e["level"] == "error" and "shop.bad" in e["message"] for e in events)
    with pytest.raises(FailedRun, match="shop.bad"):
        results.raise_if_failed()

    # the bad file re-written, retry re-runs what failed or was skipped, as the run did
    write_changes(root / "landing_zone" / "shop.schema" / "bad", 1, [(1, "x", 0)])
    retried = project.retry()
    assert {r.unique_id: r.status for r in retried.results} == {"shop.bad": "success",
                                                                "shop.good": "success"}
    assert retried.args["fail_fast"] is True and retried.args["select"] == [
        "id:shop.bad", "id:shop.good"]

    tests = project.test(select="result:success", exclude=["bad"])
    assert [(t.table, t.status) for t in tests.results] == [("shop.good", "pass")]

    status = project.status()
    assert not status.failed and {t["sourceTableName"] for t in status.tables} == {"bad", "good"}
    with pytest.raises(FailedRun, match="stale"):
        project.status(stale_after=timedelta(microseconds=1)).raise_if_unhealthy()

    # what this real run wrote holds to the published schemas
    for name, path in (("plan", root / "target" / "plan.json"),
                       ("run_results", root / "target" / "run_results.json"),
                       ("test_results", root / "target" / "test_results.json"),
                       ("tables", root / "warehouse" / "tables.json"),
                       ("replicator", root / "warehouse" / "replicator.json")):
        validator = jsonschema.Draft202012Validator(artifact_schema(name))
        assert not list(validator.iter_errors(json.loads(path.read_text()))), name

    table = project.show("good", limit=None)
    assert isinstance(table, pa.Table)
    assert table.to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": None}, {"id": 3, "v": ""}]
    assert project.show("shop.good", where="id > 1", limit=1).to_pylist() == [{"id": 2, "v": None}]


def test_mirror_landing_zone_returns_run_results(spark, tmp_path):
    zone = tmp_path / "landing"
    write_changes(zone / "s.schema" / "t", 1, [(1, "a", 0), (2, "b", 0)])
    events = []
    results = mirror_landing_zone(zone, tmp_path / "wh", threads=1, on_event=events.append)
    assert results.command == "mirror"
    [table] = results.results
    assert (table.unique_id, table.status, table.rows_inserted) == ("s.t", "success", 2)
    assert table.files_applied == ["00000000000000000001.parquet"]
    # the progress events reach the callback, typed
    finished = [e for e in events if e["event"] == "table_finished"]
    assert [e["event"] for e in events if e["event"].startswith("table_")] == [
        "table_started", "table_finished"]
    assert (finished[0]["table"], finished[0]["files_applied"], finished[0]["done"]) == (
        "s.t", 1, 1)
    assert (tmp_path / "wh" / "tables.json").is_file()
    with pytest.raises(LandingZoneError, match="does not exist"):
        mirror_landing_zone(tmp_path / "nowhere", tmp_path / "wh")
