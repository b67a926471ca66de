"""What real Debezium producers send (no JVM): every Kafka Connect type name and Debezium
logical type, and the messages that change no row. Fixtures: tests/fixtures/debezium/producers
(built from Debezium's documentation; provenance in tests/fixtures/debezium/README.md)."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import infer_schema
from mirrorspec.sources.base import OP_INSERT, OP_UPDATE
from mirrorspec.sources.debezium import (DebeziumOptions, TableShape, data_type_for,
                                         parse_text)

PRODUCERS = Path(__file__).resolve().parents[2] / "fixtures" / "debezium" / "producers"

EXPECTED_TYPES = {
    "id": "Int32", "tiny": "Int16", "small": "Int16", "big": "Int64",
    "real_f": "Single", "dbl_d": "Double", "real_32": "Single", "dbl_64": "Double",
    "flag": "Boolean", "label": "String", "raw": "ByteArray",
    "tags": "String", "attrs": "String", "address": "String",
    "price": "Double", "amount": "Double", "born": "IDate",
    "at_ms": "DateTime", "at_us": "DateTime", "at_ns": "DateTime", "at_zoned": "DateTime",
    "t_ms": "String", "t_us": "String", "t_ns": "String", "t_zoned": "String",
    "yr": "Int32", "doc": "String", "uid": "String", "mood": "String", "moods": "String",
    "bits": "ByteArray", "geom": "ByteArray", "pt": "String", "nums": "String",
    "kc_ts": "DateTime", "kc_date": "IDate",
}


def micros(text: str) -> int:
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def test_every_connect_type_and_logical_type_is_inferred_as_a_user_expects():
    schema = infer_schema("debezium", str(PRODUCERS / "types.json"), {})
    assert {c.name: c.data_type for c in schema.columns} == EXPECTED_TYPES


@pytest.mark.parametrize("kind, expected", [
    ("float", "Single"), ("double", "Double"), ("float32", "Single"), ("float64", "Double"),
    ("int", "Int32"), ("long", "Int64"), ("int8", "Int16"), ("boolean", "Boolean"),
    ("bytes", "ByteArray"), ("array", "String"), ("map", "String"), ("struct", "String")])
def test_type_names_of_the_json_converter_connect_and_avro(kind, expected):
    assert data_type_for({"type": kind, "field": "x"}) == expected
    assert data_type_for({"type": ["null", kind], "field": "x"}) == expected  # Avro union


def test_every_type_decodes_to_the_value_a_user_expects():
    schema = infer_schema("debezium", str(PRODUCERS / "types.json"), {})
    shape = TableShape(tuple((c.name, c.data_type) for c in schema.columns), ("id",))
    (row,) = parse_text((PRODUCERS / "types.json").read_text(), "types.json", shape,
                        DebeziumOptions())
    got = dict(zip(shape.names, row))
    assert got["real_f"] == 4.0 and isinstance(got["real_f"], float)  # was the text "4"
    assert got["dbl_d"] == 38.29 and got["dbl_64"] == -2.25
    assert got["big"] == 9007199254740993 and got["tiny"] == -7
    assert got["raw"] == b"\x00\x01\xff"
    assert json.loads(got["tags"]) == ["a", "b"] and json.loads(got["attrs"]) == {"x": 1}
    assert json.loads(got["address"]) == {"city": "Oslo", "zip": "0150"}
    assert got["price"] == pytest.approx(1234.50) and got["amount"] == pytest.approx(-1.5)
    assert got["born"] == 19000 and got["kc_date"] == 19000
    assert got["at_ms"] == got["kc_ts"] == 1700000000123000
    assert got["at_us"] == 1700000000123456 and got["at_ns"] == 1700000000123456
    assert got["at_zoned"] == micros("2023-11-14T22:13:20.5")
    assert got["t_ms"] == "10:20:30.000000" and got["t_us"] == "10:20:30.123456"
    assert got["t_ns"] == "10:20:30.123456" and got["t_zoned"] == "10:20:30.5Z"
    assert got["yr"] == 2024 and got["uid"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert got["mood"] == "happy" and got["moods"] == "a,c" and got["bits"] == b"\x05\x02"
    assert got["geom"] == bytes.fromhex("0101000000000000000000f03f0000000000000040")
    assert json.loads(got["pt"])["x"] == 1.0 and json.loads(got["nums"]) == [1, 2, 3]


def test_numeric_decimals_and_schemaless_variable_scale_decimals():
    field = {"field": "p", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2"}}
    schema = {"type": "struct", "fields": [
        {"field": "after", "type": "struct", "fields": [{"field": "id", "type": "int32"}, field]}]}
    shape = TableShape((("id", "Int32"), ("p", "Double")), ("id",))
    event = {"schema": schema, "payload": {"op": "c", "after": {"id": 1, "p": 12.5}}}
    (row,) = parse_text(json.dumps(event), "f", shape, DebeziumOptions())  # decimal.format=NUMERIC
    assert row[1] == 12.5
    value = {"scale": 1, "value": base64.b64encode(b"\x7b").decode()}
    (row,) = parse_text(json.dumps({"op": "c", "after": {"id": 1, "p": value}}), "f", shape,
                        DebeziumOptions())
    assert row[1] == pytest.approx(12.3)


def test_schema_change_heartbeat_and_transaction_messages_are_skipped_and_counted():
    shape = TableShape((("id", "Int32"), ("first_name", "String"), ("score", "Double")), ("id",))
    skipped: dict[str, int] = {}
    rows = list(parse_text((PRODUCERS / "customers-control.json").read_text(), "c.json", shape,
                           DebeziumOptions(), skipped))
    assert [(r[0], r[2], r[3]) for r in rows] == [(1001, 4.0, OP_INSERT), (1001, 38.29, OP_UPDATE)]
    assert skipped == {"transaction": 2, "schema_change": 2, "heartbeat": 2}


def test_skipped_messages_do_not_disturb_inference():
    schema = infer_schema("debezium", str(PRODUCERS / "customers-control.json"), {})
    assert [(c.name, c.data_type) for c in schema.columns] == [
        ("id", "Int32"), ("first_name", "String"), ("score", "Double")]


def test_unknown_op_stays_a_located_error_and_a_plain_row_is_not_a_control_message():
    shape = TableShape((("id", "Int32"),), ("id",))
    text = '{"status": "BEGIN", "id": "t1", "event_count": null}\n{"op": "x", "after": {"id": 1}}'
    with pytest.raises(SourceError) as err:
        list(parse_text(text, "f.json", shape, DebeziumOptions()))
    assert err.value.line == 2 and "unknown Debezium operation 'x'" in err.value.message
    with pytest.raises(SourceError) as err:  # a status column alone is not a transaction event
        list(parse_text('{"id": 1, "status": "BEGIN"}', "f.json", shape, DebeziumOptions()))
    assert "no 'op' field" in err.value.message
