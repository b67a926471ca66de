"""Avro-encoded Debezium events: console-consumer JSON dumps (union wrappers) and the Confluent
wire format with schemas from .avsc files or a schema registry (tests/support/avro_feed.py)."""

from __future__ import annotations

import decimal
import json

import pytest

from tests.support.avro_feed import FIXTURES, KEY_ID, KEY_SCHEMA, VALUE_ID, VALUE_SCHEMA, Registry, envelope, \
    wire_line
from mirrorspec.base.errors import SourceError
from mirrorspec.sources.avro import connect_schema
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE
from mirrorspec.sources.debezium import (DebeziumFormat, DebeziumOptions, TableShape,
                                         data_type_for, parse_text, row_fields)

SHAPE = TableShape((("id", "Int32"), ("name", "String"), ("balance", "Double"),
                    ("created_at", "DateTime"), ("birth_date", "IDate"), ("rating", "Int16")),
                   ("id",))
ROW = {"id": 1, "name": "Sally", "balance": decimal.Decimal("1234.50"),
       "created_at": 1699990000123456, "birth_date": 19000, "rating": 4}
AVSC_VALUE = str(FIXTURES / "customers-value.avsc")


def rows_of(parse, data, file="f"):
    return [dict(zip(SHAPE.names + ("op",), r)) for r in parse(data, file, SHAPE,
                                                               DebeziumOptions())]


def decoder(avro: dict):
    parse, binary = DebeziumFormat().record_decoder({"avro": avro})
    return parse


def test_avro_logical_types_map_to_the_json_readers_column_types():
    fields = {f["field"]: data_type_for(f) for f in row_fields(connect_schema(VALUE_SCHEMA))}
    assert fields == {"id": "Int32", "name": "String", "balance": "Double",
                      "created_at": "DateTime", "birth_date": "IDate", "rating": "Int16"}
    plain = connect_schema({"type": "record", "name": "R", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "scale": 3,
                               "precision": 9}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}}]})
    assert [(f["name"], f.get("parameters")) for f in plain["fields"]] == [
        ("org.apache.kafka.connect.data.Decimal", {"scale": "3"}),
        ("org.apache.kafka.connect.data.Timestamp", None),
        ("org.apache.kafka.connect.data.Date", None)]


# kafka-avro-console-consumer prints Avro's JSON encoding: unions wrapped by branch name
DUMP = "\n".join(json.dumps(v) for v in [
    {"before": None, "after": {"server1.inventory.customers.Value": {
        "id": 1, "name": {"string": "Sally"}, "balance": {"bytes": "\u0001\u00e2\u00a6"},
        "created_at": {"long": 1699990000123456}, "birth_date": {"int": 19000},
        "rating": {"int": 4}}},
     "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "server1",
                "ts_ms": 1, "snapshot": {"string": "false"}, "db": "inventory",
                "sequence": {"string": "[\"10\",\"20\"]"}, "schema": "inventory",
                "table": "customers", "txId": {"long": 5}, "lsn": {"long": 20}},
     "op": "c", "ts_ms": {"long": 2}},
    {"before": {"server1.inventory.customers.Value": {"id": 1, "name": None, "balance": None,
                                                      "created_at": None, "birth_date": None,
                                                      "rating": None}},
     "after": None, "op": "d", "ts_ms": None,
     "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "server1",
                "ts_ms": 1, "snapshot": None, "db": "inventory",
                "sequence": {"string": "[\"30\",\"40\"]"}, "schema": "inventory",
                "table": "customers", "txId": None, "lsn": {"long": 40}}}])


def test_console_consumer_dump_with_the_writers_schema():
    rows = rows_of(decoder({"value_schema": AVSC_VALUE}), DUMP)
    assert rows[0]["op"] == OP_INSERT and rows[0]["name"] == "Sally"
    assert rows[0]["balance"] == pytest.approx(1235.58)  # bytes 0x01e2a6 = 123558, scale 2
    assert rows[0]["created_at"] == 1699990000123456 and rows[0]["birth_date"] == 19000
    assert rows[1]["op"] == OP_DELETE and rows[1]["id"] == 1


def test_console_consumer_dump_without_a_schema_unwraps_by_shape():
    """Read as a plain debezium feed: no wrapper lands as text, no key as NULL."""
    shape = TableShape((("id", "Int32"), ("name", "String"), ("birth_date", "IDate")), ("id",))
    rows = list(parse_text(DUMP, "dump.json", shape, DebeziumOptions()))
    assert rows[0][:3] == (1, "Sally", 19000) and rows[1][:2] == (1, None)
    assert rows[0][4][:3] == (1, 10, 20)  # the position came out of its wrappers
    rows = list(decoder({})(DUMP, "dump.json", shape, DebeziumOptions()))  # the same rule
    assert rows[0][:3] == (1, "Sally", 19000)
    # a bytes decimal has no scale without the schema: a located error, never a wrong number
    with pytest.raises(SourceError, match="column 'balance'") as err:
        rows_of(decoder({}), DUMP, file="dump.json")
    assert err.value.line == 1


def wire_feed() -> bytes:
    lines = [wire_line(envelope("c", ROW, None, lsn=100, commit=90), 1),
             wire_line(envelope("u", {**ROW, "name": "Sal", "balance": None}, ROW, lsn=200,
                                commit=190), 1),
             wire_line(None, 1)]  # a tombstone
    return ("\n".join(lines) + "\n").encode()


def test_wire_format_with_schemas_from_avsc_files():
    parse = decoder({"encoding": "confluent",
                     "schemas": {VALUE_ID: AVSC_VALUE,
                                 KEY_ID: str(FIXTURES / "customers-key.avsc")}})
    rows = rows_of(parse, wire_feed())
    assert [r["op"] for r in rows] == [OP_INSERT, OP_UPDATE]
    assert rows[0]["balance"] == pytest.approx(1234.5) and rows[0]["rating"] == 4
    assert rows[1]["name"] == "Sal" and rows[1]["balance"] is None


def test_wire_format_with_a_schema_registry_and_credentials():
    with Registry({VALUE_ID: VALUE_SCHEMA, KEY_ID: KEY_SCHEMA}, auth=("u", "s3cret")) as reg:
        parse = decoder({"encoding": "confluent", "schema_registry_url": reg.url,
                         "schema_registry_username": "u", "schema_registry_password": "s3cret"})
        rows = rows_of(parse, wire_feed())
        assert rows[1]["name"] == "Sal"
        # each id is fetched once per parse task
        assert sorted(reg.requests) == [f"/schemas/ids/{KEY_ID}", f"/schemas/ids/{VALUE_ID}"]
        parse = decoder({"encoding": "confluent", "schema_registry_url": reg.url,
                         "schema_registry_username": "u", "schema_registry_password": "wrong"})
        with pytest.raises(SourceError) as err:
            rows_of(parse, wire_feed())
        assert "HTTP 401" in err.value.message and "wrong" not in err.value.render()


def test_unknown_schema_id_is_located_with_the_id():
    with Registry({KEY_ID: KEY_SCHEMA}) as reg:
        parse = decoder({"encoding": "confluent", "schema_registry_url": reg.url})
        with pytest.raises(SourceError) as err:
            rows_of(parse, b"\n" + wire_feed(), file="feed/a.txt")
    assert err.value.file == "feed/a.txt" and err.value.line == 2
    assert f"schema id {VALUE_ID} is unknown" in err.value.message


def test_registry_down_is_located_and_keeps_credentials_out():
    with Registry({}) as reg:
        url = reg.url
    parse = decoder({"encoding": "confluent", "timeout": 2,
                     "schema_registry_url": url.replace("http://", "http://u:pw@"),
                     "schema_registry_timeout_seconds": 2})
    with pytest.raises(SourceError) as err:
        rows_of(parse, wire_feed(), file="b.txt")
    assert "unreachable" in err.value.message and err.value.line == 1
    assert "pw" not in err.value.render() and url in err.value.message


def test_a_message_not_in_the_wire_format_is_located():
    parse = decoder({"encoding": "confluent", "schemas": {VALUE_ID: AVSC_VALUE}})
    with pytest.raises(SourceError, match="Confluent wire format") as err:
        rows_of(parse, b"eyJvcCI6ICJjIn0=\n")  # base64 of a JSON text
    assert err.value.line == 1


def test_compile_infers_columns_from_the_value_schema():
    inferred = DebeziumFormat().infer_schema("feed", {"avro": {"value_schema": AVSC_VALUE}})
    assert [(c.name, c.data_type) for c in inferred.columns] == [
        ("id", "Int32"), ("name", "String"), ("balance", "Double"), ("created_at", "DateTime"),
        ("birth_date", "IDate"), ("rating", "Int16")]


def test_wire_lines_accept_base64_broken_into_chunks():
    """Spark's base64() breaks its output every 76 characters; Kafka staging makes the breaks
    spaces."""
    parse = decoder({"encoding": "confluent", "schemas": {VALUE_ID: AVSC_VALUE,
                                                          KEY_ID: str(FIXTURES / "customers-key.avsc")}})
    chunked = []
    for line in wire_feed().decode().splitlines():
        key, _, value = line.partition("\t")
        chunked.append(key + "\t" + " ".join(value[i:i + 76] for i in range(0, len(value), 76)))
    assert any(" " in line for line in chunked)
    rows = rows_of(parse, ("\n".join(chunked) + "\n").encode())
    assert [r["name"] for r in rows] == ["Sally", "Sal"]


def test_unwrapped_rows_in_avro_json_lose_their_wrappers():
    """ExtractNewRecordState rows printed by kafka-avro-console-consumer: nullable columns and
    the added fields are unions too."""
    shape = TableShape((("id", "Int32"), ("name", "String")), ("id",))
    text = json.dumps({"id": 1, "name": {"string": "pen"}, "__op": {"string": "u"},
                       "__lsn": {"long": 7}, "__deleted": {"string": "false"}})
    rows = list(parse_text(text, "u.json", shape, DebeziumOptions()))
    assert rows[0][:3] == (1, "pen", OP_UPDATE) and rows[0][3][2] == 7


def test_object_container_files_carry_their_schema():
    """A sink connector's .avro files (fastavro writes one as the S3 sink's AvroFormat does)."""
    import io

    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(VALUE_SCHEMA), [
        envelope("c", ROW, None, lsn=100, commit=90),
        envelope("d", None, ROW, lsn=200, commit=190)])
    rows = rows_of(decoder({"encoding": "container"}), out.getvalue(), file="part-0.avro")
    assert [(r["op"], r["id"]) for r in rows] == [(OP_INSERT, 1), (OP_DELETE, 1)]
    assert rows[0]["balance"] == pytest.approx(1234.5) and rows[0]["rating"] == 4
    with pytest.raises(SourceError, match="container file") as err:
        rows_of(decoder({"encoding": "container"}), b"not avro", file="bad.avro")
    assert err.value.file == "bad.avro"


def test_logical_type_objects_of_an_avro_decoder_land_like_their_json_values():
    """fastavro gives container files' logical types as Python objects."""
    import datetime as dt
    import uuid

    from mirrorspec.sources.debezium.types import coerce, decode, field_kind

    def land(value, name, data_type):
        return coerce(decode(value, field_kind({"type": "x", "name": name})), data_type)

    utc = dt.timezone.utc
    assert land(dt.datetime(2023, 11, 14, 19, 26, 40, 123456, tzinfo=utc),
                "org.apache.kafka.connect.data.Timestamp", "DateTime") == 1699990000123456
    assert land(dt.date(2022, 1, 8), "org.apache.kafka.connect.data.Date", "IDate") == 19000
    assert land(dt.time(10, 20, 30, 5), "io.debezium.time.MicroTime", "String") == \
        "10:20:30.000005"
    assert land(decimal.Decimal("12.50"), "org.apache.kafka.connect.data.Decimal",
                "String") == "12.50"
    assert land(uuid.UUID(int=1), "", "String") == "00000000-0000-0000-0000-000000000001"


def test_plain_json_map_values_that_look_like_avro_wrappers_stay_maps():
    """A JsonConverter row (no Avro anywhere): a map column with one key that contains a dot or
    is named like an Avro type is data, not a union wrapper (only Debezium's own envelope
    schema says where unions are)."""
    shape = TableShape((("id", "Int32"), ("labels", "String"), ("counts", "String")), ("id",))
    event = {"op": "c", "after": {"id": 1, "labels": {"app.kubernetes.io/name": "web"},
                                  "counts": {"long": "5"}},
             "source": {"connector": "postgresql", "lsn": 10}}
    (row,) = parse_text(json.dumps(event), "maps.json", shape, DebeziumOptions())
    assert json.loads(row[1]) == {"app.kubernetes.io/name": "web"}
    assert json.loads(row[2]) == {"long": "5"}
    # an unwrapped (ExtractNewRecordState) row with plain __ fields: the same
    row = json.dumps({"id": 2, "labels": {"app.kubernetes.io/name": "web"},
                      "counts": {"long": "5"}, "__op": "c"})
    (parsed,) = parse_text(row, "maps.json", shape, DebeziumOptions())
    assert json.loads(parsed[1]) == {"app.kubernetes.io/name": "web"}
    assert json.loads(parsed[2]) == {"long": "5"}


def test_a_wire_body_with_bytes_left_after_the_record_is_located():
    """A registry's schema with fewer fields than the writer's (schema ids collide across
    registries): the record decodes, but bytes are left over — never columns silently NULL."""
    writer = json.loads(json.dumps(VALUE_SCHEMA))
    writer["fields"].append({"name": "ts_us", "type": ["null", "long"], "default": None})
    datum = {**envelope("c", ROW, None, lsn=100, commit=90), "ts_us": 1700000000000000}
    import base64 as b64

    from tests.support.avro_feed import framed

    key = b64.b64encode(framed(KEY_SCHEMA, KEY_ID, {"id": 1})).decode()
    value = b64.b64encode(framed(writer, VALUE_ID, datum)).decode()
    good = wire_line(envelope("c", ROW, None, lsn=50, commit=40), 1)
    parse = decoder({"encoding": "confluent", "schemas": {VALUE_ID: AVSC_VALUE,
                                                          KEY_ID: str(FIXTURES / "customers-key.avsc")}})
    with pytest.raises(SourceError, match="byte\\(s\\) left after the record") as err:
        rows_of(parse, f"{good}\n{key}\t{value}\n".encode(), file="staged.jsonl")
    assert (err.value.file, err.value.line) == ("staged.jsonl", 2)
    assert "schema id 7" in err.value.message
