"""Debezium feed → publisher → landing zone (the open-mirroring rules) → engine → Delta, over two runs."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from mirrorspec.openmirroring.mirroring import ROW_MARKER_COLUMN, parse_sequence

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "debezium"
COLUMNS = [("id", "Int32"), ("name", "String"), ("email", "String"), ("balance", "Double"),
           ("created_at", "DateTime"), ("birth_date", "IDate"), ("active", "Boolean"),
           ("notes", "String"), ("updated_at", "DateTime")]
NAMES = [n for n, _ in COLUMNS]


def make_plan(tmp_path: Path, feed: Path) -> tuple[TablePlan, Plan]:
    table = TablePlan(
        unique_id="inventory.customers", name="customers", schema="inventory",
        warehouse_schema="inventory", landing_path=str(tmp_path / "lz" / "inventory.schema" /
                                                       "customers"),
        delta_path=str(tmp_path / "wh" / "inventory" / "customers"),
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec(n, t) for n, t in COLUMNS],
        source=SourceSpec("debezium", str(feed), {}))
    plan = Plan(1, "p", "1", "dev", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "wh" / "_mirrorspec"), SparkSpec(), None, [table])
    return table, plan


def publish_and_mirror(spark, table, plan):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.publish.publisher import publish_table

    published = publish_table(spark, table, plan)
    assert published.status == "Published", published.error
    result = mirror_tables(spark, [MirrorTarget(table.unique_id, table.schema, table.name,
                                                table.landing_path, table.delta_path)],
                           plan.warehouse, MirrorOptions(threads=1))
    assert not result.failed, result.tables[0].error
    return published


def landing_rows(path: str) -> list[dict]:
    """Seed 000: a 20-digit name, `__rowMarker__` the last column as an int, full rows."""
    name = Path(path).name
    assert parse_sequence(name) is not None and len(name.split(".")[0]) == 20
    table = pq.read_table(path)
    assert table.column_names == NAMES + [ROW_MARKER_COLUMN]
    assert str(table.schema.field(ROW_MARKER_COLUMN).type) == "int32"
    return table.to_pylist()


def test_postgres_feed_mirrors_with_toast_completion_key_change_and_delete(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    shutil.copy(FIXTURES / "postgres" / "customers-0001.json", feed)
    table, plan = make_plan(tmp_path, feed)

    first = publish_and_mirror(spark, table, plan)
    rows = landing_rows(first.files_written[0])
    # snapshot reads land as upserts (the batch has updates: only an insert-only first load
    # whose keys are unique keeps 0)
    assert [(r["id"], r[ROW_MARKER_COLUMN]) for r in rows] == [
        (1001, 4), (1002, 4), (1003, 4), (1004, 4), (1002, 1), (1003, 2)]
    # the TOAST-ed column is completed from the insert before it, never the placeholder
    assert rows[4]["notes"] == "prefers email" and rows[4]["email"] == "george@bailey.com"
    metadata = json.loads((Path(table.landing_path) / "_metadata.json").read_text())
    assert metadata["keyColumns"] == ["id"]

    shutil.copy(FIXTURES / "postgres" / "customers-0002.json", feed)
    second = publish_and_mirror(spark, table, plan)
    assert parse_sequence(Path(second.files_written[0]).name) == 2
    rows = landing_rows(second.files_written[0])
    # a later batch: a create could be a re-send, so it lands as an upsert
    assert [(r["id"], r[ROW_MARKER_COLUMN]) for r in rows] == [(1004, 2), (1005, 4), (1001, 1)]
    # completed across runs from the mirrored Delta row
    assert rows[2]["notes"] == "vip"

    mirrored = spark.read.format("delta").load(table.delta_path)
    got = {r["id"]: r for r in mirrored.collect()}
    assert sorted(got) == [1001, 1002, 1005]
    assert got[1001]["notes"] == "vip" and got[1001]["active"] is False
    assert got[1001]["balance"] == 1234.51
    assert got[1002]["notes"] == "prefers email" and got[1002]["balance"] == 25.0
    assert got[1005]["name"] == "Anne Kretchmar" and got[1005]["birth_date"] == dt.date(2000, 1, 1)
    assert got[1005]["updated_at"] == dt.datetime(2023, 11, 14, 22, 20)
    assert "__debezium_unavailable_value" not in {r["notes"] for r in got.values()}


def test_truncate_deletes_every_mirrored_row(spark, tmp_path):
    feed = tmp_path / "feed"
    shutil.copytree(FIXTURES / "postgres_truncate", feed)
    table, plan = make_plan(tmp_path, feed)
    publish_and_mirror(spark, table, plan)
    ids = [r["id"] for r in spark.read.format("delta").load(table.delta_path).collect()]
    assert ids == [1002]  # 1001 inserted, truncated, then 1002 inserted


def test_mongodb_feed_mirrors_with_an_id_key(spark, tmp_path):
    """The MongoDB connector's events (producers/mongodb-customers.json) land with `_id` as a
    column and keyColumns, and the engine mirrors them: partial updates completed, the
    key-only delete applied."""
    import dataclasses

    feed = tmp_path / "feed"
    feed.mkdir()
    shutil.copy(FIXTURES / "producers" / "mongodb-customers.json", feed)
    columns = [("_id", "Int64"), ("first_name", "String"), ("last_name", "String"),
               ("email", "String"), ("balance", "Double"), ("joined", "DateTime"),
               ("ref", "String"), ("avatar", "ByteArray"), ("visits", "Int64"),
               ("score", "Double"), ("address", "String")]
    table, plan = make_plan(tmp_path, feed)
    table = dataclasses.replace(table, metadata={"keyColumns": ["_id"]}, key_columns=["_id"],
                                columns=[ColumnSpec(n, t) for n, t in columns])
    plan = dataclasses.replace(plan, tables=[table])
    published = publish_and_mirror(spark, table, plan)
    landed = pq.read_table(published.files_written[0])
    assert landed.column_names[0] == "_id"
    metadata = json.loads((Path(table.landing_path) / "_metadata.json").read_text())
    assert metadata["keyColumns"] == ["_id"]
    (anne,) = spark.read.format("delta").load(table.delta_path).collect()
    assert anne["_id"] == 1004 and anne["first_name"] == "Anne Marie"
    assert anne["last_name"] == "K." and anne["visits"] == 4 and anne["avatar"] is None
    assert anne["email"] == "annek@noanswer.org" and anne["balance"] == 12.5
    assert anne["joined"] == dt.datetime(2026, 7, 4)


def test_control_messages_are_counted_in_the_publish_result(spark, tmp_path):
    import dataclasses

    from mirrorspec.spark.publish.publisher import publish_table

    feed = tmp_path / "feed"
    feed.mkdir()
    shutil.copy(FIXTURES / "producers" / "customers-control.json", feed)
    table, plan = make_plan(tmp_path, feed)
    table = dataclasses.replace(table, columns=[ColumnSpec("id", "Int32"),
                                                ColumnSpec("first_name", "String"),
                                                ColumnSpec("score", "Double")])
    plan = dataclasses.replace(plan, tables=[table])
    published = publish_table(spark, table, plan)
    assert published.status == "Published" and published.rows == 2
    assert published.skipped == {"heartbeat": 2, "schema_change": 2, "transaction": 2}
