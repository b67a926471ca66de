"""CSV extracts → publisher (change set per snapshot) → landing zone → engine → Delta."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from mirrorspec.openmirroring.mirroring import ROW_MARKER_COLUMN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "extract"
COLUMNS = [("id", "Int64"), ("name", "String"), ("city", "String"), ("balance", "Double"),
           ("signup_date", "IDate"), ("updated_at", "DateTime")]


def test_snapshots_land_only_their_change_sets(spark, tmp_path):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.platform.hadoop_fs import files_for
    from mirrorspec.progress.publish import load_state
    from mirrorspec.spark.publish.publisher import publish_table

    feed = tmp_path / "exports"
    feed.mkdir()
    table = TablePlan(
        unique_id="dbo.customers", name="customers", schema=None, warehouse_schema="dbo",
        landing_path=str(tmp_path / "lz" / "customers"),
        delta_path=str(tmp_path / "wh" / "dbo" / "customers"),
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec(n, t) for n, t in COLUMNS], source=SourceSpec("csv", str(feed), {}))
    plan = Plan(1, "p", "1", "dev", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "wh" / "_mirrorspec"), SparkSpec(), None, [table])
    target = MirrorTarget(table.unique_id, None, table.name, table.landing_path, table.delta_path)

    def run():
        published = publish_table(spark, table, plan)
        assert published.status == "Published", published.error
        result = mirror_tables(spark, [target], plan.warehouse, MirrorOptions(threads=1))
        assert not result.failed, result.tables[0].error
        landed = pq.read_table(published.files_written[0])
        assert landed.column_names[-1] == ROW_MARKER_COLUMN
        return sorted((r["id"], r[ROW_MARKER_COLUMN]) for r in landed.to_pylist())

    def mirrored():
        frame = spark.read.format("delta").load(table.delta_path)
        return sorted(tuple(r) for r in frame.select("id", "city", "balance").collect())

    shutil.copy(FIXTURES / "csv" / "customers_2024-01-01.csv", feed)
    assert run() == [(1, 0), (2, 0), (3, 0)]
    assert mirrored() == [(1, "Oslo", 10.5), (2, "Rome", 20.0), (3, "Nice", None)]
    state = load_state(files_for(spark), plan, table)
    assert state["reader"]["snapshot"] == [str(feed / "customers_2024-01-01.csv")]

    # two new extracts in one run: each is compared with the one before it
    shutil.copy(FIXTURES / "csv" / "customers_2024-01-02.csv", feed)
    shutil.copy(FIXTURES / "csv" / "customers_2024-01-03.csv", feed)
    # inserts after the first load land as upserts (DESIGN: producers are at-least-once)
    assert run() == [(1, 2), (2, 1), (3, 2), (4, 1), (4, 4), (5, 4)]
    assert mirrored() == [(2, "Milan", 20.0), (4, "Bergen, NO", None), (5, "Turku", 5.0)]
