"""An Avro (Confluent wire format) Debezium feed, schemas from a registry, feed files named
against their source positions → publisher → engine → Delta, read back with delta-rs."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pytest

from tests.support.avro_feed import KEY_ID, KEY_SCHEMA, VALUE_ID, VALUE_SCHEMA, Registry, envelope, wire_line
from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from tests.support.reference_model import read_delta_rs

pytestmark = pytest.mark.spark

COLUMNS = [("id", "Int32"), ("name", "String"), ("balance", "Double"),
           ("created_at", "DateTime"), ("birth_date", "IDate"), ("rating", "Int16")]


def make_plan(tmp_path: Path, feed: Path, options: dict) -> tuple[TablePlan, Plan]:
    table = TablePlan(
        unique_id="inventory.customers", name="customers", schema="inventory",
        warehouse_schema="inventory",
        landing_path=str(tmp_path / "lz" / "inventory.schema" / "customers"),
        delta_path=str(tmp_path / "wh" / "inventory" / "customers"),
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec(n, t) for n, t in COLUMNS],
        source=SourceSpec("debezium", str(feed), options))
    plan = Plan(1, "p", "1", "dev", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "wh" / "_mirrorspec"), SparkSpec(), None, [table])
    return table, plan


def mirror(spark, table, plan):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.publish.publisher import publish_table

    published = publish_table(spark, table, plan)
    if published.status == "Published":
        result = mirror_tables(spark, [MirrorTarget(table.unique_id, table.schema, table.name,
                                                    table.landing_path, table.delta_path)],
                               plan.warehouse, MirrorOptions(threads=1))
        assert not result.failed, result.tables[0].error
    return published


def row(i: int, name: str, balance: str | None) -> dict:
    return {"id": i, "name": name, "balance": None if balance is None else decimal.Decimal(balance),
            "created_at": 1699990000123456 + i, "birth_date": 19000 + i, "rating": i}


def test_avro_feed_lands_in_source_order_whatever_the_file_names(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    # the snapshot (positions 100…) sits in the file that sorts last; streaming changes are
    # split so that the later positions sort first
    (feed / "c-snapshot.txt").write_text("\n".join([
        wire_line(envelope("r", row(1, "Sally", "10.50"), None, 100, 0, "true"), 1),
        wire_line(envelope("r", row(2, "George", "20.00"), None, 100, 0, "last"), 2)]) + "\n")
    (feed / "a-later.txt").write_text("\n".join([
        wire_line(envelope("u", row(1, "Sally T", "12.25"), row(1, "Sally", "10.50"), 400, 390), 1),
        wire_line(envelope("d", None, row(2, "George", None), 500, 490), 2),
        wire_line(None, 2)]) + "\n")
    (feed / "b-earlier.txt").write_text("\n".join([
        wire_line(envelope("u", row(1, "Sal", "11.00"), row(1, "Sally", "10.50"), 200, 190), 1),
        wire_line(envelope("c", row(3, "Anne", "0.99"), None, 300, 290), 3)]) + "\n")
    with Registry({VALUE_ID: VALUE_SCHEMA, KEY_ID: KEY_SCHEMA}) as registry:
        table, plan = make_plan(tmp_path, feed, {"avro": {
            "encoding": "confluent", "schema_registry_url": registry.url}})
        published = mirror(spark, table, plan)
    assert published.status == "Published", published.error
    columns, rows = read_delta_rs(table.delta_path)
    assert columns == [n for n, _ in COLUMNS]
    got = sorted(rows, key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["balance"]) for r in got] == [
        (1, "Sally T", 12.25), (3, "Anne", 0.99)]
    sally = got[0]
    assert sally["created_at"] == dt.datetime(2023, 11, 14, 19, 26, 40, 123457)
    assert sally["birth_date"] == dt.date(2022, 1, 9) and sally["rating"] == 1


def test_unknown_schema_id_stops_the_table_at_that_file(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / "a.txt").write_text(wire_line(envelope("c", row(1, "x", "1.00"), None, 10, 5), 1)
                                + "\n")
    with Registry({KEY_ID: KEY_SCHEMA}) as registry:
        table, plan = make_plan(tmp_path, feed, {"avro": {
            "encoding": "confluent", "schema_registry_url": registry.url}})
        published = mirror(spark, table, plan)
    assert published.status != "Published"
    assert f"schema id {VALUE_ID} is unknown" in str(published.error)
    assert "a.txt:1" in str(published.error)
    assert not Path(table.delta_path).exists()  # nothing half applied


def test_a_key_without_positions_in_two_files_is_a_located_error(spark, tmp_path):
    """Without a source position, only file and line could order them: refused."""
    feed = tmp_path / "feed"
    feed.mkdir()
    for name, value in (("a.json", "later"), ("b.json", "earlier")):
        (feed / name).write_text(json.dumps({"op": "c", "after": {
            "id": 1, "name": value}, "source": {"connector": "spanner", "ts_ms": 5}}) + "\n")
    table, plan = make_plan(tmp_path, feed, {})
    published = mirror(spark, table, plan)
    assert published.status != "Published"
    error = str(published.error)
    assert "can't be ordered" in error and "no source position" in error and ".json:1" in error


def test_a_key_from_two_servers_is_a_located_error(spark, tmp_path):
    """Binlog positions of two MySQL servers don't compare, even within one file."""
    feed = tmp_path / "feed"
    feed.mkdir()
    events = [({"server_id": 1, "file": "mysql-bin.000009", "pos": 900}, "c"),
              ({"server_id": 2, "file": "mysql-bin.000001", "pos": 4}, "u")]
    (feed / "a.json").write_text("".join(json.dumps({
        "op": op, "before": None, "after": {"id": 1, "name": op},
        "source": {"connector": "mysql", "row": 0, **source}}) + "\n" for source, op in events))
    table, plan = make_plan(tmp_path, feed, {})
    published = mirror(spark, table, plan)
    assert published.status != "Published"
    error = str(published.error)
    assert "two streams" in error and "server_id 1" in error and "a.json:2" in error, error
