"""run_plan end to end on hand-built plans: landing_zone tables mirrored into Delta, failures
isolated per table, _metadata.json / _partnerEvents.json deployment, selection, full refresh,
run_results.json and the monitoring JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mirrorspec.openmirroring import mirroring
from mirrorspec.artifacts.plan import PLAN_VERSION, Plan, SourceSpec, SparkSpec, TablePlan, TableStep
from mirrorspec.spark.run import run_plan


def landing_table(root: Path, wh: Path, schema: str | None, name: str, keys=("id",), **extra):
    ws = schema or "dbo"
    folder = root / mirroring.table_folder(name, schema)
    return TablePlan(unique_id=f"{ws}.{name}", name=name, schema=schema, warehouse_schema=ws,
                     landing_path=str(folder), delta_path=str(wh / ws / name),
                     metadata=mirroring.render_metadata(key_columns=list(keys)),
                     key_columns=list(keys), source=SourceSpec(type="landing_zone"),
                     steps=[TableStep("MirrorTable")], **extra)


def make_plan(root: Path, wh: Path, tables, partner_events=None) -> Plan:
    return Plan(plan_version=PLAN_VERSION, project_name="t", project_version="1", profile="t",
                target="dev", landing_zone=str(root), warehouse=str(wh),
                state_path=str(wh / "_mirrorspec"), spark=SparkSpec(master="local[2]"),
                partner_events=partner_events, tables=tables)


def write_file(table: TablePlan, sequence: int, rows: list[tuple], with_marker=True) -> Path:
    """A parquet landing file of (id, v[, __rowMarker__]) rows."""
    folder = Path(table.landing_path)
    folder.mkdir(parents=True, exist_ok=True)
    columns = {"id": pa.array([r[0] for r in rows], pa.int32()),
               "v": pa.array([r[1] for r in rows], pa.string())}
    if with_marker:
        columns[mirroring.ROW_MARKER_COLUMN] = pa.array([r[2] for r in rows], pa.int32())
    path = folder / mirroring.sequence_file_name(sequence)
    pq.write_table(pa.table(columns), path)
    return path


def delta_rows(spark, table: TablePlan) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(table.delta_path)
                  .select("id", "v").collect())


@pytest.fixture()
def zone(tmp_path):
    root, wh = tmp_path / "landing", tmp_path / "warehouse"
    orders = landing_table(root, wh, "sales", "orders")
    bad = landing_table(root, wh, "sales", "bad")
    plain = landing_table(root, wh, None, "plain", keys=())
    write_file(orders, 1, [(1, "a"), (2, "b"), (3, "c")], with_marker=False)
    write_file(orders, 2, [(2, "B", 1), (3, None, 2), (4, "d", 4), (1, "A", 4)])
    write_file(bad, 1, [(1, "x", 0)])
    write_file(bad, 2, [(1, "y", 3)])  # marker 3: a bad file
    write_file(plain, 1, [(7, "p", 0), (7, "p", 0)])
    plan = make_plan(root, wh, [plain, bad, orders],
                     partner_events=mirroring.render_partner_events("mirrorspec", "SQL"))
    return plan, tmp_path / "target"


def by_id(results):
    return {r.unique_id: r for r in results.results}


def test_run_mirrors_every_table_and_isolates_the_failing_one(spark, zone):
    plan, target = zone
    results = run_plan(plan, spark=spark, threads=2, target_dir=target,
                       args={"select": [], "threads": 2})
    got = by_id(results)
    orders, bad, plain = plan.table("sales.orders"), plan.table("sales.bad"), plan.table("dbo.plain")
    assert delta_rows(spark, orders) == [(1, "A"), (2, "B"), (4, "d")]
    assert delta_rows(spark, plain) == [(7, "p"), (7, "p")]
    assert got["sales.orders"].status == "success"
    assert got["sales.orders"].files_applied == ["00000000000000000001.parquet",
                                                 "00000000000000000002.parquet"]
    # the bad table applied its good first file and stopped at the second, naming it
    assert got["sales.bad"].status == "error"
    assert "00000000000000000002.parquet" in got["sales.bad"].error
    assert delta_rows(spark, bad) == [(1, "x")]
    assert results.failed

    # _metadata.json deployed where absent; _partnerEvents.json at the landing root
    meta = json.loads((Path(orders.landing_path) / "_metadata.json").read_text())
    assert meta == {"keyColumns": ["id"]}
    assert json.loads((Path(plan.landing_zone) / "_partnerEvents.json").read_text()) == {
        "partnerName": "mirrorspec", "sourceInfo": {"sourceType": "SQL"}}

    # run_results.json
    doc = json.loads((target / "run_results.json").read_text())
    entries = {r["unique_id"]: r for r in doc["results"]}
    assert set(entries) == {"dbo.plain", "sales.bad", "sales.orders"}
    assert entries["sales.bad"]["status"] == "error" and entries["sales.bad"]["error"]
    assert entries["dbo.plain"]["rows_inserted"] == 2
    assert doc["counts"]["error"] == 1 and doc["args"]["threads"] == 2
    assert doc["elapsed_time"] > 0

    # monitoring JSON
    tables = {(t["sourceSchemaName"], t["sourceTableName"]): t
              for t in json.loads((Path(plan.warehouse) / "tables.json").read_text())["tables"]}
    assert tables[("sales", "bad")]["status"] == "Failed"
    assert tables[("sales", "orders")]["status"] == "Replicating"
    assert json.loads((Path(plan.warehouse) / "replicator.json").read_text())["status"] == "Failed"


def test_rerun_applies_only_new_files(spark, zone):
    plan, target = zone
    orders = plan.table("sales.orders")
    run_plan(plan, select=["sales.orders"], spark=spark)
    write_file(orders, 3, [(9, "z", 0)])
    results = run_plan(plan, select=["sales.orders"], spark=spark, target_dir=target)
    assert [r.unique_id for r in results.results] == ["sales.orders"]
    assert results.results[0].files_applied == ["00000000000000000003.parquet"]
    assert results.results[0].rows_inserted == 1
    assert delta_rows(spark, orders) == [(1, "A"), (2, "B"), (4, "d"), (9, "z")]


class RecordingWarmer:
    def __init__(self):
        self.calls = []

    def before_pass(self):
        self.calls.append("before")

    def after_pass(self, spark, delta_paths):
        self.calls.append(list(delta_paths))


def test_run_watch_warms_the_tables_a_pass_committed_to(spark, zone):
    """`run --watch` hands run_plan a SnapshotWarmer: it gets the tables that got a new version
    (and only those), so their next snapshot is built between passes."""
    plan, _ = zone
    orders = plan.table("sales.orders")
    warmer = RecordingWarmer()
    run_plan(plan, select=["sales.orders"], spark=spark, warmer=warmer)
    run_plan(plan, select=["sales.orders"], spark=spark, warmer=warmer)  # nothing new
    write_file(orders, 3, [(9, "z", 0)])
    run_plan(plan, select=["sales.orders"], spark=spark, warmer=warmer)
    delta = Path(orders.delta_path).resolve()
    assert warmer.calls[::2] == ["before"] * 3  # each pass holds warming back while it runs
    assert [[Path(p).resolve() for p in call] for call in warmer.calls[1::2]] == \
        [[delta], [], [delta]]


def test_selection_and_exclusion(spark, zone):
    plan, _ = zone
    results = run_plan(plan, select=["sales.*"], exclude=["bad"], spark=spark)
    assert [r.unique_id for r in results.results] == ["sales.orders"]
    assert not Path(plan.table("dbo.plain").delta_path).exists()


def test_changed_key_columns_fail_only_that_table(spark, zone):
    plan, _ = zone
    orders = plan.table("sales.orders")
    (Path(orders.landing_path) / "_metadata.json").write_text('{"keyColumns": ["v"]}')
    results = by_id(run_plan(plan, select=["sales.orders", "dbo.plain"], spark=spark))
    assert results["sales.orders"].status == "error"
    assert "recreate the table folder" in results["sales.orders"].error
    assert results["sales.orders"].error_code == "KeyColumnsChanged"
    assert results["dbo.plain"].status == "success"
    assert not Path(orders.delta_path).exists()
    # the monitoring JSON says so too, though the engine never saw the table
    tables = {t["sourceTableName"]: t
              for t in json.loads((Path(plan.warehouse) / "tables.json").read_text())["tables"]}
    assert tables["orders"]["status"] == "Failed"
    assert tables["orders"]["error"]["errorCode"] == "KeyColumnsChanged"
    assert tables["plain"]["status"] == "Replicating"


def test_full_refresh_of_a_landing_zone_table_rebuilds_from_processed_files(spark, zone):
    from delta.tables import DeltaTable

    plan, _ = zone
    orders = plan.table("sales.orders")
    run_plan(plan, select=["sales.orders"], spark=spark)
    write_file(orders, 3, [(9, "z", 0)])
    run_plan(plan, select=["sales.orders"], spark=spark)
    processed = Path(orders.landing_path) / "_ProcessedFiles"
    assert sorted(p.name for p in processed.iterdir()) == ["00000000000000000001.parquet",
                                                          "00000000000000000002.parquet"]
    before = delta_rows(spark, orders)
    results = run_plan(plan, select=["sales.orders"], full_refresh=True, spark=spark)
    assert results.results[0].status == "success"
    assert len(results.results[0].files_applied) == 3
    assert delta_rows(spark, orders) == before
    versions = [r["version"] for r in DeltaTable.forPath(spark, orders.delta_path)
                .history().collect()]
    assert min(versions) == 0 and max(versions) <= 1  # a new table, not version 2+


def test_full_refresh_refuses_when_the_first_files_were_purged(spark, zone):
    plan, _ = zone
    orders = plan.table("sales.orders")
    run_plan(plan, select=["sales.orders"], spark=spark)
    write_file(orders, 3, [(9, "z", 0)])
    run_plan(plan, select=["sales.orders"], spark=spark)
    (Path(orders.landing_path) / "_ProcessedFiles" / "00000000000000000001.parquet").unlink()
    before = delta_rows(spark, orders)
    results = run_plan(plan, select=["sales.orders"], full_refresh=True, spark=spark)
    assert results.results[0].status == "error"
    assert results.results[0].error_code == "FullRefreshImpossible"
    assert "00000000000000000002" in results.results[0].error
    assert delta_rows(spark, orders) == before  # left as it was


def test_nothing_selected_runs_nothing(spark, zone):
    plan, target = zone
    results = run_plan(plan, select=["nothing_like_this"], spark=spark, target_dir=target)
    assert results.results == [] and not results.failed
    assert json.loads((target / "run_results.json").read_text())["results"] == []


def feed_table(root: Path, wh: Path, feed: Path) -> TablePlan:
    from mirrorspec.artifacts.plan import ColumnSpec

    return TablePlan(unique_id="dbo.extract", name="extract", schema=None,
                     warehouse_schema="dbo", landing_path=str(root / "extract"),
                     delta_path=str(wh / "dbo" / "extract"),
                     metadata=mirroring.render_metadata(key_columns=["id"]), key_columns=["id"],
                     columns=[ColumnSpec("id", "Int32", False), ColumnSpec("v", "String")],
                     source=SourceSpec(type="csv", path=str(feed)),
                     steps=[TableStep("PublishFeed"), TableStep("MirrorTable")])


def test_feed_table_is_published_then_mirrored_and_full_refresh_republishes(spark, tmp_path):
    root, wh, feed = tmp_path / "landing", tmp_path / "warehouse", tmp_path / "feed"
    feed.mkdir()
    (feed / "snap_001.csv").write_text("id,v\n1,a\n2,b\n3,c\n")
    table = feed_table(root, wh, feed)
    plan = make_plan(root, wh, [table])
    first = run_plan(plan, spark=spark).results[0]
    assert first.status == "success", first.error
    assert [Path(f).name for f in first.files_published] == ["00000000000000000001.parquet"]
    assert first.rows_inserted == 3
    assert [t.name for t in first.timing] == ["publish", "mirror"]

    (feed / "snap_002.csv").write_text("id,v\n1,a\n2,B\n4,d\n")  # 2 updated, 3 deleted, 4 new
    second = run_plan(plan, spark=spark).results[0]
    assert second.status == "success", second.error
    assert [Path(f).name for f in second.files_published] == ["00000000000000000002.parquet"]
    assert (second.rows_inserted, second.rows_updated, second.rows_deleted) == (1, 1, 1)
    # the landing folder held the applied file 1 (the last one stays): mirrored first
    assert [t.name for t in second.timing] == ["mirror (catch up)", "publish", "mirror"]
    assert delta_rows(spark, table) == [(1, "a"), (2, "B"), (4, "d")]

    refreshed = run_plan(plan, spark=spark, full_refresh=True).results[0]
    assert refreshed.status == "success", refreshed.error
    # the whole feed is published again from sequence 1 into a new Delta table
    assert [Path(f).name for f in refreshed.files_published] == [
        "00000000000000000001.parquet"]
    assert sorted(p.name for p in Path(table.landing_path).iterdir()
                  if not p.name.startswith("_")) == ["00000000000000000001.parquet"]
    assert not (Path(table.landing_path) / "_ProcessedFiles").exists()
    assert delta_rows(spark, table) == [(1, "a"), (2, "B"), (4, "d")]
    assert refreshed.delta_version == 0


def test_a_table_with_nothing_landed_is_not_started_and_build_skips_its_tests(spark, tmp_path):
    from mirrorspec.spark.ops.datatests import run_data_tests

    root, wh = tmp_path / "landing", tmp_path / "warehouse"
    empty = landing_table(root, wh, "sales", "empty",
                          tests=[{"type": "unique", "severity": "error", "columns": ["id"]}])
    plan = make_plan(root, wh, [empty])
    results = run_plan(plan, spark=spark, target_dir=tmp_path / "target")
    result = results.results[0]
    assert (result.status, result.mirror_status) == ("not_started", "NotStarted")
    assert not results.failed and results.counts()["not_started"] == 1
    status = json.loads((wh / "tables.json").read_text())["tables"][0]
    assert status["status"] == "NotStarted"
    skip = results.tests_to_skip()
    assert skip == {"sales.empty": "the table has not started: nothing has landed yet"}
    tests = run_data_tests(spark, plan, plan.tables, skip=skip)
    assert [(r.status, r.message) for r in tests.results] == [
        ("skipped", "the table has not started: nothing has landed yet")]
    assert not tests.failed
    # once a file lands the same table replicates
    write_file(empty, 1, [(1, "a", 0)])
    again = run_plan(plan, spark=spark, target_dir=tmp_path / "target")
    assert (again.results[0].status, again.results[0].mirror_status) == ("success", "Replicating")


def test_a_key_change_is_one_full_refresh_that_checks_the_feed_before_dropping(spark, tmp_path):
    """Changing an extract table's key: `run --full-refresh` publishes the feed aside first. A
    bad newest snapshot fails the table with everything left as it was (Delta table, landing
    folder, `_metadata.json`, publisher state); a good one rebuilds the table from the newest
    snapshot only — the older one, which lacks the new key column, is not read."""
    from dataclasses import replace

    from mirrorspec.artifacts.plan import ColumnSpec
    from mirrorspec.progress.publish import state_file
    from mirrorspec.spark.publish.refresh import shadow_root

    root, wh, feed = tmp_path / "landing", tmp_path / "warehouse", tmp_path / "feed"
    feed.mkdir()
    (feed / "snap_001.csv").write_text("id,v\n1,a\n2,b\n")
    table = feed_table(root, wh, feed)
    plan = make_plan(root, wh, [table])
    assert run_plan(plan, spark=spark).results[0].status == "success"
    metadata = Path(table.landing_path) / "_metadata.json"
    before = {p: p.read_bytes() for p in (metadata, Path(state_file(plan, table)))}

    rekeyed = replace(table, key_columns=["id", "region"],
                      metadata=mirroring.render_metadata(key_columns=["id", "region"]),
                      columns=table.columns + [ColumnSpec("region", "String", False)],
                      recreate=True)
    plan = make_plan(root, wh, [rekeyed])
    (feed / "snap_002.csv").write_text("id,v,region\n1,a,EU\nx,b,US\n")  # a bad id
    failed = run_plan(plan, spark=spark, full_refresh=True).results[0]
    assert failed.status == "error"
    assert "snap_002.csv" in failed.error and "nothing was dropped" in failed.error
    assert {p: p.read_bytes() for p in before} == before
    assert delta_rows(spark, table) == [(1, "a"), (2, "b")]
    assert not Path(shadow_root(plan, rekeyed)).exists()

    (feed / "snap_002.csv").write_text("id,v,region\n1,a,EU\n2,b,US\n2,b,EU\n")
    refreshed = run_plan(plan, spark=spark, full_refresh=True).results[0]
    assert refreshed.status == "success", refreshed.error
    assert [Path(f).name for f in refreshed.files_published] == ["00000000000000000001.parquet"]
    assert refreshed.rows_inserted == 3 and refreshed.delta_version == 0
    assert json.loads(metadata.read_text())["keyColumns"] == ["id", "region"]
    spark.catalog.clearCache()
    rows = spark.read.format("delta").load(table.delta_path).orderBy("id", "region").collect()
    assert [tuple(r) for r in rows] == [(1, "a", "EU"), (2, "b", "EU"), (2, "b", "US")]
    assert not Path(shadow_root(plan, rekeyed)).exists()
    # both snapshots are recorded as published: the next run has nothing to do
    again = run_plan(plan, spark=spark).results[0]
    assert again.status == "success" and again.files_published == []


def test_a_moved_project_publishes_nothing_again_and_a_lost_state_is_warned_about(spark,
                                                                                  tmp_path):
    """`mv` of a project (feeds, landing zone and warehouse inside it): the next run with no new
    data publishes nothing and commits no Delta version. A state that knows none of the feed's
    files, over a landing folder holding data, is said loudly before it is published again."""
    import shutil
    from dataclasses import replace

    from mirrorspec.base.console import CallbackConsole
    from mirrorspec.progress.publish import state_file

    def at(project: Path):
        root, wh, feed = project / "landing", project / "warehouse", project / "feed"
        table = feed_table(root, wh, feed)
        return replace(make_plan(root, wh, [table]), project_dir=str(project)), table

    first = tmp_path / "first" / "shop"
    (first / "feed").mkdir(parents=True)
    (first / "feed" / "snap_001.csv").write_text("id,v\n1,a\n2,b\n")
    plan, _ = at(first)
    assert run_plan(plan, spark=spark).results[0].files_published

    moved = tmp_path / "moved" / "shop"
    shutil.move(str(first), str(moved))
    plan, table = at(moved)
    events: list[dict] = []
    again = run_plan(plan, spark=spark, console=CallbackConsole(events.append)).results[0]
    assert again.status == "success", again.error
    assert (again.files_published, again.files_applied, again.delta_version) == ([], [], 0)
    assert not [e for e in events if e["level"] == "warning"]

    Path(state_file(plan, table)).unlink()  # a state lost
    events.clear()
    lost = run_plan(plan, spark=spark, console=CallbackConsole(events.append)).results[0]
    assert lost.status == "success", lost.error
    warned = [e["message"] for e in events if e["level"] == "warning"]
    assert any("records nothing" in w and "publishing all 1 feed file(s) again" in w
               and "--full-refresh --select dbo.extract" in w for w in warned), warned


def test_run_drops_a_table_whose_landing_folder_was_deleted_and_reports_it(spark, tmp_path):
    """A table removed from the project (or renamed) whose landing folder is deleted, as diff
    says to: `run` drops its Delta table as `mirror` and Fabric do, and reports `Dropped` in
    run_results.json and tables.json, so `status --stale-after` doesn't count it stale."""
    import shutil
    from datetime import datetime, timedelta, timezone

    from mirrorspec.artifacts.status import read_status
    from mirrorspec.base.files import LocalFS
    from mirrorspec.operate.health import assess

    root, wh, target = tmp_path / "landing", tmp_path / "warehouse", tmp_path / "target"
    kept, gone = landing_table(root, wh, "sales", "orders"), landing_table(root, wh, "sales", "customers")
    for table in (kept, gone):
        write_file(table, 1, [(1, "a", 0)])
    assert not run_plan(make_plan(root, wh, [kept, gone]), spark=spark).failed

    shutil.rmtree(gone.landing_path)  # the table left the project; its folder is deleted
    results = run_plan(make_plan(root, wh, [kept]), spark=spark, target_dir=target)
    assert not results.failed
    assert {(r.unique_id, r.status, r.mirror_status) for r in results.results} == {
        ("sales.orders", "success", "Replicating"), ("sales.customers", "success", "Dropped")}
    assert not Path(gone.delta_path).exists() and Path(kept.delta_path).exists()
    written = json.loads((target / "run_results.json").read_text())["results"]
    assert {r["unique_id"]: r["mirror_status"] for r in written}["sales.customers"] == "Dropped"
    status = read_status(str(wh), LocalFS())
    assert {e["sourceTableName"]: e["status"] for e in status["tables"]}["customers"] == "Dropped"
    later = datetime.now(timezone.utc) + timedelta(minutes=1)
    assert [s for s in assess(status, timedelta(hours=1), later).stale if "customers" in s] == []
