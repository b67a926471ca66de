"""GoldenGate, Canal and Maxwell feeds → publisher → landing zone → engine → Delta, in one pass;
the mirrored rows read back with delta-rs. A bad Maxwell feed fails only its own table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from tests.support.reference_model import read_delta_rs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COLUMNS = [("id", "Int32"), ("name", "String"), ("description", "String"), ("weight", "Double")]


def _table(tmp_path: Path, name: str, source_type: str, feed: Path, options=None) -> TablePlan:
    return TablePlan(
        unique_id=f"shop.{name}", name=name, schema="shop", warehouse_schema="shop",
        landing_path=str(tmp_path / "lz" / "shop.schema" / name),
        delta_path=str(tmp_path / "wh" / "shop" / name),
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec(n, t) for n, t in COLUMNS],
        source=SourceSpec(source_type, str(feed), options or {}))


def _feed(tmp_path: Path, name: str, copies=(), written=()) -> Path:
    """A feed folder: fixture files copied as 0001.json, … then `written` message lists."""
    feed = tmp_path / "feeds" / name
    feed.mkdir(parents=True)
    number = 0
    for fixture in copies:
        number += 1
        shutil.copy(FIXTURES / fixture, feed / f"{number:04d}.json")
    for messages in written:
        number += 1
        (feed / f"{number:04d}.json").write_text("".join(json.dumps(m) + "\n" for m in messages))
    return feed


def _ogg(op, pos, **images):
    return {"table": "OGG.TBL_TEST", "op_type": op, "op_ts": "2024-01-02 03:04:05.000000",
            "pos": f"{pos:023d}", **images}


def _canal(kind, data, old=None, table="products2"):
    return {"data": data, "database": "inventory", "es": 1589374100000, "id": 20,
            "isDdl": False, "old": old, "pkNames": ["id"], "table": table, "type": kind,
            "ts": 1589374100100}


def _maxwell(kind, data, old=None, **extra):
    message = {"database": "test", "table": "product", "type": kind, "ts": 1596685000,
               "data": data, **extra}
    if old is not None:
        message["old"] = old
    return message


@pytest.mark.spark
def test_goldengate_canal_and_maxwell_feeds_mirror(spark, tmp_path):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.publish.publisher import publish_table

    ogg = _feed(tmp_path, "ogg", ["goldengate/flink-ogg-data.json"], [[
        # compressed update: only the key and the changed column
        _ogg("U", 200, before={"id": 102}, after={"id": 102, "weight": 9.5}),
        # key change 101 → 201
        _ogg("U", 201, before={"id": 101, "name": "scooter",
                               "description": "Small 2-wheel scooter",
                               "weight": 3.140000104904175}, after={"id": 201, "weight": 4.0}),
        # row modeled
        {**_ogg("I", 202), "id": 300, "name": "row", "description": "modeled", "weight": 1.5},
    ]])
    ogg_truncate = _feed(tmp_path, "ogg_truncate", written=[[
        _ogg("I", 1, after={"id": 1}), _ogg("I", 2, after={"id": 2}), _ogg("T", 3),
        _ogg("I", 4, after={"id": 3, "name": "after the truncate"})]])
    canal = _feed(tmp_path, "canal", ["canal/flink-canal-data.json"], [[
        _canal("UPDATE", [{"id": "206", "name": "hammer", "description": "18oz carpenter hammer",
                           "weight": "1.0"}], old=[{"id": "106"}]),
        _canal("INSERT", [{"id": "1", "total": "9.99"}], table="orders"),  # another table
        {**_canal("ALTER", None), "isDdl": True, "sql": "ALTER TABLE products2 ADD x INT"},
        _canal("UPDATE", [{"id": "102", "weight": "7.5"}], old=[{"weight": "5.17"}]),
    ]])
    maxwell = _feed(tmp_path, "maxwell", ["maxwell/flink-maxwell-data.json"], [[
        # a bootstrap replaces the table: its rows are the table at that point
        _maxwell("bootstrap-start", {}),
        _maxwell("bootstrap-insert", {"id": 101, "name": "scooter",
                                      "description": "Small 2-wheel scooter", "weight": 5.17}),
        _maxwell("bootstrap-insert", {"id": 106, "name": "hammer",
                                      "description": "18oz carpenter hammer", "weight": 1.0}),
        _maxwell("bootstrap-insert", {"id": 500, "name": "boot", "description": "strap",
                                      "weight": 0.5}),
        _maxwell("bootstrap-complete", {}),
        _maxwell("update", {"id": 106, "weight": 2.0}, old={"weight": 1.0}),  # minimal image
    ]])
    bad = _feed(tmp_path, "maxwell_bad", written=[[
        _maxwell("insert", {"id": 1}, position="mysql-bin.000003:500"),
        _maxwell("insert", {"id": 2}, position="mysql-bin.000003:400")]])
    tables = [_table(tmp_path, "ogg_items", "goldengate", ogg),
              _table(tmp_path, "ogg_truncated", "goldengate", ogg_truncate),
              _table(tmp_path, "canal_items", "canal", canal, {"table": "products2"}),
              _table(tmp_path, "maxwell_items", "maxwell", maxwell),
              _table(tmp_path, "maxwell_bad", "maxwell", bad)]
    plan = Plan(1, "p", "1", "dev", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "wh" / "_mirrorspec"), SparkSpec(), None, tables)

    published = {t.name: publish_table(spark, t, plan) for t in tables}
    failed = published.pop("maxwell_bad")
    assert failed.status == "Failed" and failed.files_written == []
    assert failed.error["file"].endswith("0001.json") and failed.error["line"] == 2
    # a position going back to one the batch never sent: not a re-send, the table stops there
    assert "goes back within the file" in failed.error["message"]
    assert not Path(tables[-1].landing_path).exists() or not [
        p for p in Path(tables[-1].landing_path).iterdir() if not p.name.startswith("_")]
    for name, result in published.items():
        assert result.status == "Published", (name, result.error)
    # the ALTER of products2 is counted; the fixture's CREATE of user02 is another table's
    assert published["canal_items"].skipped == {"ddl": 1}
    assert published["maxwell_items"].skipped == {}

    result = mirror_tables(spark, [MirrorTarget(t.unique_id, t.schema, t.name, t.landing_path,
                                                t.delta_path) for t in tables[:-1]],
                           plan.warehouse, MirrorOptions(threads=1))
    assert not result.failed, [t.error for t in result.tables]

    def mirrored(table: TablePlan) -> list[tuple]:
        _, rows = read_delta_rs(table.delta_path)
        return sorted(tuple(r[n] for n, _ in COLUMNS) for r in rows)

    assert mirrored(tables[0]) == [
        (102, "car battery", "12V car battery", 9.5),        # completed from the mirrored row
        (106, "hammer", "18oz carpenter hammer", 1.0),
        (201, "scooter", "Small 2-wheel scooter", 4.0),       # key change: before + after
        (300, "row", "modeled", 1.5)]
    assert mirrored(tables[1]) == [(3, "after the truncate", None, None)]
    assert mirrored(tables[2]) == [
        (101, "scooter", "Small 2-wheel scooter", 5.17),
        (102, "car battery", "12V car battery", 7.5),
        (206, "hammer", "18oz carpenter hammer", 1.0)]
    assert mirrored(tables[3]) == [
        (101, "scooter", "Small 2-wheel scooter", 5.17),
        (106, "hammer", "18oz carpenter hammer", 2.0),
        (500, "boot", "strap", 0.5)]
