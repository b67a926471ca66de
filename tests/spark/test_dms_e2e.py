"""AWS DMS files → publisher → landing zone → engine → Delta."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from mirrorspec.openmirroring.mirroring import ROW_MARKER_COLUMN, parse_sequence

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "aws_dms"
COLUMNS = [("id", "Int32"), ("last_name", "String"), ("first_name", "String"),
           ("hire_date", "IDate"), ("city", "String"), ("salary", "Double")]


def test_full_load_and_cdc_files_mirror_in_commit_order(spark, tmp_path):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.publish.publisher import publish_table

    feed = tmp_path / "dms" / "hr" / "employee"
    shutil.copytree(FIXTURES / "csv", feed)
    table = TablePlan(
        unique_id="hr.employee", name="employee", schema="hr", warehouse_schema="hr",
        landing_path=str(tmp_path / "lz" / "hr.schema" / "employee"),
        delta_path=str(tmp_path / "wh" / "hr" / "employee"),
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec(n, t) for n, t in COLUMNS],
        source=SourceSpec("aws_dms", str(feed), {"timestamp_column": "ts"}))
    plan = Plan(1, "p", "1", "dev", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "wh" / "_mirrorspec"), SparkSpec(), None, [table])

    published = publish_table(spark, table, plan)
    assert published.status == "Published", published.error
    (landing,) = published.files_written
    assert parse_sequence(Path(landing).name) == 1
    landed = pq.read_table(landing)
    assert landed.column_names == [n for n, _ in COLUMNS] + [ROW_MARKER_COLUMN]
    assert [(r["id"], r[ROW_MARKER_COLUMN]) for r in landed.to_pylist()] == [
        (101, 4), (102, 4), (103, 4), (101, 1), (104, 4), (102, 2), (104, 1), (104, 1), (105, 4)]
    assert publish_table(spark, table, plan).status == "UpToDate"

    result = mirror_tables(spark, [MirrorTarget(table.unique_id, table.schema, table.name,
                                                table.landing_path, table.delta_path)],
                           plan.warehouse, MirrorOptions(threads=1))
    assert not result.failed, result.tables[0].error
    rows = spark.read.format("delta").load(table.delta_path).select("id", "city", "salary")
    assert sorted(tuple(r) for r in rows.collect()) == [
        (101, "Los Angeles", 5100.0), (103, "Boston", 4200.0), (104, "Portland", 6200.0),
        (105, "Austin", 3000.0)]
