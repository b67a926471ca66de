"""Pure parsing of AWS DMS S3 CSV files (no JVM)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import get_format
from mirrorspec.sources.aws_dms import is_full_load_file, parse_csv, parse_options
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE
from mirrorspec.sources.debezium import TableShape

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "aws_dms"
SHAPE = TableShape((("id", "Int32"), ("last_name", "String"), ("first_name", "String"),
                    ("hire_date", "IDate"), ("city", "String"), ("salary", "Double")), ("id",))
W = len(SHAPE.columns)


def days(y, m, d):
    return (dt.date(y, m, d) - dt.date(1970, 1, 1)).days


def parse(path: Path, shape=SHAPE, **options):
    rows = parse_csv(path.read_text(), str(path), shape, parse_options(options))
    width = len(shape.columns)
    return [dict(zip(shape.names, r[:width]), op=r[width], order=r[width + 1],
                 present=r[width + 2], line=r[width + 4]) for r in rows]


def test_full_load_without_op_and_with_timestamp_column():
    rows = parse(FIXTURES / "csv" / "LOAD00000001.csv", timestamp_column="ts")
    assert [r["op"] for r in rows] == [OP_INSERT] * 3
    assert rows[0] == {"id": 101, "last_name": "Smith", "first_name": "Bob",
                       "hire_date": days(2014, 6, 4), "city": "New York", "salary": 5000.5,
                       "op": OP_INSERT, "present": None, "line": 1,
                       "order": (0, None, str(FIXTURES / "csv" / "LOAD00000001.csv"), 1)}
    assert rows[1]["salary"] is None  # DMS writes NULL as an empty field by default
    assert rows[2]["last_name"] == "O'Brien, Jr."


def test_cdc_rows_carry_op_then_timestamp():
    path = FIXTURES / "csv" / "20231114-101300000.csv"
    rows = parse(path, timestamp_column="ts")
    assert [(r["op"], r["id"], r["city"]) for r in rows] == [
        (OP_UPDATE, 104, "Portland"), (OP_UPDATE, 104, "Tacoma"), (OP_INSERT, 105, "Austin")]
    # the timestamp orders CDC changes: Tacoma (10:12:05) before Portland (10:12:10)
    assert sorted(rows, key=lambda r: r["order"])[0]["city"] == "Tacoma"
    assert rows[0]["order"][:2] == (1, "2023-11-14 10:12:10.000000")
    # a quoted field spanning two lines: the row starts on line 3
    assert rows[2]["first_name"] == "Multi\nLine" and rows[2]["line"] == 3
    cdc = parse(FIXTURES / "csv" / "20231114-101200000.csv", timestamp_column="ts")
    assert [r["op"] for r in cdc] == [OP_UPDATE, OP_INSERT, OP_DELETE]
    assert cdc[1]["first_name"] == 'Kim "KJ"'


def test_full_load_files_sort_before_cdc_files():
    load = parse(FIXTURES / "csv" / "LOAD00000001.csv", timestamp_column="ts")
    cdc = parse(FIXTURES / "csv" / "20231114-101200000.csv", timestamp_column="ts")
    assert max(r["order"] for r in load) < min(r["order"] for r in cdc)
    assert is_full_load_file("s3://b/hr/employee/LOAD0000000A.csv")
    assert not is_full_load_file("/x/20231114-101200000.csv")


def test_without_timestamp_column_file_then_row_order():
    text = "I,1,A,B,2020-01-01,X,1\nU,1,A,B,2020-01-01,Y,2\n101,A,B,2020-01-01,Z,3\n"
    rows = list(parse_csv(text, "cdc/20230101-000000000.csv", SHAPE, parse_options({})))
    ops = [r[W] for r in rows]
    assert ops == [OP_INSERT, OP_UPDATE, OP_INSERT]  # a row without Op (CdcInsertsOnly) inserts
    assert [r[W + 1] for r in rows] == [(1, None, "cdc/20230101-000000000.csv", n)
                                        for n in (1, 2, 3)]


def test_header_maps_columns_by_name_and_custom_null():
    rows = parse(FIXTURES / "csv_header" / "20231115-090000000.csv", header=True,
                 null_value="NULL")
    assert [(r["op"], r["id"]) for r in rows] == [(OP_UPDATE, 201), (OP_DELETE, 202),
                                                   (OP_INSERT, 203)]
    assert rows[0]["first_name"] == "Ann" and rows[0]["last_name"] == "Archer"
    assert rows[2]["salary"] is None and rows[2]["line"] == 4
    load = parse(FIXTURES / "csv_header" / "LOAD00000001.csv", header=True)
    assert [r["op"] for r in load] == [OP_INSERT, OP_INSERT]


def test_no_sup_value_marks_columns_absent():
    text = "U,7,Smith,:none:,2020-01-01,:none:,10\n"
    (row,) = parse_csv(text, "f.csv", SHAPE, parse_options({"no_sup_value": ":none:"}))
    assert row[2] is None and row[4] is None
    assert row[W + 2] == ["id", "last_name", "hire_date", "salary"]


def test_tab_delimiter_without_quoting():
    text = 'I\t1\t"quoted"\tB\t2020-01-01\tX\t1\n'
    (row,) = parse_csv(text, "f.tsv", SHAPE, parse_options({"delimiter": "\\t", "quote": ""}))
    assert row[1] == '"quoted"'


@pytest.mark.parametrize("text, line, words", [
    ("I,1,A,B,2020-01-01,X,1\nX,2,A,B,2020-01-01,X,1\n", 2, "unknown DMS operation 'X'"),
    ("I,1,A,B,2020-01-01,X,1\n\nI,2,A,B\n", 3, "row has 4 fields; expected 6 or 7"),
    ("I,one,A,B,2020-01-01,X,1\n", 1, "column id (field 2): 'one' is not a valid Int32"),
    ("I,1,A,B,2020-13-45,X,1\n", 1,
     "column hire_date (field 5): '2020-13-45' is not a valid IDate"),
])
def test_bad_rows_name_file_and_line(text, line, words):
    with pytest.raises(SourceError) as err:
        list(parse_csv(text, "dms/20230101-000000000.csv", SHAPE, parse_options({})))
    assert err.value.file == "dms/20230101-000000000.csv" and err.value.line == line
    assert words in err.value.message


def test_update_on_keyless_table():
    keyless = TableShape((("id", "Int32"),), ())
    with pytest.raises(SourceError, match="without key columns"):
        list(parse_csv("D,1\n", "f.csv", keyless, parse_options({})))
    assert get_format("aws_dms").infer_schema(str(FIXTURES / "csv"), {}) is None


def test_byte_order_mark_is_not_part_of_the_op():
    rows = list(parse_csv("\ufeffD,1,A,B,2020-01-01,X,1\n", "f.csv", SHAPE, parse_options({})))
    assert rows[0][W] == OP_DELETE
