"""Debezium as found in the wild: key<TAB>value lines and ExtractNewRecordState rows (no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import infer_schema
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE, OP_UPSERT
from mirrorspec.sources.debezium import (DebeziumOptions, TableShape, iter_records, parse_options,
                                         parse_text)

WILD = Path(__file__).resolve().parents[2] / "fixtures" / "debezium" / "wild"
CUSTOMERS = TableShape((("id", "Int32"), ("first_name", "String"), ("email", "String")), ("id",))
PRODUCTS = TableShape((("id", "Int32"), ("name", "String"), ("qty", "Int32")), ("id",))


def parsed(path: Path, shape: TableShape, options=DebeziumOptions()):
    width = len(shape.columns)
    return [(dict(zip(shape.names, r[:width])), r[width], r[width + 4])
            for r in parse_text(path.read_text(), path.name, shape, options)]


def test_key_tab_value_lines_are_kafka_records_with_tombstones_skipped():
    rows = parsed(WILD / "customers-keyvalue.txt", CUSTOMERS)
    assert [(r["id"], op, line) for r, op, line in rows] == [
        (1001, OP_INSERT, 1), (1002, OP_INSERT, 2), (1001, OP_UPDATE, 3), (1002, OP_DELETE, 4)]
    assert rows[2][0]["email"] == "sally.t@example.com"


def test_key_tab_value_infers_columns_from_the_value_and_keys_from_the_key_schema():
    schema = infer_schema("debezium", str(WILD / "customers-keyvalue.txt"), {})
    assert [c.name for c in schema.columns] == ["id", "first_name", "email"]
    assert schema.key_columns == ("id",)


def test_key_tab_value_empty_value_is_a_tombstone_and_a_broken_line_is_located():
    text = '{"id":1}\t{"op":"c","after":{"id":1,"name":"a","qty":1}}\n{"id":2}\t\n{"id":3} oops\n'
    records = iter_records(text, "f.txt")
    assert next(records) == (1, {"key": {"id": 1}, "value": {"op": "c", "after":
                                                             {"id": 1, "name": "a", "qty": 1}}})
    assert next(records) == (2, {"key": {"id": 2}, "value": None})
    with pytest.raises(SourceError) as err:
        next(records)
    assert err.value.file == "f.txt" and err.value.line == 3
    assert "key<TAB>value" in err.value.message


def test_unwrapped_rows_with_add_fields_and_rewrite_deletes():
    rows = parsed(WILD / "products-unwrapped.json", PRODUCTS)
    assert [(r["id"], r["qty"], op) for r, op, _ in rows] == [
        (1, 10, OP_INSERT), (2, 5, OP_INSERT), (1, 7, OP_UPDATE), (2, 5, OP_DELETE),
        (3, 1, OP_UPSERT)]  # no __op: an upsert


def test_unwrapped_order_follows_source_fields():
    shape = PRODUCTS
    text = (json.dumps({"id": 1, "name": "a", "qty": 1, "__op": "c", "__lsn": 20}) + "\n"
            + json.dumps({"id": 2, "name": "a", "qty": 2, "__op": "u", "__lsn": 10}))
    rows = list(parse_text(text, "f.json", shape, DebeziumOptions()))
    orders = [r[len(shape.columns) + 1] for r in rows]
    assert orders[0][2] == 20 and orders[1][2] == 10  # the lsn part of the order tuple
    # ts_ms is no position: only the file and line order such rows
    text = json.dumps({"id": 1, "name": "a", "qty": 1, "__op": "c", "__source_ts_ms": 20})
    order = list(parse_text(text, "f.json", shape, DebeziumOptions()))[0][len(shape.columns) + 1]
    assert order[1:9] == (-1,) * 8 and order[-1] == "no source position"


def test_plain_rows_need_the_unwrapped_option_and_the_error_names_the_fields():
    text = json.dumps({"id": 1, "name": "a", "qty": 1}) + "\n"
    with pytest.raises(SourceError) as err:
        list(parse_text(text, "f.json", PRODUCTS, DebeziumOptions()))
    assert "found id, name, qty" in err.value.message and "unwrapped" in err.value.hint
    rows = list(parse_text(text, "f.json", PRODUCTS, parse_options({"unwrapped": True})))
    assert rows[0][len(PRODUCTS.columns)] == OP_UPSERT


def test_unwrapped_with_schema_converts_types_from_the_flat_schema():
    schema = {"type": "struct", "fields": [{"field": "id", "type": "int32"},
                                           {"field": "name", "type": "string"},
                                           {"field": "qty", "type": "int32"},
                                           {"field": "__op", "type": "string"}]}
    text = json.dumps({"schema": schema, "payload": {"id": 4, "name": "x", "qty": "9",
                                                     "__op": "c"}})
    rows = list(parse_text(text, "f.json", PRODUCTS, DebeziumOptions()))
    assert rows[0][:3] == (4, "x", 9)
