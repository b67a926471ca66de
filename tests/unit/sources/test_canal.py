"""Canal FlatMessage JSON → canonical changes (pure Python parser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import canal
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_TRUNCATE, OP_UPDATE, OP_UPSERT
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.row_images import parse_options

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "canal"
SHAPE = TableShape((("id", "Int32"), ("name", "String"), ("description", "String"),
                    ("weight", "Double")), ("id",))
WIDTH = len(SHAPE.columns)


def parse(lines, options=None, shape=SHAPE, skipped=None):
    text = "\n".join(json.dumps(m) for m in lines)
    return list(canal.parse_text(text, "canal.json", shape, parse_options(options or {}),
                                 skipped))


def brief(rows):
    return [(r[0], r[WIDTH], r[WIDTH + 2]) for r in rows]


def msg(kind, data, old=None, table="products", database="inventory", **extra):
    message = {"data": data, "database": database, "es": 1700000000000, "id": 1,
               "isDdl": False, "mysqlType": {"id": "int(11)", "name": "varchar(255)"},
               "old": old, "pkNames": ["id"], "sql": "", "sqlType": {"id": 4, "name": 12},
               "table": table, "ts": 1700000000100, "type": kind}
    message.update(extra)
    return message


def test_flink_sample_rows_and_the_ddl_message_counted():
    skipped: dict[str, int] = {}
    rows = list(canal.parse_text((FIXTURES / "flink-canal-data.json").read_text(),
                                 "canal.json", SHAPE, parse_options({}), skipped))
    assert brief(rows) == [(101, OP_INSERT, None), (102, OP_INSERT, None),
                           (106, OP_INSERT, None), (111, OP_INSERT, None),
                           (106, OP_UPDATE, None), (111, OP_DELETE, None),
                           (101, OP_UPDATE, None), (102, OP_UPDATE, None)]
    assert rows[0][3] == 3.14 and rows[-1][3] == 5.17  # strings typed by the table
    assert skipped == {"ddl": 1}
    # one message's rows keep their order: (position, file, line, part, source)
    assert [r[WIDTH + 1] for r in rows[:2]] == [(None, "canal.json", 1, 0, None),
                                                (None, "canal.json", 1, 2, None)]


def test_key_in_old_is_a_key_change():
    rows = parse([msg("UPDATE", [{"id": "2", "name": "b", "description": "d",
                                  "weight": "1.5"}], old=[{"id": "1", "name": "a"}])])
    assert brief(rows) == [(1, OP_DELETE, None), (2, OP_INSERT, None)]
    assert rows[0][1] == "a" and rows[1][:WIDTH] == (2, "b", "d", 1.5)


def test_update_lacking_columns_leaves_them_absent():
    (row,) = parse([msg("UPDATE", [{"id": "1", "name": "b"}], old=[{"name": "a"}])])
    assert row[WIDTH + 2] == ["id", "name"] and row[2] is None


def test_truncate_ddl_is_a_truncate_and_other_ddl_is_counted():
    skipped: dict[str, int] = {}
    rows = parse([msg("TRUNCATE", None, isDdl=True, sql="truncate table products"),
                  msg("ALTER", None, isDdl=True, sql="alter table products add x int")],
                 skipped=skipped)
    assert [r[WIDTH] for r in rows] == [OP_TRUNCATE]
    assert skipped == {"ddl": 1}


def test_binary_values_are_latin1_text_of_the_bytes():
    shape = TableShape((("id", "Int32"), ("blob", "ByteArray")), ("id",))
    (row,) = parse([msg("INSERT", [{"id": "1", "blob": "\u00ff\u0000A"}])], shape=shape)
    assert row[1] == b"\xff\x00A"


def test_mysql_zero_dates_read_as_null():
    shape = TableShape((("id", "Int32"), ("at", "DateTime")), ("id",))
    (row,) = parse([msg("INSERT", [{"id": "1", "at": "0000-00-00 00:00:00"}])], shape=shape)
    assert row[1] is None and row[len(shape.columns) + 2] is None  # present, as NULL


def test_data_and_old_of_different_lengths_stop_the_file():
    with pytest.raises(SourceError) as caught:
        parse([msg("INSERT", [{"id": "1"}]),
               msg("UPDATE", [{"id": "1"}, {"id": "2"}], old=[{"name": "x"}])])
    error = caught.value
    assert (error.file, error.line) == ("canal.json", 2)
    assert "'data' has 2 row(s) but 'old' has 1" in error.message


def test_unknown_type_names_file_line_and_field():
    with pytest.raises(SourceError) as caught:
        parse([msg("UPSERT", [{"id": "1"}])])
    assert caught.value.line == 1 and "unknown Canal type 'UPSERT'" in caught.value.message


def test_table_option_routes_by_database_and_table():
    lines = [msg("INSERT", [{"id": "1"}]), msg("INSERT", [{"id": "2"}], table="orders"),
             msg("INSERT", [{"id": "3"}], database="other")]
    assert [r[0] for r in parse(lines, {"table": "inventory.products"})] == [1]
    assert [r[0] for r in parse(lines, {"table": "orders"})] == [2]
    with pytest.raises(SourceError, match="mixes tables"):
        parse(lines)


def test_type_mapping_from_mysql_type_and_sql_type():
    assert canal.data_type_for("bigint(20) unsigned") == "Int64"
    assert canal.data_type_for("int(10) unsigned") == "Int64"
    assert canal.data_type_for("int(11)") == "Int32"
    assert canal.data_type_for("decimal(10,2)") == "Double"
    assert canal.data_type_for("datetime(3)") == "DateTime"
    assert canal.data_type_for("longblob") == "ByteArray"
    assert canal.data_type_for("enum('a','b')") == "String"
    assert canal.data_type_for(None, 93) == "DateTime"
    assert canal.data_type_for(None, 12) == "String"


def test_inference_from_mysql_type_and_pk_names():
    schema = canal.CanalFormat().infer_schema(str(FIXTURES / "flink-canal-data.json"), {})
    assert [(c.name, c.data_type) for c in schema.columns] == [
        ("id", "Int32"), ("name", "String"), ("description", "String"), ("weight", "Single")]
    assert schema.key_columns == ("id",)


@pytest.mark.parametrize("data", ["missing", None, []])
def test_a_row_message_without_rows_is_a_located_error_not_no_row(data):
    """FlatMessage's `data` holds a DML message's rows; a message without them is damaged
    (Flink's canal-json fails on it too) and must not pass as "no change"."""
    message = msg("INSERT", data)
    if data == "missing":
        del message["data"]
    with pytest.raises(SourceError) as caught:
        parse([msg("INSERT", [{"id": "1"}]), message])
    assert (caught.value.file, caught.value.line) == ("canal.json", 2)
    assert "'data'" in caught.value.message


@pytest.mark.parametrize("flag", ["false", "true", 0, 1, "False"])
def test_is_ddl_must_be_a_json_boolean(flag):
    """FlatMessage declares `Boolean isDdl`; the text "false" is truthy in Python and used to
    make an INSERT pass for DDL and vanish."""
    with pytest.raises(SourceError) as caught:
        parse([msg("INSERT", [{"id": "1"}], isDdl=flag)])
    assert caught.value.line == 1 and "'isDdl'" in caught.value.message


def test_is_ddl_absent_or_null_reads_as_a_row_message():
    message = msg("INSERT", [{"id": "1"}])
    del message["isDdl"]
    assert brief(parse([message, msg("INSERT", [{"id": "2"}], isDdl=None)])) == [
        (1, OP_INSERT, None), (2, OP_INSERT, None)]


def test_a_row_type_marked_ddl_is_damaged():
    with pytest.raises(SourceError, match="a DELETE message with 'isDdl': true"):
        parse([msg("DELETE", [{"id": "1"}], isDdl=True)])


def test_dts_init_rows_are_an_initial_load_that_replaces_the_table():
    """Alibaba Cloud DTS writes its full-load rows as `type: INIT` (FLINK-32862): a run of
    INIT messages is an initial load — a truncate, then an upsert per row — and an INIT after
    other row messages is a load run again, replacing the table again."""
    notes: list = []
    rows = list(canal.parse_text(
        "\n".join(json.dumps(m) for m in [
            msg("INIT", [{"id": "1", "name": "a"}, {"id": "2", "name": "b"}]),
            msg("INIT", [{"id": "3", "name": "c"}]),
            msg("UPDATE", [{"id": "1", "name": "a2"}], old=[{"name": "a"}]),
            msg("INIT", [{"id": "1", "name": "a3"}])]),
        "canal.json", SHAPE, parse_options({}), None, notes))
    assert brief(rows) == [(None, OP_TRUNCATE, None), (1, OP_UPSERT, None),
                           (2, OP_UPSERT, None), (3, OP_UPSERT, None),
                           (1, OP_UPDATE, ["id", "name"]),
                           (None, OP_TRUNCATE, None), (1, OP_UPSERT, None)]
    # each truncate sorts before its message's rows
    assert rows[0][WIDTH + 1][3] < rows[1][WIDTH + 1][3]
    assert [(n[0], n[3]) for n in notes] == [
        ("init-start", 1), ("truncate", 1), ("truncate", 4), ("last-kind", 0)]
    assert notes[-1][1] == ["INIT"]


def test_init_rows_of_a_keyless_table_are_inserts():
    keyless = TableShape(SHAPE.columns, ())
    rows = parse([msg("INIT", [{"id": "1"}])], shape=keyless)
    assert [r[WIDTH] for r in rows] == [OP_TRUNCATE, OP_INSERT]


def test_a_load_continuing_from_the_file_before_keeps_its_rows():
    """Where a file starts with INIT rows, the truncate before them is the reader's to drop
    when the file before (or the batch before) ended inside the same load."""
    notes = [{"kind": "init-start", "details": [], "file": "b.json", "line": 1},
             {"kind": "last-kind", "details": ["INIT"], "file": "b.json", "line": 0},
             {"kind": "init-start", "details": [], "file": "c.json", "line": 1},
             {"kind": "last-kind", "details": ["INIT"], "file": "c.json", "line": 0}]
    files = ["a.json", "b.json", "c.json"]
    plan = canal.plan_batch([{"kind": "last-kind", "details": ["UPDATE"], "file": "a.json",
                              "line": 0}] + notes, files, {})
    assert plan.dropped == [("c.json", 1)] and plan.state == {"last_kind": "INIT"}
    plan = canal.plan_batch(notes, files[1:], {"last_kind": "INIT"})
    assert plan.dropped == [("b.json", 1), ("c.json", 1)]
    assert canal.plan_batch([], files, {"last_kind": "INIT"}).state == {"last_kind": "INIT"}


def test_flink_dts_sample_with_init_reads():
    """Flink's canal-json test data for DTS (FLINK-32862): an INIT message, then changes."""
    rows = list(canal.parse_text((FIXTURES / "flink-canal-data-with-init.json").read_text(),
                                 "canal.json", SHAPE, parse_options({})))
    assert brief(rows)[:4] == [(None, OP_TRUNCATE, None), (101, OP_UPSERT, None),
                               (102, OP_UPSERT, None), (106, OP_UPSERT, None)]
    assert brief(rows)[4:] == [(106, OP_UPDATE, None), (110, OP_INSERT, None),
                               (111, OP_DELETE, None)]
