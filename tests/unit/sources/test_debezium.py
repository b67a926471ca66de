"""Pure parsing of Debezium change events (no JVM)."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import get_format, infer_schema
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_TRUNCATE, OP_UPDATE
from mirrorspec.sources.debezium import (
    DebeziumOptions,
    TableShape,
    coerce,
    data_type_for,
    parse_options,
    parse_text,
    parse_timestamp,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "debezium"

PG_SHAPE = TableShape(
    columns=(("id", "Int32"), ("name", "String"), ("email", "String"), ("balance", "Double"),
             ("created_at", "DateTime"), ("birth_date", "IDate"), ("active", "Boolean"),
             ("notes", "String"), ("updated_at", "DateTime")),
    key_columns=("id",))
MY_SHAPE = TableShape(
    columns=(("id", "Int32"), ("name", "String"), ("description", "String"), ("weight", "Double"),
             ("price", "String")),
    key_columns=("id",))
N = len(PG_SHAPE.columns)


def micros(text: str) -> int:
    value = dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)
    return int(value.timestamp()) * 1_000_000 + value.microsecond


def rows_of(path: Path, shape=PG_SHAPE, options=DebeziumOptions()):
    return list(parse_text(path.read_text(), path.name, shape, options))


def as_dict(row, shape=PG_SHAPE):
    width = len(shape.columns)
    out = dict(zip(shape.names, row[:width]))
    out.update(op=row[width], order=row[width + 1], present=row[width + 2],
               file=row[width + 3], line=row[width + 4])
    return out


def test_postgres_snapshot_insert_toast_update_and_delete():
    rows = [as_dict(r) for r in rows_of(FIXTURES / "postgres" / "customers-0001.json")]
    assert [r["op"] for r in rows] == [OP_INSERT] * 4 + [OP_UPDATE, OP_DELETE]
    sally = rows[0]
    assert sally["id"] == 1001 and sally["name"] == "Sally Thomas"
    assert sally["balance"] == pytest.approx(1234.50)  # Decimal bytes, scale 2
    assert sally["created_at"] == 1699990000123456  # MicroTimestamp
    assert sally["birth_date"] == 19000  # io.debezium.time.Date: days
    assert sally["updated_at"] == micros("2023-11-14T22:13:20.123456")
    assert sally["present"] is None
    assert rows[1]["balance"] == pytest.approx(-5.0) and rows[1]["birth_date"] is None
    # ZonedTimestamp with an offset is converted to UTC
    assert rows[2]["updated_at"] == micros("2023-11-14T21:13:22")
    update = rows[4]
    assert update["id"] == 1002 and update["email"] == "george@bailey.com"
    assert update["balance"] == pytest.approx(25.0)
    # the TOAST placeholder makes `notes` absent, never the literal
    assert update["notes"] is None
    assert "notes" not in update["present"] and "email" in update["present"]
    assert len(update["present"]) == N - 1
    delete = rows[5]
    assert delete["id"] == 1003 and delete["line"] == 6
    # snapshot rows first (phase 0), then source.lsn (p1); the snapshot rows share an lsn and
    # fall back to file and line
    assert [r["order"][:3] for r in rows] == [(0, 0, 33873856)] * 3 + [
        (1, 0, 33874500), (1, 0, 33874700), (1, 0, 33875000)]
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5, 6]


def test_key_change_becomes_delete_then_insert():
    rows = [as_dict(r) for r in rows_of(FIXTURES / "postgres" / "customers-0002.json")]
    assert [(r["op"], r["id"]) for r in rows] == [(OP_DELETE, 1004), (OP_INSERT, 1005),
                                                  (OP_UPDATE, 1001)]
    assert rows[0]["order"][:1] == rows[1]["order"][:1]
    assert rows[0]["order"] < rows[1]["order"]  # the delete sorts before the insert
    assert rows[1]["name"] == "Anne Kretchmar" and rows[2]["active"] is False


def test_truncate_and_tombstones():
    rows = [as_dict(r) for r in rows_of(FIXTURES / "postgres_truncate" / "customers-0001.json")]
    assert [r["op"] for r in rows] == [OP_INSERT, OP_TRUNCATE, OP_INSERT]
    assert all(rows[1][name] is None for name in PG_SHAPE.names)
    text = '\nnull\n{"schema": {"type": "struct"}, "payload": null}\n'
    assert list(parse_text(text, "t.json", PG_SHAPE, DebeziumOptions())) == []


def test_mysql_schemaless_kafka_records_binlog_order_and_json_array():
    later = [as_dict(r, MY_SHAPE) for r in rows_of(FIXTURES / "mysql" / "a-products.json", MY_SHAPE)]
    earlier = [as_dict(r, MY_SHAPE) for r in rows_of(FIXTURES / "mysql" / "b-products.json",
                                                     MY_SHAPE)]
    assert [r["op"] for r in later] == [OP_UPDATE, OP_DELETE]  # the tombstone record is skipped
    assert [r["op"] for r in earlier] == [OP_INSERT] * 3 + [OP_UPDATE, OP_INSERT, OP_INSERT]
    # binlog (file, pos, row) orders changes across files, whatever the feed file names
    ordered = sorted(later + earlier, key=lambda r: r["order"])
    assert [(r["op"], r["id"]) for r in ordered][-3:] == [(OP_INSERT, 105), (OP_UPDATE, 101),
                                                          (OP_DELETE, 103)]
    assert ordered[3]["weight"] == 4.0 and ordered[-2]["weight"] == 5.5
    assert later[0]["price"] == "3.50"
    # elements of a pretty-printed array report the line each starts on
    assert earlier[0]["line"] == 2 and earlier[1]["line"] > earlier[0]["line"]


@pytest.mark.parametrize("text, line, words", [
    ('{"op": "c", "after": {"id": 1}}\n{"op": "c", "after": {"id": 2}, }\n{"op": "r"}\n', 2,
     "malformed JSON"),
    ('{"op": "x", "after": {"id": 1}}\n', 1, "unknown Debezium operation 'x'"),
    ('\n\n{"before": null, "after": {"id": 1}}\n', 3, "no 'op'"),
    ('{"op": "c", "after": {"id": "abc"}}\n', 1, "column 'id' (Int32)"),
    ('{"op": "d", "before": null, "after": null}\n', 1, "without a 'before'"),
])
def test_bad_input_names_file_and_line(text, line, words):
    shape = TableShape((("id", "Int32"), ("name", "String")), ("id",))
    with pytest.raises(SourceError) as err:
        list(parse_text(text, "feed/x.json", shape, DebeziumOptions()))
    assert err.value.file == "feed/x.json" and err.value.line == line
    assert words in str(err.value)


def test_update_on_a_keyless_table_is_an_error():
    shape = TableShape((("id", "Int32"),), ())
    with pytest.raises(SourceError, match="without key columns"):
        list(parse_text('{"op": "u", "after": {"id": 1}}', "f.json", shape, DebeziumOptions()))


def test_decimal_handling_string_keeps_exact_digits():
    raw = json.loads((FIXTURES / "postgres" / "customers-0001.json").read_text().splitlines()[0])
    shape = TableShape((("id", "Int32"), ("balance", "String")), ("id",))
    rows = list(parse_text(json.dumps(raw), "f", shape, parse_options({"decimal_handling": "string"})))
    assert rows[0][1] == "1234.50"


def test_infer_schema_from_the_value_schema_and_kafka_keys(tmp_path):
    inferred = infer_schema("debezium", str(FIXTURES / "postgres"), {"key_columns": ["id"]})
    assert [(c.name, c.data_type, c.nullable) for c in inferred.columns] == [
        ("id", "Int32", False), ("name", "String", False), ("email", "String", True),
        ("balance", "Double", True), ("created_at", "DateTime", True),
        ("birth_date", "IDate", True), ("active", "Boolean", True), ("notes", "String", True),
        ("updated_at", "DateTime", True)]
    assert inferred.key_columns == ("id",)
    assert inferred.origin.endswith("customers-0001.json:1")
    mysql = get_format("debezium").infer_schema(str(FIXTURES / "mysql"), {})
    assert mysql.columns == () and mysql.key_columns == ("id",)
    wrapped_key = {"key": {"schema": {"type": "struct", "fields": [
        {"type": "int64", "optional": False, "field": "order_id"},
        {"type": "int32", "optional": False, "field": "line_no"}]},
        "payload": {"order_id": 1, "line_no": 2}},
        "value": json.dumps({"before": None, "after": {"order_id": 1, "line_no": 2},
                             "op": "c", "source": {}})}
    (tmp_path / "x.json").write_text(json.dumps(wrapped_key) + "\n")
    assert infer_schema("debezium", str(tmp_path / "*.json"), {}).key_columns == (
        "order_id", "line_no")
    assert infer_schema("debezium", str(tmp_path / "nothing-here"), {}) is None


@pytest.mark.parametrize("field, expected", [
    ({"type": "int8"}, "Int16"), ({"type": "int16"}, "Int16"), ({"type": "int64"}, "Int64"),
    ({"type": "float32"}, "Single"), ({"type": "float64"}, "Double"),
    ({"type": "bytes"}, "ByteArray"), ({"type": "boolean"}, "Boolean"),
    ({"type": "int64", "name": "io.debezium.time.Timestamp"}, "DateTime"),
    ({"type": "int64", "name": "io.debezium.time.NanoTimestamp"}, "DateTime"),
    ({"type": "int64", "name": "io.debezium.time.MicroTime"}, "String"),
    ({"type": "string", "name": "io.debezium.data.Json"}, "String"),
    ({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"}, "Double"),
    ({"type": "struct", "name": "io.debezium.data.geometry.Point"}, "String"),
    ({"type": "array", "items": {"type": "string"}}, "String"),
])
def test_data_type_mapping(field, expected):
    assert data_type_for(field) == expected


def test_value_conversions():
    from mirrorspec.sources.debezium.types import decode, field_kind

    ts_ms = decode(1700000000123, field_kind({"type": "int64", "name": "io.debezium.time.Timestamp"}))
    assert coerce(ts_ms, "DateTime") == 1700000000123000
    ns = decode(1700000000123456789, field_kind({"type": "int64",
                                            "name": "io.debezium.time.NanoTimestamp"}))
    assert coerce(ns, "DateTime") == 1700000000123456
    time = decode(3723000000, field_kind({"type": "int64", "name": "io.debezium.time.MicroTime"}))
    assert coerce(time, "String") == "01:02:03.000000"
    var = decode({"scale": 3, "value": base64.b64encode(b"\x30\x39").decode()},
                 field_kind({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"}))
    assert coerce(var, "String") == "12.345"
    assert coerce(decode("AQID", field_kind({"type": "bytes"})), "ByteArray") == b"\x01\x02\x03"
    assert coerce({"x": 1.0, "y": 2.0}, "String") == '{"x":1.0,"y":2.0}'
    assert coerce(1, "DateTime", int_time_unit="us") == 1
    assert coerce("2024-02-29", "IDate") == (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days
    assert parse_timestamp("2024-01-01T00:00:00.123456789Z") == micros("2024-01-01T00:00:00.123456")
    with pytest.raises(ValueError):
        coerce(70000, "Int16")


def test_unavailable_placeholder_in_binary_and_array_columns():
    shape = TableShape((("id", "Int32"), ("blob", "ByteArray"), ("tags", "String")), ("id",))
    b64 = base64.b64encode(b"__debezium_unavailable_value").decode()
    event = {"op": "u", "before": None, "after": {"id": 1, "blob": b64,
                                                  "tags": ["__debezium_unavailable_value"]}}
    (row,) = parse_text(json.dumps(event), "f", shape, DebeziumOptions())
    assert row[0] == 1 and row[1] is None and row[2] is None
    assert row[5] == ["id"]


def test_table_filter():
    opts = parse_options({"table": "public.customers"})
    text = (FIXTURES / "postgres" / "customers-0001.json").read_text()
    assert len(list(parse_text(text, "f", PG_SHAPE, opts))) == 6
    assert list(parse_text(text, "f", PG_SHAPE, parse_options({"table": "orders"}))) == []


def test_non_numeric_position_is_a_located_error():
    event = {"op": "c", "after": {"id": 1}, "source": {"lsn": "0/16B3748"}}
    shape = TableShape((("id", "Int32"),), ("id",))
    with pytest.raises(SourceError, match="source position") as err:
        list(parse_text("\n" + json.dumps(event), "f.json", shape, DebeziumOptions()))
    assert err.value.line == 2


def test_images_sent_as_json_text_are_read():
    event = {"op": "c", "after": json.dumps({"id": 5, "name": "doc"}), "source": {"ts_ms": 1}}
    shape = TableShape((("id", "Int32"), ("name", "String")), ("id",))
    (row,) = parse_text(json.dumps(event), "f.json", shape, DebeziumOptions())
    assert row[:3] == (5, "doc", OP_INSERT)
    with pytest.raises(SourceError, match="'after' is not an object"):
        list(parse_text('{"op": "c", "after": 7}', "f.json", shape, DebeziumOptions()))
