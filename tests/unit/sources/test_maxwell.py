"""Maxwell's daemon JSON → canonical changes (pure Python parser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.row_image_streams import maxwell_with_positions

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import maxwell
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_TRUNCATE, OP_UPDATE, OP_UPSERT
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.row_images import parse_options

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "maxwell"
SHAPE = TableShape((("id", "Int32"), ("name", "String"), ("description", "String"),
                    ("weight", "Double")), ("id",))
WIDTH = len(SHAPE.columns)


def parse(lines, options=None, shape=SHAPE, skipped=None):
    text = "\n".join(json.dumps(m) for m in lines)
    return list(maxwell.parse_text(text, "maxwell.json", shape, parse_options(options or {}),
                                   skipped))


def brief(rows):
    return [(r[0], r[WIDTH], r[WIDTH + 2]) for r in rows]


def msg(kind, data, old=None, position=None, table="product", **extra):
    message = {"database": "test", "table": table, "type": kind, "ts": 1700000000,
               "xid": 7, "data": data}
    if old is not None:
        message["old"] = old
    if position is not None:
        message["position"] = position
    message.update(extra)
    return message


def test_flink_sample():
    rows = list(maxwell.parse_text((FIXTURES / "flink-maxwell-data.json").read_text(),
                                   "maxwell.json", SHAPE, parse_options({})))
    assert brief(rows) == [(101, OP_INSERT, None), (102, OP_INSERT, None),
                           (106, OP_INSERT, None), (106, OP_UPDATE, None),
                           (101, OP_UPDATE, None), (102, OP_DELETE, None)]


def test_docs_example_position_orders_the_rows():
    shape = TableShape((("id", "Int32"), ("m", "Double"), ("c", "DateTime"),
                        ("comment", "String")), ("id",))
    rows = list(maxwell.parse_text((FIXTURES / "maxwell-docs-insert.json").read_text(),
                                   "maxwell.json", shape, parse_options({})))
    assert [r[1] for r in rows] == [4.2341, 5.444]
    first, second = (r[len(shape.columns) + 1][0] for r in rows)
    assert first < second and first.startswith("master.")


def test_position_sorts_by_binlog_file_number_then_offset():
    assert maxwell.position_key("mysql-bin.999999:900") < maxwell.position_key(
        "mysql-bin.1000000:4")
    assert maxwell.position_key("mysql-bin.000006:99") < maxwell.position_key(
        "mysql-bin.000006:100")


def test_position_going_back_within_a_file_is_a_resend_or_marked_for_the_publisher():
    """Maxwell re-sends from its stored position after a restart: a row at a position (with its
    `xoffset`) the file already sent is dropped when it equals the first copy; one that goes
    back to a position the file never sent is marked `backwards` for the publisher."""
    one = msg("insert", {"id": 1}, position="master.000006:800911", xid=7, xoffset=0)
    two = msg("insert", {"id": 2}, position="master.000006:800911", xid=7, commit=True)
    rows = parse([one, two, one, two,
                  msg("insert", {"id": 3}, position="master.000005:900000", xid=6,
                      commit=True)])
    assert [r[0] for r in rows] == [1, 2, 3]
    assert rows[0][-1] == ("master", 1, (6, 800911, 0), True, False, False)
    assert rows[1][-1][2] == (6, 800911, (1 << 63) - 1)  # the commit row comes last
    assert rows[2][-1][-1] is True and rows[2][WIDTH + 4] == 5


def test_rows_sharing_a_position_without_xoffset_are_not_exact():
    rows = parse([msg("insert", {"id": 1}, position="master.000006:800911", server_id=4),
                  msg("insert", {"id": 1}, position="master.000006:800911", server_id=4)])
    assert len(rows) == 2  # a keyed table: the second lands as an upsert again, harmless
    assert rows[0][-1][:4] == ("server_id 4", 1, (6, 800911, 0), False)


def test_key_in_old_is_a_key_change():
    rows = parse([msg("update", {"id": 2, "name": "n", "description": "d", "weight": 1},
                      old={"id": 1})])
    assert brief(rows) == [(1, OP_DELETE, None), (2, OP_INSERT, None)]


def test_minimal_row_image_update_leaves_columns_absent():
    (row,) = parse([msg("update", {"id": 1, "weight": 2.5}, old={"weight": 1.0})])
    assert row[WIDTH] == OP_UPDATE and row[WIDTH + 2] == ["id", "weight"]


def test_a_bootstrap_replaces_the_table_its_rows_are_upserts_and_ddl_is_counted():
    """bootstrap-start is a truncate (the bootstrap's rows are the whole table), the rows are
    upserts on a keyed table; both ends are noted for the reader (it holds back a bootstrap
    that has not completed)."""
    skipped: dict[str, int] = {}
    notes: list = []
    rows = list(maxwell.parse_text("\n".join(json.dumps(m) for m in [
        msg("bootstrap-start", {}), msg("bootstrap-insert", {"id": 1, "name": "a"}),
        msg("bootstrap-complete", {}),
        {"type": "table-alter", "database": "test", "table": "product", "ts": 1}]),
        "maxwell.json", SHAPE, parse_options({}), skipped, notes))
    assert brief(rows) == [(None, OP_TRUNCATE, None), (1, OP_UPSERT, None)]
    assert skipped == {"ddl": 1}
    assert [(n[0], n[3]) for n in notes] == [("bootstrap-start", 1), ("truncate", 1),
                                             ("bootstrap-complete", 3)]
    # with options.table, another table's markers and DDL are not this table's
    skipped, notes = {}, []
    assert list(maxwell.parse_text("\n".join(json.dumps(m) for m in [
        msg("bootstrap-start", {}, table="orders"),
        {"type": "table-create", "database": "test", "table": "orders", "ts": 1}]),
        "maxwell.json", SHAPE, parse_options({"table": "product"}), skipped, notes)) == []
    assert skipped == {} and notes == []


def test_maxwell_docs_bootstrap_of_a_table_without_keys():
    """The bootstrapping page's own example: a keyless table, two inserts, a bootstrap. As the
    page shows it (no positions) and with positions alike, the rows land as sent."""
    shape = TableShape((("txt", "String"),), ())
    text = (FIXTURES / "maxwell-docs-bootstrap.json").read_text()
    for feed in (text, maxwell_with_positions(text)):
        rows = list(maxwell.parse_text(feed, "maxwell.json", shape, parse_options({})))
        assert [(r[0], r[1]) for r in rows] == [("hello", OP_INSERT), ("bootstrap!", OP_INSERT),
                                                (None, OP_TRUNCATE), ("hello", OP_INSERT),
                                                ("bootstrap!", OP_INSERT)]


def test_an_unfinished_bootstrap_holds_back_its_files():
    def note(kind, file, line):
        return {"kind": kind, "details": [], "file": file, "line": line}

    files = ["1.json", "2.json", "3.json"]
    start, complete = maxwell.BOOTSTRAP_START, maxwell.BOOTSTRAP_COMPLETE
    assert maxwell.plan_batch([note(start, "2.json", 5)], files, {}).held == ["2.json", "3.json"]
    assert maxwell.plan_batch([note(start, "2.json", 5), note(complete, "3.json", 1)],
                              files, {}).held == []
    # a rerun after a crash: the first bootstrap never completes, the second does
    assert maxwell.plan_batch([note(start, "1.json", 5), note(start, "2.json", 1),
                               note(complete, "3.json", 9)], files, {}).held == []
    # ... or not yet: everything from the first start waits
    assert maxwell.plan_batch([note(start, "1.json", 5), note(complete, "1.json", 9),
                               note(start, "2.json", 1), note(start, "3.json", 1)],
                              files, {}).held == ["2.json", "3.json"]


def test_rows_without_a_position_sort_after_the_positioned_row_before_them():
    """Bootstrap rows carry no position: they keep their place in the feed (after the binlog
    rows before them, before those after), and their own `source` position stays None."""
    notes: list = []
    rows = list(maxwell.parse_text("\n".join(json.dumps(m) for m in [
        msg("bootstrap-start", {}), msg("bootstrap-insert", {"id": 9}),
        msg("insert", {"id": 1}, position="master.000006:100"),
        msg("bootstrap-start", {}), msg("bootstrap-insert", {"id": 1}),
        msg("bootstrap-complete", {}),
        msg("update", {"id": 1, "name": "x"}, position="master.000006:200")]),
        "maxwell.json", SHAPE, parse_options({}), None, notes))
    orders = [r[WIDTH + 1] for r in rows]
    assert [o[0] is None for o in orders[:2]] == [True, True]  # before any position: the reader's
    p100 = maxwell.position_key("master.000006:100")
    assert [o[0] for o in orders[2:5]] == [p100, p100, p100]
    assert [o[4] for o in orders[2:5]] == [p100, None, None]
    assert sorted(orders[2:], key=lambda o: (o[0], o[1], o[2], o[3])) == orders[2:]
    assert notes[-1][:2] == ("positions", [maxwell.position_key("master.000006:200")])
def test_unknown_type_names_file_line_and_field():
    with pytest.raises(SourceError) as caught:
        parse([msg("insert", {"id": 1}), msg("replace", {"id": 1})])
    assert caught.value.line == 2 and "unknown Maxwell type 'replace'" in caught.value.message


def test_set_columns_are_json_text_and_zero_dates_null():
    shape = TableShape((("id", "Int32"), ("tags", "String"), ("at", "DateTime")), ("id",))
    (row,) = parse([msg("insert", {"id": 1, "tags": ["a", "b"], "at": "0000-00-00 00:00:00"})],
                   shape=shape)
    assert row[1] == '["a","b"]' and row[2] is None


def test_table_option_routes_a_database_stream():
    lines = [msg("insert", {"id": 1}), msg("insert", {"id": 2}, table="orders")]
    assert [r[0] for r in parse(lines, {"table": "test.orders"})] == [2]
    with pytest.raises(SourceError, match="mixes tables"):
        parse(lines)


def test_inference_reads_primary_key_columns():
    schema = maxwell.MaxwellFormat().infer_schema(str(FIXTURES / "flink-maxwell-data.json"), {})
    assert [(c.name, c.data_type) for c in schema.columns] == [
        ("id", "Int64"), ("name", "String"), ("description", "String"), ("weight", "Double")]
    assert schema.key_columns == ("id",)


def test_a_key_change_without_the_whole_new_row_stops_instead_of_nulls():
    """MINIMAL row images: the new key's other columns aren't in the message; landing them as
    NULL would turn absent into NULL."""
    with pytest.raises(SourceError) as caught:
        parse([msg("update", {"id": 2, "weight": 1.0}, old={"id": 1})])
    assert "key change without the whole new row" in caught.value.message
    assert "name" in caught.value.message and "binlog_row_image=FULL" in caught.value.hint
