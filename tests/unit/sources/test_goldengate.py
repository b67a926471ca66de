"""GoldenGate for Big Data JSON → canonical changes (pure Python parser)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import goldengate
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_TRUNCATE, OP_UPDATE
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.row_images import parse_options

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "goldengate"
SHAPE = TableShape((("id", "Int32"), ("name", "String"), ("description", "String"),
                    ("weight", "Double")), ("id",))
WIDTH = len(SHAPE.columns)


def parse(lines, options=None, shape=SHAPE):
    text = "\n".join(json.dumps(m) if isinstance(m, dict) else m for m in lines)
    return list(goldengate.parse_text(text, "ogg.json", shape, parse_options(options or {})))


def brief(rows):
    """(id, op, present) of each canonical row."""
    return [(r[0], r[WIDTH], r[WIDTH + 2]) for r in rows]


def msg(op, pos, before=None, after=None, table="HR.ITEMS", **extra):
    message = {"table": table, "op_type": op, "op_ts": "2024-01-02 03:04:05.000000",
               "current_ts": "2024-01-02T03:04:06.000000", "pos": pos}
    if before is not None:
        message["before"] = before
    if after is not None:
        message["after"] = after
    message.update(extra)
    return message


def test_flink_sample_inserts_updates_and_deletes_in_pos_order():
    rows = list(goldengate.parse_text((FIXTURES / "flink-ogg-data.json").read_text(),
                                      "ogg.json", SHAPE, parse_options({})))
    assert brief(rows) == [(101, OP_INSERT, None), (102, OP_INSERT, None),
                           (106, OP_INSERT, None), (106, OP_UPDATE, None),
                           (111, OP_INSERT, None), (111, OP_DELETE, None)]
    assert rows[3][2] == "18oz carpenter hammer"
    orders = [r[WIDTH + 1][0] for r in rows]
    assert orders == sorted(orders) and orders[0].endswith("143")


def test_compressed_update_leaves_missing_columns_absent_not_null():
    rows = parse([msg("I", "00000000010000001000", after={"id": 1, "name": "a",
                                                         "description": "d", "weight": 2.5}),
                  msg("U", "00000000010000001100", before={"id": 1}, after={"name": "b"})])
    (_, update) = rows
    assert update[:WIDTH] == (1, "b", None, None)  # the key came from before
    assert update[WIDTH] == OP_UPDATE and update[WIDTH + 2] == ["id", "name"]


def test_an_explicit_null_is_present():
    (row,) = parse([msg("U", "1", before={"id": 1}, after={"id": 1, "name": None})])
    assert row[WIDTH + 2] == ["id", "name"] and row[1] is None


def test_key_change_is_a_delete_then_an_insert_of_the_merged_images():
    rows = parse([msg("U", "5", before={"id": 1, "name": "a", "description": "d",
                                        "weight": 1.0},
                      after={"id": 2, "weight": 3.0})])
    assert brief(rows) == [(1, OP_DELETE, None), (2, OP_INSERT, None)]
    assert rows[1][:WIDTH] == (2, "a", "d", 3.0)
    assert rows[0][WIDTH + 1][3] < rows[1][WIDTH + 1][3]


def test_truncate_is_a_truncate_row():
    (row,) = parse([msg("T", "7")])
    assert row[WIDTH] == OP_TRUNCATE and row[:WIDTH] == (None,) * WIDTH


def test_row_modeled_messages_with_tokens():
    """The formatter's row-modeled output: columns at the top level beside the metadata."""
    rows = parse([
        {"table": "HR.ITEMS", "op_type": "I", "op_ts": "x", "current_ts": "y", "pos": "1",
         "primary_keys": ["id"], "tokens": {"R": "AADPkvAAEAAEqL2AAA"}, "id": 7, "name": "n",
         "description": "d", "weight": 1},
        {"table": "HR.ITEMS", "op_type": "U", "pos": "2", "tokens": {}, "id": 7, "weight": 2},
        {"table": "HR.ITEMS", "op_type": "D", "pos": "3", "id": 7}])
    assert brief(rows) == [(7, OP_INSERT, None), (7, OP_UPDATE, ["id", "weight"]),
                           (7, OP_DELETE, None)]


def test_goldengate_datetime_text_with_a_colon_before_the_time():
    shape = TableShape((("id", "Int32"), ("ordered", "DateTime"), ("day", "IDate")), ("id",))
    (row,) = parse([msg("I", "1", after={"id": 1, "ordered": "1994-09-30:15:33:00",
                                         "day": "1994-09-30:00:00:00"})], shape=shape)
    ordered = dt.datetime(1994, 9, 30, 15, 33, tzinfo=dt.timezone.utc)
    assert row[1] == int(ordered.timestamp()) * 1_000_000  # microseconds since the epoch
    assert row[2] == (dt.date(1994, 9, 30) - dt.date(1970, 1, 1)).days


def test_table_option_routes_a_multi_table_feed():
    lines = [msg("I", "1", after={"id": 1}, table="HR.ITEMS"),
             msg("I", "2", after={"id": 2}, table="HR.OTHER")]
    assert [r[0] for r in parse(lines, {"table": "items"})] == [1]
    assert [r[0] for r in parse(lines, {"table": "HR.OTHER"})] == [2]
    with pytest.raises(SourceError) as caught:
        parse(lines)
    assert caught.value.line == 2 and "mixes tables" in caught.value.message
    assert "source.options.table" in caught.value.hint


def test_unknown_op_type_names_file_line_and_field():
    with pytest.raises(SourceError) as caught:
        parse([msg("I", "1", after={"id": 1}), msg("X", "2", after={"id": 1})])
    error = caught.value
    assert (error.file, error.line) == ("ogg.json", 2)
    assert "op_type" in error.message and "'X'" in error.message


def test_pos_going_back_within_a_file_is_a_resend_or_marked_for_the_publisher():
    """A topic dump read twice repeats messages at their own `pos`: the copy is dropped. A
    message going back to a `pos` the file never sent is marked `backwards`: the publisher
    drops it when another file (or an earlier batch) sent it, and stops the table otherwise."""
    first = msg("I", "00000000010000000200", after={"id": 1})
    rows = parse([first, msg("U", "00000000010000000300", after={"id": 1, "name": "b"}),
                  first, msg("I", "00000000010000000100", after={"id": 2})])
    assert [r[0] for r in rows] == [1, 1, 2]
    delivery = [r[-1] for r in rows]
    assert delivery[0] == ("", 1, (0, 10000000200), True, False, False)
    assert delivery[2][-1] is True  # backwards: line 4 went back to a pos the file never sent
    assert rows[2][WIDTH + 4] == 4


def test_pos_beyond_64_bits_is_compared_as_a_number():
    assert goldengate.delivery_of("99999999999999999999") == (99, 999999999999999999)
    assert goldengate.delivery_of("100000000000000000000") > goldengate.delivery_of(
        "99999999999999999999")
    assert goldengate.delivery_of("trail-1") is None and goldengate.delivery_of(None) is None


def test_pos_compares_as_a_number_across_widths():
    rows = parse([msg("I", "999", after={"id": 1}), msg("I", "00001000", after={"id": 2})])
    assert rows[0][WIDTH + 1][0] < rows[1][WIDTH + 1][0]


def test_update_and_delete_need_keys():
    keyless = TableShape(SHAPE.columns, ())
    with pytest.raises(SourceError, match="without key columns"):
        parse([msg("D", "1", before={"id": 1})], shape=keyless)
    with pytest.raises(SourceError, match="delete without the key"):
        parse([msg("D", "1", before={"name": "x"})])


def test_bad_value_names_the_column():
    with pytest.raises(SourceError) as caught:
        parse([msg("I", "1", after={"id": "abc"})])
    assert "column 'id' (Int32)" in caught.value.message and caught.value.line == 1


def test_inference_reads_columns_and_primary_keys(tmp_path):
    feed = tmp_path / "feed.json"
    feed.write_text(json.dumps(msg("I", "1", after={"ID": 1, "NAME": "x", "PRICE": 1.5},
                                   primary_keys=["ID"])) + "\n")
    schema = goldengate.GoldenGateFormat().infer_schema(str(feed), {})
    assert [(c.name, c.data_type) for c in schema.columns] == [
        ("ID", "Int64"), ("NAME", "String"), ("PRICE", "Double")]
    assert schema.key_columns == ("ID",)


def test_a_key_change_with_compressed_images_stops_instead_of_nulls():
    with pytest.raises(SourceError) as caught:
        parse([msg("U", "5", before={"id": 1}, after={"id": 2, "weight": 3.0})])
    assert "key change without the whole new row" in caught.value.message
    assert "GETUPDATEBEFORES" in caught.value.hint


def test_a_compressed_update_takes_unchanged_columns_from_its_own_before_image():
    """GoldenGate's operation-modeled update carries a before and an after image ("Using the
    Pluggable Formatters", GoldenGate for Big Data 19.1); with compressed updates the after
    image holds the key and the changed columns only, while UPDATERECORDFORMAT FULL (the
    default, Oracle GoldenGate reference) puts every column in the before image. The columns
    the after image lacks are unchanged: their value is the before image's, even for a row no
    earlier change (and no mirrored row) holds."""
    (row,) = parse([msg("U", "00000000010000002000",
                        before={"id": 7, "name": "old name", "description": "kept",
                                "weight": None},
                        after={"id": 7, "name": "new name"})])
    assert row[:WIDTH] == (7, "new name", "kept", None)
    assert row[WIDTH] == OP_UPDATE and row[WIDTH + 2] is None  # whole: nothing to complete


def test_a_compressed_update_without_a_full_before_image_stays_partial():
    (row,) = parse([msg("U", "5", before={"id": 7, "name": "old"}, after={"name": "new"})])
    assert row[WIDTH + 2] == ["id", "name"]  # description and weight: completion's to find


def test_rows_carry_their_source_position_in_the_order():
    rows = parse([msg("I", "00000000010000001000", after={"id": 1}),
                  msg("T", "00000000010000001100")])
    assert [r[WIDTH + 1][4] for r in rows] == [r[WIDTH + 1][0] for r in rows]
    assert rows[0][WIDTH + 1][4].endswith("10000001000")
