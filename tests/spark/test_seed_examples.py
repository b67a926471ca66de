"""The worked examples of Microsoft's open-mirroring landing-zone specification, run through the engine and compared with the model.

EmployeeLocation update and key change; the TSV `_metadata.json` example with its dialect; file
order by 20-digit sequence (gaps wait) and by LastUpdateTimeFileDetection.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support.reference_model import (
    MARKER, LandingFile, ModelTable, as_multiset, landing_data_files, read_delta_rs, sequence_name,
    write_csv, write_metadata, write_parquet)

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")

EMP = ("EmployeeID", "EmployeeLocation", MARKER)
EMP_TYPES = ("string", "string", "int32")
UPDATE_EXAMPLE = (("E0001", "Redmond", 0), ("E0002", "Redmond", 0), ("E0003", "Redmond", 0),
                  ("E0001", "Bellevue", 1))
KEY_CHANGE_EXAMPLE = (("E0001", "Bellevue", 0), ("E0001", None, 2), ("E0002", "Bellevue", 0))


def mirror(spark, landing, warehouse):
    result = engine.mirror_landing_zone(spark, str(landing), str(warehouse),
                                        engine.MirrorOptions(threads=2))
    return {o.name: o for o in result.tables}


def write(f: LandingFile, table_dir, fmt: str) -> None:
    if fmt == "csv":
        write_csv(LandingFile(f.name.replace(".parquet", ".csv"), f.columns, f.rows, f.types),
                  str(table_dir))
    else:
        write_parquet(f, str(table_dir))


def assert_equals_model(path, model: ModelTable) -> None:
    columns, rows = read_delta_rs(str(path))
    assert columns == model.columns
    assert as_multiset(columns, rows) == model.multiset()


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_employee_location_update_and_key_change(spark, tmp_path, fmt):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    update_dir, change_dir, both_dir = (landing / n for n in ("Update", "KeyChange", "Both"))
    for table_dir in (update_dir, change_dir, both_dir):
        write_metadata(str(table_dir), ["EmployeeID"])
    first = LandingFile(sequence_name(1), EMP, UPDATE_EXAMPLE, EMP_TYPES)
    change = LandingFile(sequence_name(1), EMP, KEY_CHANGE_EXAMPLE, EMP_TYPES)
    write(first, update_dir, fmt)
    write(change, change_dir, fmt)
    write(first, both_dir, fmt)
    outcomes = mirror(spark, landing, warehouse)
    assert {outcomes[n].status for n in ("Update", "KeyChange", "Both")} == {"Replicating"}

    columns, rows = read_delta_rs(str(warehouse / "dbo" / "Update"))
    assert columns == ["EmployeeID", "EmployeeLocation"]
    assert sorted(tuple(r.values()) for r in rows) == [
        ("E0001", "Bellevue"), ("E0002", "Redmond"), ("E0003", "Redmond")]
    columns, rows = read_delta_rs(str(warehouse / "dbo" / "KeyChange"))
    assert sorted(tuple(r.values()) for r in rows) == [("E0002", "Bellevue")]

    # the key change arriving in a later run, on top of the update example
    write(LandingFile(sequence_name(2), EMP, KEY_CHANGE_EXAMPLE, EMP_TYPES), both_dir, fmt)
    assert mirror(spark, landing, warehouse)["Both"].status == "Replicating"
    model = ModelTable(["EmployeeID"])
    model.apply([first, LandingFile(sequence_name(2), EMP, KEY_CHANGE_EXAMPLE, EMP_TYPES)])
    assert_equals_model(warehouse / "dbo" / "Both", model)
    assert sorted(model.multiset()) == [("E0002", "Bellevue"), ("E0002", "Redmond"),
                                        ("E0003", "Redmond")]


# The seed's TSV example, with its `"EscapeCharacter": "\"` written as valid JSON ("\\").
SEED_TSV_METADATA = r'''{
"KeyColumns": [ "id" ],
"SchemaDefinition": {
    "Columns": [
                  {"Name": "id", "DataType": "Int32"},
                  {"Name": "name", "DataType": "String", "IsNullable": true},
                  {"Name": "age", "DataType": "Int32", "IsNullable": true},
                  {"Name": "seqNum", "DataType": "Int64", "IsNullable": false}
                ]
              },
"FileFormat": "DelimitedText",
"FileExtension": "tsv",
"FileFormatTypeProperties": {
                            "FirstRowAsHeader": true,
                            "RowSeparator": "\r\n",
                            "ColumnSeparator": ",",
                            "QuoteCharacter": "'",
                            "EscapeCharacter": "\\",
                            "NullValue": "N/A",
                            "Encoding": "UTF-8"
                         }
}
'''


def test_seed_tsv_metadata_example_with_its_dialect(spark, tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    table_dir = landing / "people"
    table_dir.mkdir(parents=True)
    (table_dir / "_metadata.json").write_text(SEED_TSV_METADATA)
    (table_dir / sequence_name(1, "tsv")).write_bytes(
        b"id,name,age,seqNum\r\n"
        b"1,'Smith, John',42,1\r\n"
        b"2,'O\\'Brien',N/A,2\r\n"
        b"3,N/A,7,3\r\n")
    outcomes = mirror(spark, landing, warehouse)
    assert outcomes["people"].status == "Replicating", outcomes["people"].error
    frame = spark.read.format("delta").load(str(warehouse / "dbo" / "people"))
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("id", "int"), ("name", "string"), ("age", "int"), ("seqNum", "bigint")]
    assert sorted(tuple(r) for r in frame.collect()) == [
        (1, "Smith, John", 42, 1), (2, "O'Brien", None, 2), (3, None, 7, 3)]

    # incremental changes: the marker column (not in SchemaDefinition: numeric text) arrives
    (table_dir / sequence_name(2, "tsv")).write_bytes(
        b"id,name,age,seqNum,__rowMarker__\r\n"
        b"2,'O\\'Brien',43,4,1\r\n"
        b"3,N/A,N/A,5,2\r\n"
        b"4,'it\\'s, ok',N/A,6,4\r\n")
    outcomes = mirror(spark, landing, warehouse)
    assert outcomes["people"].status == "Replicating", outcomes["people"].error
    columns, rows = read_delta_rs(str(warehouse / "dbo" / "people"))
    assert columns == ["id", "name", "age", "seqNum"]
    assert sorted(tuple(r.values()) for r in rows) == [
        (1, "Smith, John", 42, 1), (2, "O'Brien", 43, 4), (4, "it's, ok", None, 6)]


def test_tab_separated_file_with_bare_newlines_and_no_final_newline(spark, tmp_path):
    """Producers write `\\n` where `\\r\\n` is declared and may omit the last newline."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    table_dir = landing / "sales.schema" / "tabbed"
    table_dir.mkdir(parents=True)
    doc = json.loads(SEED_TSV_METADATA.replace('"ColumnSeparator": ","',
                                               '"ColumnSeparator": "\\t"'))
    (table_dir / "_metadata.json").write_text(json.dumps(doc))
    (table_dir / sequence_name(1, "tsv")).write_bytes(
        b"id\tname\tage\tseqNum\t__rowMarker__\n"
        b"1\t'a\tb'\t1\t1\t0\n"
        b"2\tN/A\tN/A\t2\t0\n"
        b"1\tc\t3\t3\t1")
    outcomes = mirror(spark, landing, warehouse)
    assert outcomes["tabbed"].status == "Replicating", outcomes["tabbed"].error
    columns, rows = read_delta_rs(str(warehouse / "sales" / "tabbed"))
    assert sorted(tuple(r.values()) for r in rows) == [(1, "c", 3, 3), (2, None, None, 2)]


def test_twenty_digit_sequence_order_not_modification_time(spark, tmp_path):
    """Eleven updates of one key, written newest-first: sequence order wins (…09 < …10 < …11)."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    table_dir = landing / "seq"
    write_metadata(str(table_dir), ["id"])
    files = [LandingFile(sequence_name(n), ("id", "v", MARKER), ((1, n, 1 if n > 1 else 0),
                                                                  (100 + n, n, 0)),
                         ("int64", "int64", "int32")) for n in range(1, 12)]
    for n, f in reversed(list(enumerate(files, start=1))):
        write_parquet(f, str(table_dir))
        os.utime(table_dir / f.name, (1_700_000_000 + (12 - n) * 60,) * 2)
    assert mirror(spark, landing, warehouse)["seq"].status == "Replicating"
    model = ModelTable(["id"])
    model.apply(files)
    assert_equals_model(warehouse / "dbo" / "seq", model)
    assert landing_data_files(str(table_dir)) == [files[-1].name]


def test_gap_in_the_sequence_waits_for_the_missing_file(spark, tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    table_dir = landing / "gappy"
    write_metadata(str(table_dir), ["id"])
    cols, types = ("id", "v", MARKER), ("int64", "int64", "int32")
    files = {n: LandingFile(sequence_name(n), cols, ((1, n, 4), (10 * n, n, 0)), types)
             for n in (1, 2, 3, 4)}
    for n in (1, 2, 4):
        write_parquet(files[n], str(table_dir))
    outcome = mirror(spark, landing, warehouse)["gappy"]
    assert outcome.status == "Waiting"
    assert outcome.awaiting and sequence_name(3).split(".")[0] in outcome.awaiting
    model = ModelTable(["id"])
    model.apply([files[1], files[2]])
    assert_equals_model(warehouse / "dbo" / "gappy", model)

    write_parquet(files[3], str(table_dir))
    assert mirror(spark, landing, warehouse)["gappy"].status == "Replicating"
    model.apply([files[3], files[4]])
    assert_equals_model(warehouse / "dbo" / "gappy", model)
    assert landing_data_files(str(table_dir)) == [files[4].name]


def test_last_update_time_file_detection_orders_by_mtime_then_name(spark, tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    table_dir = landing / "events"
    write_metadata(str(table_dir), ["id"], True,
                   {"fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    cols, types = ("id", "v", MARKER), ("int64", "string", "int32")

    def landed(name, mtime, *rows):
        f = LandingFile(name, cols, rows, types)
        write_parquet(f, str(table_dir))
        os.utime(table_dir / name, (1_700_000_000 + mtime,) * 2)
        return f

    # mtime order: b, a, (d, e tie → by name), c is last
    a = landed("a.parquet", 20, (1, "second", None), (101, "log-a", 0))
    b = landed("b.parquet", 10, (1, "first", 4), (100, "log-b", 0))
    c = landed("c.parquet", 40, (1, "fourth", 1), (103, "log-c", 0))
    e = landed("e.parquet", 30, (1, "third-e", 4), (102, "log-e", 0))
    d = landed("d.parquet", 30, (1, "third-d", 4), (102, "log-d", 0))
    assert mirror(spark, landing, warehouse)["events"].status == "Replicating"
    model = ModelTable(["id"], upsert_default=True)
    model.apply([b, a, d, e, c])
    assert_equals_model(warehouse / "dbo" / "events", model)

    # a second pass with nothing new changes nothing (no processed path applied twice)
    assert mirror(spark, landing, warehouse)["events"].status == "Replicating"
    assert_equals_model(warehouse / "dbo" / "events", model)

    # a new file whose name sorts first but whose mtime is the latest
    z = landed("0.parquet", 50, (1, "fifth", None), (104, "log-0", 0))
    assert mirror(spark, landing, warehouse)["events"].status == "Replicating"
    model.apply([z])
    assert_equals_model(warehouse / "dbo" / "events", model)


def test_delete_rows_with_empty_non_key_cells_in_the_seed_dialect(spark, tmp_path):
    """Producers leave the non-key cells of a delete row empty, even when NullValue is N/A."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    table_dir = landing / "people"
    table_dir.mkdir(parents=True)
    (table_dir / "_metadata.json").write_text(SEED_TSV_METADATA)
    (table_dir / sequence_name(1, "tsv")).write_bytes(
        b"id,name,age,seqNum,__rowMarker__\r\n"
        b"1,a,10,1,0\r\n"
        b"2,b,20,2,0\r\n"
        b"2,,,,2\r\n")
    outcome = mirror(spark, landing, warehouse)["people"]
    assert outcome.status == "Replicating", outcome.error
    columns, rows = read_delta_rs(str(warehouse / "dbo" / "people"))
    assert sorted(tuple(r.values()) for r in rows) == [(1, "a", 10, 1)]
