"""Files as real producers write them: compressed CSV, the specification's `NULL` placeholders in delete
rows, NullValue, pandas/pyarrow Parquet types (unsigned integers next to nanosecond timestamps,
TIME columns), SQL Server column names with spaces, odd file names. One landing zone, one pass
(plus a second for a column added later); each test checks one table."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from collections import Counter

import cramjam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from tests.support.landing_cases import assert_lint_agrees
from tests.support.reference_model import read_delta_rs
from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.spark.mirror import engine

M = "__rowMarker__"


def folder(landing, name, metadata=None):
    path = os.path.join(landing, name)
    os.makedirs(path, exist_ok=True)
    if metadata is not None:
        with open(os.path.join(path, "_metadata.json"), "w") as handle:
            json.dump(metadata, handle)
    return path


def write(path, name, data: bytes):
    with open(os.path.join(path, name), "wb") as handle:
        handle.write(data)


def spark_written_snappy_csv(spark, out, values) -> bytes:
    """The bytes of a CSV file Spark writes with `compression=snappy` (Hadoop's container)."""
    (spark.createDataFrame(values, "id string, v string, __rowMarker__ int").coalesce(1)
     .write.option("header", True).option("compression", "snappy").csv(str(out)))
    (part,) = out.glob("part-*.csv.snappy")
    return part.read_bytes()


def rows(warehouse, table, columns):
    """The table's rows over `columns`, read by delta-rs (no Spark job for a check)."""
    _, data = read_delta_rs(os.path.join(warehouse, "dbo", table))
    return Counter(tuple(r[c] for c in columns) for r in data)


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("producers")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    keyed = {"keyColumns": ["id"]}
    csv = b"id,v,__rowMarker__\r\n1,a,0\r\n2,b,0\r\n1,,2\r\n"
    write(folder(landing, "gz", keyed), sequence_file_name(1, "csv.gz"), gzip.compress(csv))
    write(folder(landing, "zst", keyed), sequence_file_name(1, "csv.zst"),
          zstandard.ZstdCompressor().compress(csv))
    # Snappy in its three containers: Hadoop's block stream as Spark itself writes it, the
    # framing format (cramjam, python-snappy streams, Go, Rust), one raw block
    write(folder(landing, "snappy_hadoop", keyed), sequence_file_name(1, "csv.snappy"),
          spark_written_snappy_csv(spark, root / "spark_csv", [("1", "a", 0), ("2", "b", 0),
                                                                ("1", None, 2)]))
    write(folder(landing, "snappy_framed", keyed), sequence_file_name(1, "csv.snappy"),
          bytes(cramjam.snappy.compress(csv)))
    write(folder(landing, "snappy_raw", keyed), sequence_file_name(1, "csv.snappy"),
          bytes(cramjam.snappy.compress_raw(csv)))
    # by modification time (rows are tied to their file by name: the copy's name must work)
    timed = folder(landing, "snappy_by_time", {"keyColumns": ["id"],
                                               "fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    for number, (name, text) in enumerate([("b.csv.snappy", b"id,v\r\n1,x\r\n2,z\r\n"),
                                           ("a.csv.snappy", b"id,v,__rowMarker__\r\n1,y,1\r\n")]):
        write(timed, name, bytes(cramjam.snappy.compress(text)))
        os.utime(os.path.join(timed, name), (1_700_000_000 + number,) * 2)
    # a framed file whose chunk fails its CRC stops its table there; the file before is applied
    broken = folder(landing, "snappy_corrupt", keyed)
    write(broken, sequence_file_name(1, "csv.snappy"), bytes(cramjam.snappy.compress(csv)))
    corrupt = bytearray(cramjam.snappy.compress(b"id,v\r\n3,c\r\n"))
    corrupt[-2] ^= 0x20
    write(broken, sequence_file_name(2, "csv.snappy"), bytes(corrupt))
    # a bad row in the only file: nothing commits, and no table folder is left behind
    write(folder(landing, "snappy_bad_row", keyed), sequence_file_name(1, "csv.snappy"),
          bytes(cramjam.snappy.compress(b"id,v,__rowMarker__\r\n1,a,0\r\n2,b,3\r\n")))

    # the seed's delete row writes NULL in a non-key column; here that column is typed Int32
    seed = folder(landing, "seed_delete", {"keyColumns": ["EmployeeID"], "SchemaDefinition": {
        "Columns": [{"Name": "EmployeeID", "DataType": "String"},
                    {"Name": "Salary", "DataType": "Int32"}]}})
    write(seed, sequence_file_name(1, "csv"), b"EmployeeID,Salary,__rowMarker__\r\n"
          b"E0001,100,0\r\nE0001,NULL,2\r\nE0002,200,0\r\n")
    # ... but the same text in an insert is still a bad value
    bad = folder(landing, "typed_insert", {"keyColumns": ["id"], "SchemaDefinition": {
        "Columns": [{"Name": "id", "DataType": "Int32"}, {"Name": "n", "DataType": "Int32"}]}})
    write(bad, sequence_file_name(1, "csv"), b"id,n,__rowMarker__\r\n1,NULL,0\r\n")

    # IsNullable: false is enforced (but never in a delete row, which needs only its key)
    strict = folder(landing, "not_nullable", {"keyColumns": ["id"], "SchemaDefinition": {
        "Columns": [{"Name": "id", "DataType": "Int32"},
                    {"Name": "seq", "DataType": "Int64", "IsNullable": False}]}})
    write(strict, sequence_file_name(1, "csv"), b"id,seq,__rowMarker__\r\n1,5,0\r\n9,,2\r\n")
    write(strict, sequence_file_name(2, "csv"), b"id,seq,__rowMarker__\r\n2,6,0\r\n3,,0\r\n")

    # NullValue: only the declared text is NULL; a quoted "" is an empty string
    write(folder(landing, "null_na", {"keyColumns": ["id"], "FileFormatTypeProperties": {
        "NullValue": "N/A"}}), sequence_file_name(1, "csv"),
        b'id,v\r\n1,N/A\r\n2,\r\n3,""\r\n4,x\r\n')
    write(folder(landing, "null_default", keyed), sequence_file_name(1, "csv"),
          b'id,v\r\n1,\r\n2,""\r\n3,x\r\n')

    # pandas/pyarrow types: uint8 beside a nanosecond timestamp; a TIME column
    moment = dt.datetime(2025, 6, 17, 14, 30, 0, 123456)
    pq.write_table(pa.table({
        "id": pa.array([1], pa.int64()), "flag": pa.array([200], pa.uint8()),
        "big": pa.array([2 ** 63 + 5], pa.uint64()),
        "ts": pa.array([moment], pa.timestamp("ns")),
        "at": pa.array([dt.time(14, 30, 1, 500)], pa.time64("us"))}),
        os.path.join(folder(landing, "arrow_types", keyed), sequence_file_name(1)))

    # SQL Server column names: spaces and dots, in CSV and in Parquet
    write(folder(landing, "spaces_csv", {"keyColumns": ["Employee ID"]}),
          sequence_file_name(1, "csv"),
          b"Employee ID,Emp.Location,__rowMarker__\r\nE1,Redmond,0\r\nE1,Bellevue,1\r\n")
    spaced = folder(landing, "spaces_added", keyed)
    pq.write_table(pa.table({"id": [1], "v": ["a"], M: pa.array([0], pa.int32())}),
                   os.path.join(spaced, sequence_file_name(1)))

    # LastUpdateTimeFileDetection with names Hadoop would take for glob patterns
    globs = folder(landing, "glob_names", {"keyColumns": ["id"],
                                           "fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    for number, name in enumerate(["[x]1.parquet", "{a}2.parquet", "b*3.parquet"], start=1):
        path = os.path.join(globs, name)
        pq.write_table(pa.table({"id": [number], M: pa.array([0], pa.int32())}), path)
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))

    # an Excel-style trailing separator: a header column without a name
    write(folder(landing, "trailing_separator", keyed), sequence_file_name(1, "csv"),
          b"id,v,\r\n1,a,\r\n")
    # another producer's property in FileFormatTypeProperties: ignored with a warning
    write(folder(landing, "extra_property", {"keyColumns": ["id"], "FileFormatTypeProperties": {
        "ColumnSeparator": ";", "CompressionCodec": "none"}}), sequence_file_name(1, "csv"),
        b"id;v\r\n1;a\r\n")

    # a bad cell and a bad marker after quoted line breaks: named by the line an editor shows
    lines = {"keyColumns": ["id"], "SchemaDefinition": {"Columns": [
        {"Name": "id", "DataType": "Int32"}, {"Name": "note", "DataType": "String"},
        {"Name": "quantity", "DataType": "Int32"}]}}
    write(folder(landing, "csv_lines_crlf", lines), sequence_file_name(1, "csv"),
          b'id,note,quantity,__rowMarker__\r\n1,"two\r\nlines",3,0\r\n\r\n2,plain,five,0\r\n')
    write(folder(landing, "csv_lines_marker", {**lines, "FileFormatTypeProperties": {
        "RowSeparator": "\n"}}), sequence_file_name(1, "csv"),
        b'id,note,quantity,__rowMarker__\n1,"a\nb\nc",3,0\n2,d,4,7\n')

    linted = {t.table: t for t in lint_landing_zone(landing).tables}
    first = {o.name: o for o in engine.mirror_landing_zone(
        spark, landing, warehouse, engine.MirrorOptions(threads=2)).tables}
    # a column with a space arrives later, in a table created without column mapping
    pq.write_table(pa.table({"id": [1, 2], "v": ["a2", "b"], "New Col": [1.5, None],
                             M: pa.array([1, 0], pa.int32())}),
                   os.path.join(spaced, sequence_file_name(2)))
    second = {o.name: o for o in engine.mirror_landing_zone(
        spark, landing, warehouse, engine.MirrorOptions(threads=2, select=("spaces_added",))
    ).tables}
    return {"first": first, "second": second, "warehouse": warehouse, "lint": linted}


def replicating(zone, name, run="first"):
    outcome = zone[run][name]
    assert outcome.status == "Replicating", outcome.error
    return outcome


@pytest.mark.parametrize("table", ["gz", "zst", "snappy_hadoop", "snappy_framed", "snappy_raw"])
def test_compressed_csv_is_read(zone, table):
    replicating(zone, table)
    assert rows(zone["warehouse"], table, ["id", "v"]) == Counter({("2", "b"): 1})


def test_snappy_files_by_modification_time_apply_in_that_order(zone):
    outcome = replicating(zone, "snappy_by_time")
    assert outcome.files_applied == ["b.csv.snappy", "a.csv.snappy"]
    assert rows(zone["warehouse"], "snappy_by_time", ["id", "v"]) == Counter(
        {("1", "y"): 1, ("2", "z"): 1})


def test_a_corrupt_snappy_file_stops_its_table_at_that_file(zone):
    outcome = zone["first"]["snappy_corrupt"]
    assert outcome.status == "Failed" and outcome.error["errorCode"] == "BadFile"
    assert outcome.error["file"].endswith(sequence_file_name(2, "csv.snappy"))
    assert "not a readable compressed file" in outcome.error["message"]
    assert "checksum" in outcome.error["message"]
    assert rows(zone["warehouse"], "snappy_corrupt", ["id", "v"]) == Counter({("2", "b"): 1})


def test_a_bad_row_in_a_snappy_file_is_named_and_leaves_no_table_folder(zone):
    outcome = zone["first"]["snappy_bad_row"]
    assert outcome.status == "Failed" and outcome.error["line"] == 3  # the header is line 1
    assert not os.path.exists(os.path.join(zone["warehouse"], "dbo", "snappy_bad_row"))


def test_decompressed_copies_are_gone_after_the_pass(zone):
    left = [os.path.join(d, f) for d, _, fs in os.walk(zone["warehouse"]) for f in fs
            if "decompressed" in d]
    assert left == []


def test_null_placeholder_in_a_typed_column_of_a_delete_row(zone):
    replicating(zone, "seed_delete")
    assert rows(zone["warehouse"], "seed_delete", ["EmployeeID", "Salary"]) == Counter(
        {("E0002", 200): 1})


def test_the_same_placeholder_in_an_insert_is_a_bad_value(zone):
    outcome = zone["first"]["typed_insert"]
    assert outcome.status == "Failed" and outcome.error["line"] == 2
    assert "'NULL'" in outcome.error["message"] and "Int32" in outcome.error["message"]


def test_only_the_declared_null_value_is_null(zone):
    replicating(zone, "null_na")
    assert rows(zone["warehouse"], "null_na", ["id", "v"]) == Counter(
        {("1", None): 1, ("2", ""): 1, ("3", ""): 1, ("4", "x"): 1})


def test_default_null_value_keeps_a_quoted_empty_string(zone):
    replicating(zone, "null_default")
    assert rows(zone["warehouse"], "null_default", ["id", "v"]) == Counter(
        {("1", None): 1, ("2", ""): 1, ("3", "x"): 1})


def test_unsigned_integers_nanosecond_timestamps_and_times(spark, zone):
    replicating(zone, "arrow_types")
    df = spark.read.format("delta").load(os.path.join(zone["warehouse"], "dbo", "arrow_types"))
    types = dict(df.dtypes)
    assert types["flag"] == "smallint" and types["big"] == "decimal(20,0)"
    assert types["ts"] == "timestamp_ntz" and types["at"] == "timestamp_ntz"
    row = df.first()
    assert row["flag"] == 200 and int(row["big"]) == 2 ** 63 + 5
    assert row["ts"] == dt.datetime(2025, 6, 17, 14, 30, 0, 123456)
    assert row["at"] == dt.datetime(1970, 1, 1, 14, 30, 1, 500)


def test_column_names_with_spaces_and_dots(zone):
    replicating(zone, "spaces_csv")
    assert rows(zone["warehouse"], "spaces_csv", ["Employee ID", "Emp.Location"]) == \
        Counter({("E1", "Bellevue"): 1})


def test_a_column_with_a_space_added_to_an_existing_table(zone):
    replicating(zone, "spaces_added", run="second")
    assert rows(zone["warehouse"], "spaces_added", ["id", "v", "New Col"]) == Counter(
        {(1, "a2", 1.5): 1, (2, "b", None): 1})


def test_file_names_with_glob_characters(zone):
    outcome = replicating(zone, "glob_names")
    assert outcome.files_applied == ["[x]1.parquet", "{a}2.parquet", "b*3.parquet"]
    assert rows(zone["warehouse"], "glob_names", ["id"]) == Counter(
        {(1,): 1, (2,): 1, (3,): 1})


def test_a_header_column_without_a_name_is_a_bad_file(zone):
    outcome = zone["first"]["trailing_separator"]
    assert outcome.status == "Failed" and outcome.error["errorCode"] == "BadFile"
    assert outcome.error["file"].endswith(sequence_file_name(1, "csv"))
    assert "header column 3 has no name" in outcome.error["message"]


def test_unknown_delimited_property_is_only_a_warning(zone):
    replicating(zone, "extra_property")
    assert rows(zone["warehouse"], "extra_property", ["id", "v"]) == Counter(
        {("1", "a"): 1})


def test_is_nullable_false_is_enforced_except_in_deletes(zone):
    outcome = zone["first"]["not_nullable"]
    assert outcome.status == "Failed" and outcome.error["line"] == 3
    assert outcome.error["file"].endswith(sequence_file_name(2, "csv"))
    assert "IsNullable: false" in outcome.error["message"]
    assert rows(zone["warehouse"], "not_nullable", ["id", "seq"]) == Counter({(1, 5): 1})


def test_a_bad_delimited_row_is_named_by_its_file_line_as_lint_names_it(zone):
    """CRLF line ends, a quoted field spanning lines and an empty line before the bad row: the
    engine names the line an editor shows, with lint's words (column, type, what to do)."""
    outcome = zone["first"]["csv_lines_crlf"]
    assert outcome.status == "Failed"
    assert (outcome.error["line"], outcome.error["row"]) == (5, None)
    name = sequence_file_name(1, "csv")
    assert outcome.error["message"].endswith(
        f"{name}: line 5: column quantity (field 3): 'five' is not a valid Int32; fix the "
        "value and re-write the file under the same name")
    assert outcome.error["message"].endswith(zone["lint"]["csv_lines_crlf"].stops_at.message)
    marker = zone["first"]["csv_lines_marker"]
    assert marker.status == "Failed" and marker.error["line"] == 5
    assert f"{name}: line 5: __rowMarker__ '7'" in marker.error["message"]


def test_lint_predicted_where_the_engine_stopped(zone):
    """Linted before the first pass, every table: lint stops where the engine failed (file and
    row), and nowhere in the tables the engine mirrored."""
    assert_lint_agrees(zone["first"], zone["lint"])
