"""Data tests on tables mirrored by the runner: PASS, WARN, FAIL, ERROR and SKIP cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.project_files import write_changes

from mirrorspec.openmirroring import mirroring
from mirrorspec.artifacts.plan import PLAN_VERSION, Plan, SourceSpec, SparkSpec, TablePlan, TableStep
from mirrorspec.spark.ops.datatests import expected_row_count, run_data_tests
from mirrorspec.spark.run import run_plan


def landing_table(root: Path, wh: Path, name: str, keys, tests) -> TablePlan:
    return TablePlan(unique_id=f"dbo.{name}", name=name, schema=None, warehouse_schema="dbo",
                     landing_path=str(root / name), delta_path=str(wh / "dbo" / name),
                     metadata=mirroring.render_metadata(key_columns=list(keys)),
                     key_columns=list(keys), source=SourceSpec(), steps=[TableStep("MirrorTable")],
                     tests=tests)


def write_file(table: TablePlan, sequence: int, rows: list[tuple]) -> None:
    write_changes(Path(table.landing_path), sequence, rows)


GOOD_TESTS = [
    {"type": "unique", "severity": "error"},
    {"type": "not_null", "severity": "error", "columns": ["id", "v"]},
    {"type": "accepted_values", "severity": "error", "column": "v", "values": ["a", "B", "d"]},
    {"type": "row_count", "severity": "error"},
    {"type": "freshness", "severity": "error", "max_age_seconds": 315360000},
]
BAD_TESTS = [
    {"type": "unique", "severity": "error", "columns": ["id"]},
    {"type": "not_null", "severity": "error", "columns": ["v"]},
    {"type": "accepted_values", "severity": "warn", "column": "v", "values": ["a"]},
    {"type": "relationships", "severity": "error", "column": "id", "to": "parents", "field": "id"},
    {"type": "row_count", "severity": "error"},
    {"type": "not_null", "severity": "error", "columns": ["no_such_column"]},
]


@pytest.fixture(scope="module")
def mirrored(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("datatests")
    root, wh = base / "landing", base / "warehouse"
    parents = landing_table(root, wh, "parents", ["id"], GOOD_TESTS)
    children = landing_table(root, wh, "children", [], BAD_TESTS)
    missing = landing_table(root, wh, "missing", ["id"], [{"type": "unique", "severity": "error"}])
    # parents: (1,a) (2,B) (4,d) after updates, a delete and a duplicate-key insert replaced
    write_file(parents, 1, [(1, "a", 0), (2, "b", 0), (3, "c", 0)])
    write_file(parents, 2, [(2, "B", 1), (3, None, 2), (4, "d", 4)])
    # children (keyless): duplicates, a NULL, values outside the list, an orphan (9)
    write_file(children, 1, [(1, "x", 0), (1, "x", 0), (2, None, 0), (9, "y", 0)])
    plan = Plan(plan_version=PLAN_VERSION, project_name="t", project_version="1", profile="t",
                target="dev", landing_zone=str(root), warehouse=str(wh),
                state_path=str(wh / "_mirrorspec"), spark=SparkSpec(), partner_events=None,
                tables=[children, missing, parents])
    results = run_plan(plan, select=["parents", "children"], spark=spark)
    assert not results.failed
    return plan


def by_name(results):
    return {(r.table, r.type, tuple(r.params.get("columns") or [r.params.get("column")])): r
            for r in results.results}


def test_every_test_passes_on_a_correct_table(spark, mirrored):
    results = run_data_tests(spark, mirrored, [mirrored.table("dbo.parents")])
    assert [r.status for r in results.results] == ["pass"] * 5, [
        (r.name, r.message) for r in results.results]
    assert not results.failed
    row_count = [r for r in results.results if r.type == "row_count"][0]
    assert "3 row(s)" in row_count.message


def test_failures_warnings_and_errors_are_reported_per_test(spark, mirrored, tmp_path):
    results = run_data_tests(spark, mirrored, [mirrored.table("dbo.children")])
    got = {r.name: r for r in results.results}
    unique = got["unique_dbo.children_id"]
    assert unique.status == "fail" and unique.failures == 1 and "1 x2" in unique.message
    not_null = got["not_null_dbo.children_v"]
    assert not_null.status == "fail" and not_null.failures == 1
    accepted = got["accepted_values_dbo.children_v"]
    assert accepted.status == "warn" and accepted.failures == 3  # x, x, y (NULL passes)
    orphans = got["relationships_dbo.children_id_to_parents"]
    assert orphans.status == "fail" and orphans.failures == 1 and "9" in orphans.message
    assert got["row_count_dbo.children"].status == "pass"
    bad_column = got["not_null_dbo.children_no_such_column"]
    assert bad_column.status == "error" and "no_such_column" in bad_column.message
    assert results.failed and results.failures == 4
    counts = results.counts()
    assert counts == {"pass": 1, "warn": 1, "fail": 3, "error": 1, "skipped": 0}
    path = results.write(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["counts"] == counts and len(doc["results"]) == 6


def test_table_not_mirrored_is_an_error_and_skip_is_honoured(spark, mirrored):
    results = run_data_tests(spark, mirrored, [mirrored.table("dbo.missing")])
    assert results.results[0].status == "error"
    assert "mirrorspec run" in results.results[0].message
    skipped = run_data_tests(spark, mirrored, [mirrored.table("dbo.parents")],
                             skip={"dbo.parents"})
    assert {r.status for r in skipped.results} == {"skipped"} and not skipped.failed


def test_freshness_fails_for_an_old_sync(spark, mirrored, tmp_path):
    from dataclasses import replace

    wh = tmp_path / "wh"
    wh.mkdir()
    (wh / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "dbo", "sourceTableName": "parents", "status": "Replicating",
        "metrics": {"lastSyncDateTime": "2020-01-01T00:00:00Z"}}]}))
    plan = replace(mirrored, warehouse=str(wh))
    table = replace(mirrored.table("dbo.parents"),
                    tests=[{"type": "freshness", "severity": "error", "max_age_seconds": 3600}])
    result = run_data_tests(spark, plan, [table]).results[0]
    assert result.status == "fail" and "2020-01-01" in result.message
    never = replace(table, unique_id="dbo.other", name="other")
    result = run_data_tests(spark, plan, [never]).results[0]
    assert result.status == "fail" and "never synced" in result.message


def test_row_count_detects_rows_the_landing_zone_does_not_explain(spark, mirrored, tmp_path):
    import shutil
    from dataclasses import replace

    source = mirrored.table("dbo.parents")
    copy = tmp_path / "parents_delta"
    shutil.copytree(source.delta_path, copy)
    spark.createDataFrame([(5, "e")], "id int, v string").write.format("delta") \
        .mode("append").save(str(copy))
    table = replace(source, delta_path=str(copy), tests=[{"type": "row_count",
                                                          "severity": "error"}])
    result = run_data_tests(spark, mirrored, [table]).results[0]
    assert result.status == "fail" and result.failures == 1
    assert "holds 4 row(s)" in result.message and "imply 3" in result.message


def test_row_count_errors_when_an_applied_file_was_purged(spark, mirrored, tmp_path):
    import shutil
    from dataclasses import replace

    source = mirrored.table("dbo.parents")
    landing = tmp_path / "parents_landing"
    shutil.copytree(source.landing_path, landing)
    for path in landing.rglob("00000000000000000001.parquet"):
        path.unlink()
    table = replace(source, landing_path=str(landing),
                    tests=[{"type": "row_count", "severity": "error"}])
    result = run_data_tests(spark, mirrored, [table]).results[0]
    assert result.status == "error" and "00000000000000000001.parquet" in result.message


@pytest.mark.parametrize("changes, keys, expected", [
    # insert, duplicate insert of the same key, then an update: both rows stay (replaced)
    ([(1, 0), (1, 0), (1, 1)], ["id"], 2),
    # update of an absent key inserts it; a later insert adds another row
    ([(1, 1), (1, 0)], ["id"], 2),
    # delete clears every row of the key; upsert afterwards makes one
    ([(1, 0), (1, 0), (1, 2), (1, 4)], ["id"], 1),
    # delete of an absent key changes nothing
    ([(2, 2), (3, 0)], ["id"], 1),
    # keyless: inserts only
    ([(1, 0), (1, 0)], [], 2),
])
def test_expected_row_count_follows_the_marker_semantics(spark, changes, keys, expected):
    rows = [(k, m, 0, i) for i, (k, m) in enumerate(changes)]
    df = spark.createDataFrame(rows, "id int, __marker int, __file_order int, __row_order long")
    assert expected_row_count(df, keys) == expected


def test_row_count_reads_snappy_compressed_csv_files(spark, mirrored, tmp_path):
    from dataclasses import replace

    import cramjam

    root, wh = tmp_path / "landing", tmp_path / "warehouse"
    table = landing_table(root, wh, "snappy", ["id"], [{"type": "row_count", "severity": "error"}])
    folder = Path(table.landing_path)
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    for sequence, text in [(1, b"id,v\r\n1,a\r\n2,b\r\n3,c\r\n"),
                           (2, b"id,v,__rowMarker__\r\n2,,2\r\n4,d,0\r\n")]:
        (folder / mirroring.sequence_file_name(sequence, "csv.snappy")).write_bytes(
            bytes(cramjam.snappy.compress(text)))
    plan = replace(mirrored, landing_zone=str(root), warehouse=str(wh), tables=[table])
    assert not run_plan(plan, select=["snappy"], spark=spark).failed
    result = run_data_tests(spark, plan, [table]).results[0]
    assert result.status == "pass" and "3 row(s)" in result.message, result.message
    assert not (Path(table.delta_path) / "_mirrorspec" / "decompressed").exists()
