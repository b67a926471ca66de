"""The Debezium MongoDB connector's events and MongoDB Extended JSON (no JVM). Fixture:
tests/fixtures/debezium/producers/mongodb-customers.json (README.md there says where from)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import extended_json, infer_schema
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE
from mirrorspec.sources.debezium import DebeziumOptions, TableShape, parse_text

FEED = Path(__file__).resolve().parents[2] / "fixtures" / "debezium" / "producers" / \
    "mongodb-customers.json"
UTC = dt.timezone.utc


def shape():
    schema = infer_schema("debezium", str(FEED), {})
    return TableShape(tuple((c.name, c.data_type) for c in schema.columns), schema.key_columns)


def test_columns_and_the_id_key_are_inferred_from_the_documents():
    schema = infer_schema("debezium", str(FEED), {})
    assert schema.key_columns == ("_id",)
    assert [(c.name, c.data_type) for c in schema.columns] == [
        ("_id", "Int64"), ("first_name", "String"), ("last_name", "String"), ("email", "String"),
        ("balance", "Double"), ("joined", "DateTime"), ("ref", "String"), ("avatar", "ByteArray"),
        ("visits", "Int64"), ("score", "Double"), ("address", "String")]
    assert not schema.columns[0].nullable


def test_create_update_description_full_update_patch_and_key_only_delete():
    table = shape()
    width = len(table.columns)
    rows = [(dict(zip(table.names, r[:width])), r[width], r[width + 2])
            for r in parse_text(FEED.read_text(), FEED.name, table, DebeziumOptions())]
    assert [(r["_id"], op) for r, op, _ in rows] == [
        (1004, OP_INSERT), (1005, OP_INSERT), (1004, OP_UPDATE), (1005, OP_UPDATE),
        (1004, OP_UPDATE), (1005, OP_DELETE)]
    anne, bob = rows[0][0], rows[1][0]
    assert anne["balance"] == 12.5 and anne["ref"] == "5d505646cf6d4fe581014ab2"
    joined = int((dt.datetime(2026, 7, 3, 17, 59, 45, 729000, tzinfo=UTC)
                  - dt.datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)
    assert anne["joined"] == joined and bob["joined"] == joined  # v1 ms and v2 {$numberLong}
    assert anne["avatar"] == b"\x01\x02\x03" and bob["avatar"] == b"\x04\x05\x06"
    assert anne["visits"] == 3 and bob["visits"] == 7 and bob["score"] == 1.25
    assert json.loads(anne["address"]) == {"city": "Oslo", "since": "2026-07-03T17:59:45.729Z"}
    # updateDescription: updated fields set, removed fields NULL, the rest absent (completed)
    update, _, present = rows[2]
    assert update["first_name"] == "Anne Marie" and update["avatar"] is None
    assert sorted(present) == ["_id", "avatar", "first_name", "joined"]
    full, _, present = rows[3]  # relaxed mode `after`
    assert full["first_name"] == "Bobby" and full["visits"] == 8 and present is None
    patch, _, present = rows[4]  # 1.x oplog: $set with the key from `filter`
    assert patch["last_name"] == "K." and patch["visits"] == 4
    assert sorted(present) == ["_id", "last_name", "visits"]


def test_extended_json_canonical_and_relaxed_values():
    doc = extended_json.loads(json.dumps({
        "a": {"$numberLong": "9007199254740993"}, "b": {"$numberInt": "-4"},
        "c": {"$numberDouble": "-Infinity"}, "d": {"$numberDecimal": "1.10"},
        "e": {"$date": "1970-01-02T00:00:00Z"}, "f": {"$timestamp": {"t": 60, "i": 1}},
        "g": {"$binary": {"base64": "qqqqqqqqqqqqqqqqqqqqqg==", "subType": "04"}},
        "h": {"$uuid": "00112233-4455-6677-8899-aabbccddeeff"},
        "i": {"$regularExpression": {"pattern": "^a", "options": "i"}},
        "j": {"$minKey": 1}, "k": [{"$numberLong": "1"}, {"$numberDecimal": "2.5"}],
        "l": {"$undefined": True}, "m": {"$symbol": "s"}}))
    assert doc["a"] == 9007199254740993 and doc["b"] == -4 and doc["c"] == float("-inf")
    assert doc["d"] == decimal.Decimal("1.10")
    assert doc["e"] == dt.datetime(1970, 1, 2, tzinfo=UTC)
    assert doc["f"] == dt.datetime(1970, 1, 1, 0, 1, tzinfo=UTC)
    assert doc["g"] == "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    assert doc["h"] == "00112233-4455-6677-8899-aabbccddeeff"
    assert doc["i"] == "/^a/i" and doc["j"] == "MinKey" and doc["k"] == [1, "2.5"]
    assert doc["l"] is None and doc["m"] == "s"


def test_bad_extended_json_and_nested_updates_are_located_errors():
    table = TableShape((("_id", "Int64"), ("n", "Int64"), ("address", "String")), ("_id",))
    bad = {"op": "c", "after": json.dumps({"_id": {"$numberLong": "x1"}, "n": 1})}
    with pytest.raises(SourceError) as err:
        list(parse_text("\n" + json.dumps(bad), "m.json", table, DebeziumOptions()))
    assert err.value.line == 2 and "$numberLong" in err.value.message
    nested = {"key": {"id": "7"}, "value": {"op": "u", "updateDescription": {
        "updatedFields": json.dumps({"address.city": "Oslo"}), "removedFields": None}}}
    with pytest.raises(SourceError) as err:
        list(parse_text(json.dumps(nested), "m.json", table, DebeziumOptions()))
    assert "nested field 'address.city'" in err.value.message
    assert "change_streams_update_full" in err.value.hint
    keyless = {"op": "u", "updateDescription": {"updatedFields": "{}"}}
    with pytest.raises(SourceError) as err:
        list(parse_text(json.dumps(keyless), "m.json", table, DebeziumOptions()))
    assert "without the document's key" in err.value.message


def test_object_id_keys_from_the_kafka_key():
    table = TableShape((("_id", "String"), ("n", "Int64")), ("_id",))
    record = {"key": {"id": "{\"$oid\": \"5d505646cf6d4fe581014ab2\"}"},
              "value": {"op": "d", "before": None, "source": {"connector": "mongodb"}}}
    (row,) = parse_text(json.dumps(record), "m.json", table, DebeziumOptions())
    assert row[0] == "5d505646cf6d4fe581014ab2" and row[2] == OP_DELETE
