"""DebeziumReader.read(): the canonical change DataFrame of realistic Debezium feeds."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from tests.support.project_files import feed_plan

from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.spark.publish.feeds import get_reader
from mirrorspec.sources.base import CHANGE_COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "debezium"

PG_COLUMNS = [("id", "Int32"), ("name", "String"), ("email", "String"), ("balance", "Double"),
              ("created_at", "DateTime"), ("birth_date", "IDate"), ("active", "Boolean"),
              ("notes", "String"), ("updated_at", "DateTime")]


def plan_for(tmp_path: Path, feed: Path, columns, keys, options=None) -> TablePlan:
    return feed_plan(tmp_path, "debezium", feed, columns, keys, options)


def feed_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.iterdir())


def test_postgres_feed_to_canonical_changes(spark, tmp_path):
    table = plan_for(tmp_path, FIXTURES / "postgres", PG_COLUMNS, ["id"])
    files = feed_files(FIXTURES / "postgres")
    result = get_reader("debezium").read(spark, table, files, {})
    df = result.changes
    assert df.columns == [name for name, _ in PG_COLUMNS] + list(CHANGE_COLUMNS) + ["_delivery"]
    types = dict(df.dtypes)
    # each event's place in its delivery (sources/delivery.py): Postgres lsn + sequence
    first = df.orderBy("_order").first()["_delivery"]
    assert (first["partition"], first["phase"], first["position"][:2]) == ("", 0, [0, 33873856])
    assert first["exact"] is False and first["backwards"] is False
    assert types["id"] == "int" and types["balance"] == "double"
    assert types["created_at"] == "timestamp" and types["birth_date"] == "date"
    assert types["_op"] == "int" and types["_present"] == "array<string>"
    rows = df.orderBy("_order", "_source_file", "_source_line").collect()
    assert [(r["_op"], r["id"]) for r in rows] == [
        (0, 1001), (0, 1002), (0, 1003), (0, 1004), (1, 1002), (2, 1003),
        (2, 1004), (0, 1005), (1, 1001)]
    sally = rows[0]
    assert sally["created_at"] == dt.datetime(2023, 11, 14, 19, 26, 40, 123456)
    assert sally["birth_date"] == dt.date(2022, 1, 8)
    assert sally["balance"] == pytest.approx(1234.5) and sally["_present"] is None
    toast = rows[4]
    assert toast["notes"] is None and "notes" not in toast["_present"]
    assert toast["_source_file"] == files[0] and toast["_source_line"] == 5
    assert set(result.files) == set(files)


def test_mysql_feed_orders_by_binlog_position(spark, tmp_path):
    columns = [("id", "Int64"), ("name", "String"), ("description", "String"),
               ("weight", "Double"), ("price", "String")]
    table = plan_for(tmp_path, FIXTURES / "mysql", columns, ["id"])
    df = get_reader("debezium").read(spark, table, feed_files(FIXTURES / "mysql"), {}).changes
    rows = df.orderBy("_order").collect()
    assert [(r["_op"], r["id"]) for r in rows] == [
        (0, 101), (0, 102), (0, 103), (1, 101), (0, 104), (0, 105), (1, 101), (2, 103)]
    assert rows[-2]["weight"] == 5.5


def test_truncate_row(spark, tmp_path):
    table = plan_for(tmp_path, FIXTURES / "postgres_truncate", PG_COLUMNS, ["id"])
    df = get_reader("debezium").read(
        spark, table, feed_files(FIXTURES / "postgres_truncate"), {}).changes
    assert [r["_op"] for r in df.orderBy("_order").collect()] == [0, 8, 0]


def test_bad_line_stops_the_batch_naming_file_and_line(spark, tmp_path):
    feed = tmp_path / "feed"
    shutil.copytree(FIXTURES / "postgres", feed)
    bad = feed / "customers-0003.json"
    bad.write_text('{"op": "c", "after": {"id": 7, "name": "x"}}\n{"op": "q", "after": {}}\n')
    table = plan_for(tmp_path, feed, PG_COLUMNS, ["id"])
    with pytest.raises(SourceError) as err:
        get_reader("debezium").read(spark, table, feed_files(feed), {})
    assert err.value.file == str(bad) and err.value.line == 2
    assert "unknown Debezium operation 'q'" in err.value.message


def test_no_files_gives_an_empty_typed_frame(spark, tmp_path):
    table = plan_for(tmp_path, FIXTURES / "postgres", PG_COLUMNS, ["id"])
    df = get_reader("debezium").read(spark, table, [], {}).changes
    assert df.count() == 0 and "_order" in df.columns


def test_control_messages_are_skipped_and_counted(spark, tmp_path):
    folder = FIXTURES / "producers"
    columns = [("id", "Int32"), ("first_name", "String"), ("score", "Double")]
    table = plan_for(tmp_path, folder, columns, ["id"])
    result = get_reader("debezium").read(spark, table, [str(folder / "customers-control.json")], {})
    rows = result.changes.orderBy("_order").collect()
    assert [(r["_op"], r["score"]) for r in rows] == [(0, 4.0), (1, 38.29)]
    assert result.info["skipped"] == {"transaction": 2, "schema_change": 2, "heartbeat": 2}
