"""Debezium's unavailable-value placeholder in every form a connector sends it, and the event's
own before image as a source of the value (mirrorspec/sources/debezium/placeholders.py).

Shapes after Debezium's own code and tests (https://github.com/debezium/debezium at aad5519902):
`debezium-connector-postgres/.../UnchangedToastedPlaceholder.java` (the forms per column type),
`PostgresValueConverter.java` (bytea, hex mode, hstore as JSON text) and
`RecordsStreamProducerIT.java` (DBZ-5936: `int_array int[]` and `bigint_array bigint[]` with
`SET STORAGE EXTENDED`, updated through another column; DBZ-6122: `date[]`, `bytea[]`)."""

from __future__ import annotations

import base64
import decimal
import json

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import OP_UPDATE, value_converter
from mirrorspec.sources.debezium import (DebeziumOptions, TableShape, coerce, parse_options,
                                         parse_text)
from mirrorspec.sources.debezium.placeholders import Placeholder

PLACEHOLDER = "__debezium_unavailable_value"
BYTES = PLACEHOLDER.encode()
NUMBERS = list(BYTES)  # [95, 95, 100, 101, 98, …]: one number per octet


def schema(array_of: str | None, name: str | None = None) -> dict:
    """A JsonConverter value schema: id int32, not_toast int32, int_array (an array, or a
    plain field of `name`)."""
    field = ({"type": "array", "items": {"type": array_of, "optional": True}, "optional": True}
             if array_of else {"type": name or "string", "optional": True})
    row = {"type": "struct", "optional": True, "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "not_toast", "type": "int32", "optional": True},
        {"field": "int_array", **field}]}
    return {"type": "struct", "fields": [{**row, "field": "before"}, {**row, "field": "after"}]}


def update(value, before=None, schema_=None) -> str:
    payload = {"before": before, "after": {"id": 1, "not_toast": 2, "int_array": value},
               "op": "u", "source": {"connector": "postgresql", "lsn": 200,
                                     "sequence": '["100","200"]'}}
    return json.dumps({"schema": schema_, "payload": payload} if schema_ else payload)


SHAPE = TableShape((("id", "Int32"), ("not_toast", "Int32"), ("int_array", "String")), ("id",))


def parsed(text: str, options: DebeziumOptions = DebeziumOptions()):
    return list(parse_text(text, "toast.json", SHAPE, options))


@pytest.mark.parametrize("form, kind", [
    (NUMBERS, "int32"),                                   # integer[], date[] (DBZ-5936)
    (NUMBERS, "int64"),                                   # bigint[] (DBZ-5936)
    ([PLACEHOLDER], "string"),                            # text[], varchar[], json[], jsonb[]
    ([base64.b64encode(BYTES).decode()], "bytes"),        # bytea[] (DBZ-6122)
    (["b68a35a7-17ad-35b3-af2a-ae46edb4545a"], "string"),  # uuid[]: UUID.nameUUIDFromBytes
])
def test_an_array_placeholder_of_any_element_type_is_an_absent_column(form, kind):
    (row,) = parsed(update(form, schema_=schema(kind)))
    assert row[3] == OP_UPDATE and row[5] == ["id", "not_toast"]  # int_array absent
    assert row[2] is None  # never the placeholder's text


@pytest.mark.parametrize("form, name", [
    (PLACEHOLDER, "string"),                                    # text, json, xml, bytea (hex)
    (base64.b64encode(BYTES).decode(), "bytes"),                 # bytea
    ({PLACEHOLDER: PLACEHOLDER}, "map"),                         # hstore (map mode)
    (json.dumps({PLACEHOLDER: PLACEHOLDER}, separators=(",", ":")), "string"),  # hstore json
])
def test_a_scalar_or_map_placeholder_is_an_absent_column(form, name):
    (row,) = parsed(update(form, schema_=schema(None, name)))
    assert row[5] == ["id", "not_toast"]


def test_a_real_array_that_only_starts_like_the_placeholder_is_data():
    (row,) = parsed(update(NUMBERS[:-1], schema_=schema("int32")))
    assert row[5] is None and json.loads(row[2]) == NUMBERS[:-1]


def test_a_configured_placeholder_also_in_hex():
    custom = parse_options({"unavailable_value_placeholder": "toast!"})
    (row,) = parsed(update(list(b"toast!"), schema_=schema("int64")), custom)
    assert row[5] == ["id", "not_toast"]
    octets = parse_options({"unavailable_value_placeholder": "hex:c3bf00"})
    (row,) = parsed(update([-61, -65, 0], schema_=schema("int32")), octets)  # Java's signed bytes
    assert row[5] == ["id", "not_toast"]
    with pytest.raises(ValueError, match="hex"):
        Placeholder("hex:zz")


def test_raw_placeholder_bytes_from_an_avro_decoder_are_absent():
    placeholder = Placeholder()
    assert placeholder.matches(BYTES) and placeholder.matches([BYTES])
    assert not placeholder.matches(b"__debezium")


def test_the_events_own_before_image_completes_what_after_lacks():
    """REPLICA IDENTITY FULL: `before` holds the unchanged value the `after` leaves out; a NULL
    in a key-only before image (REPLICA IDENTITY DEFAULT) is never taken."""
    full = {"id": 1, "not_toast": 10, "int_array": [1, 2, 3]}
    (row,) = parsed(update(NUMBERS, before=full, schema_=schema("int32")))
    assert row[5] is None and json.loads(row[2]) == [1, 2, 3]
    key_only = {"id": 1, "not_toast": None, "int_array": None}
    (row,) = parsed(update(NUMBERS, before=key_only, schema_=schema("int32")))
    assert row[5] == ["id", "not_toast"]


# --- values that aren't their column's type ----------------------------------------------------

@pytest.mark.parametrize("value", [True, "1_000", "١٢٣", "1e3", "12.5", 12.5, "", " ", " 8",
                                   2.0 ** 60, 1 << 31])
def test_an_integer_column_refuses_what_is_not_an_integer(value):
    text = json.dumps({"op": "c", "after": {"id": 1, "not_toast": value, "int_array": None},
                       "source": {"connector": "postgresql", "lsn": 1}})
    with pytest.raises(SourceError, match="column 'not_toast' \\(Int32\\)") as err:
        parsed(text)
    assert err.value.line == 1 and err.value.file == "toast.json"


@pytest.mark.parametrize("value, expected", [(7, 7), ("-7", -7), ("+8", 8), (9.0, 9)])
def test_an_integer_column_reads_integers_and_their_plain_text(value, expected):
    text = json.dumps({"op": "c", "after": {"id": 1, "not_toast": value, "int_array": None},
                       "source": {"connector": "postgresql", "lsn": 1}})
    assert parsed(text)[0][1] == expected


@pytest.mark.parametrize("value", [True, "1_000.5", "٣.٥", "NaN!", " 1.5"])
def test_a_double_column_refuses_what_is_not_a_number(value):
    shape = TableShape((("id", "Int32"), ("x", "Double")), ("id",))
    text = json.dumps({"op": "c", "after": {"id": 1, "x": value}, "source": {"lsn": 1}})
    with pytest.raises(SourceError, match="column 'x' \\(Double\\)"):
        list(parse_text(text, "f.json", shape, DebeziumOptions()))


@pytest.mark.parametrize("data_type", ["Int16", "Int32", "Int64", "Double", "Single"])
def test_numbers_follow_the_rule_every_reader_shares(data_type):
    """Debezium converts integer and number columns by `sources.base.value_converter`: what it
    refuses, Debezium refuses; what it takes, Debezium takes to the same value."""
    shared = value_converter(data_type)
    for value in [True, False, "1_000", "١٢٣", "1e3", "12.5", 12.5, 7, -7, "7", "+7", " 7",
                  7.0, 2.0 ** 60, 1 << 40, "NaN", "-Infinity", "", "0x10"]:
        try:
            expected = shared(value)
        except ValueError:
            with pytest.raises(ValueError):
                coerce(value, data_type)
            continue
        got = coerce(value, data_type)
        assert got == expected or (got != got and expected != expected), (value, got)


def test_a_decimal_is_a_whole_number_or_refused_in_an_integer_column():
    """Only Debezium decodes Decimals (Avro `decimal`, VariableScaleDecimal): an integer column
    takes a whole one, by the shared range; a number column any."""
    assert coerce(decimal.Decimal("12.000"), "Int32") == 12
    assert coerce(decimal.Decimal("1.5"), "Double") == 1.5
    for value, data_type in [(decimal.Decimal("1.5"), "Int32"),
                             (decimal.Decimal(1 << 31), "Int32"),
                             (decimal.Decimal("NaN"), "Int64")]:
        with pytest.raises(ValueError):
            coerce(value, data_type)
