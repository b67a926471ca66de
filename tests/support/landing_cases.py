"""The bad landing files of the engine tests, as shared fixtures: each case is a table whose
file 2 is bad (between a good file 1 and a good file 3). `tests/spark/test_bad_files.py` mirrors
them; `tests/unit/landing/test_lint_predicts_engine.py` lints them (no JVM) and
`tests/spark/test_bad_files.py::test_lint_predicted_where_the_engine_stopped` checks that both
stop at the same file and row.
Also the producer cases (`PRODUCER_CASES`) of `tests/spark/test_producer_files.py` that fail.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from tests.support.reference_model import (
    MARKER, LandingFile, csv_schema_definition, sequence_name, write_csv, write_metadata,
    write_parquet)

KEYED = ("id", "v", MARKER)
T_KEYED = ("int64", "string", "int32")
FILE1 = LandingFile(sequence_name(1), KEYED, ((1, "a", 0), (2, "b", 0), (2, "b2", 0)), T_KEYED)
FILE3 = LandingFile(sequence_name(3), KEYED, ((3, "c", 0), (2, "z", 1), (1, None, 2)), T_KEYED)
FILE3_KEYLESS = LandingFile(sequence_name(3), KEYED, ((3, "c", 0), (3, "c", None)), T_KEYED)
# file 3 of a table keyed on (id, v): no NULL in either key column
FILE3_COMPOUND = LandingFile(sequence_name(3), KEYED, ((3, "c", 0), (2, "b2", 1)), T_KEYED)
GOOD2 = LandingFile(sequence_name(2), KEYED, ((4, "d", 0), (5, "e", 4)), T_KEYED)


@dataclass
class Case:
    """A table whose file 2 is bad: how it is written, and what the error must say."""

    name: str
    bad: LandingFile            # the model of the bad file 2 (corrupt=... when unreadable)
    write_bad: object           # callable(table_dir) writing the bad bytes
    row: int | None = None      # the 1-based data row the error must name, when there is one
    words: tuple[str, ...] = ()  # lower-case words the message must contain
    keys: tuple[str, ...] = ("id",)
    csv: bool = False
    bad_metadata: str | None = None  # text of an invalid _metadata.json (file 2 is then good)


def parquet_writer(f: LandingFile, **kwargs):
    return lambda table_dir: write_parquet(f, table_dir, **kwargs)


def raw_writer(name: str, data: bytes):
    def write(table_dir):
        with open(os.path.join(table_dir, name), "wb") as handle:
            handle.write(data)
    return write


def year_200000_writer(table_dir):
    """File 2 with a timestamp column whose second row is in year 200000 (Spark reads it;
    Delta's range and Python's end at 9999)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    micros = int((200000 - 1970) * 365.2425 * 86400) * 1_000_000
    table = pa.table({"id": pa.array([4, 5], pa.int64()), "v": ["d", "e"],
                      "at": pa.array([0, micros], pa.timestamp("us")),
                      MARKER: pa.array([0, 0], pa.int32())})
    pq.write_table(table, os.path.join(table_dir, sequence_name(2)))


def bad2(rows, columns=KEYED, types=T_KEYED):
    return LandingFile(sequence_name(2), columns, rows, types)


def corrupt(name, reason):
    return LandingFile(name, KEYED, (), None, corrupt=reason)


_marker3 = bad2(((4, "d", 0), (5, "e", 0), (6, "f", 3)))
_marker_text = bad2(((4, "d", "zero"),), types=("int64", "string", "string"))
_type_change = bad2(((4, 40, 0),), types=("int64", "int64", "int32"))
_missing_key = bad2((("d", 0),), columns=("v", MARKER), types=("string", "int32"))
_null_update = bad2(((4, "d", 0), (None, "x", 1)))
_null_delete = bad2(((None, None, 2),))
_keyless_update = bad2(((4, "d", 0), (1, "x", 1)))
_compound_null = bad2(((4, "d", 0), (5, None, 1)))  # keyed on (id, v): only v is NULL
# a delete file as pandas writes it: the all-null `v` is INT32 with the Null logical type
_null_type = bad2(((1, None, 2),), types=("int64", "null", "int32"))
CSV_NAME = sequence_name(2, "csv")
CSV_HEAD = "id,v,__rowMarker__\r\n"

CASES = [
    Case("marker3", _marker3, parquet_writer(_marker3), row=3, words=("3",)),
    Case("marker_text", _marker_text, parquet_writer(_marker_text, marker_as_text=True), row=1, words=("zero",)),
    Case("zero_bytes", corrupt(sequence_name(2), "zero bytes"),
         raw_writer(sequence_name(2), b"")),
    Case("not_parquet", corrupt(sequence_name(2), "not parquet"),
         raw_writer(sequence_name(2), b"this is not a parquet file\n")),
    # readable by pyarrow (so it passes the row checks) but not by Spark: found at commit time
    Case("codec_spark_lacks", corrupt(sequence_name(2), "brotli"),
         parquet_writer(GOOD2, compression="brotli"), words=("unreadable",)),
    Case("type_change", _type_change, parquet_writer(_type_change), words=("v", "type")),
    Case("type_change_vs_table", _type_change, parquet_writer(_type_change), words=("v", "type")),
    Case("missing_key", _missing_key, parquet_writer(_missing_key), words=("id",)),
    Case("null_key_update", _null_update, parquet_writer(_null_update), row=2, words=("null",)),
    Case("null_key_delete", _null_delete, parquet_writer(_null_delete), row=1, words=("null",)),
    Case("null_type", _null_type, parquet_writer(_null_type),
         words=("'v'", "null logical type", "schemamergefailure", "cast")),
    Case("keyless_update", _keyless_update, parquet_writer(_keyless_update), row=2,
         words=("key",), keys=()),
    Case("compound_key_one_null", _compound_null, parquet_writer(_compound_null), row=2,
         words=("null in key column(s) v of",), keys=("id", "v")),
    Case("csv_extra_field", corrupt(CSV_NAME, "malformed"),
         raw_writer(CSV_NAME, (CSV_HEAD + "4,d,0\r\n5,e,x,0\r\n").encode()), csv=True),
    Case("csv_bad_number", corrupt(CSV_NAME, "malformed"),
         raw_writer(CSV_NAME, (CSV_HEAD + "4,d,0\r\nfive,e,0\r\n").encode()), csv=True),
    Case("csv_unclosed_quote", corrupt(CSV_NAME, "malformed"),
         raw_writer(CSV_NAME, (CSV_HEAD + '4,"d,0\r\n5,e,0\r\n').encode()), csv=True),
    Case("bad_metadata_json", GOOD2, parquet_writer(GOOD2),
         bad_metadata='{"keyColumns": ["id"], '),
    Case("bad_metadata_value", GOOD2, parquet_writer(GOOD2),
         bad_metadata='{"keyColumns": ["id"], "fileDetectionStrategy": "Sometimes"}'),
    Case("timestamp_year_200000", corrupt(sequence_name(2), "year 200000"), year_200000_writer,
         row=2, words=("year 200000", "9999-12-31")),
    Case("empty_metadata", GOOD2, parquet_writer(GOOD2), bad_metadata="", words=("empty",)),
    Case("metadata_keys_a_string", GOOD2, parquet_writer(GOOD2), bad_metadata='{"keyColumns": "id"}',
         words=("keycolumns must be a list",)),
]
GOOD_TABLES = ("good", "good_csv")


def csv_file(f: LandingFile) -> LandingFile:
    return LandingFile(f.name.replace(".parquet", ".csv"), f.columns, f.rows, f.types)


def table_files(case_or_name) -> tuple[LandingFile, LandingFile]:
    """Files 1 and 3 of a table (CSV tables get the same rows as CSV)."""
    is_csv = getattr(case_or_name, "csv", False) or case_or_name == "good_csv"
    if getattr(case_or_name, "keys", True) == ():
        return FILE1, FILE3_KEYLESS
    if getattr(case_or_name, "keys", ()) == ("id", "v"):
        return FILE1, FILE3_COMPOUND
    return (csv_file(FILE1), csv_file(FILE3)) if is_csv else (FILE1, FILE3)


def write_good(f: LandingFile, table_dir: str) -> None:
    if f.name.endswith(".csv"):
        write_csv(f, table_dir)
    else:
        write_parquet(f, table_dir)


def metadata_for(table_dir, keys, is_csv):
    extra = {"SchemaDefinition": csv_schema_definition({"id": "int64", "v": "string"})} \
        if is_csv else {}
    write_metadata(table_dir, keys, None, extra)


def write_case(landing: str, case: Case, with_file1: bool = True) -> str:
    """Write one case's table folder (file 1 unless `with_file1` is False, bad file 2, file 3)."""
    table_dir = os.path.join(landing, case.name)
    metadata_for(table_dir, case.keys, case.csv)
    if case.bad_metadata is not None:
        with open(os.path.join(table_dir, "_metadata.json"), "w") as handle:
            handle.write(case.bad_metadata)
    one, three = table_files(case)
    if with_file1:
        write_good(one, table_dir)
    case.write_bad(table_dir)
    write_good(three, table_dir)
    return table_dir


def write_good_tables(landing: str) -> None:
    """The good tables beside the bad ones: files 1, 2 and 3, all clean."""
    for name in GOOD_TABLES:
        table_dir = os.path.join(landing, name)
        metadata_for(table_dir, ("id",), name == "good_csv")
        one, three = table_files(name)
        write_good(one, table_dir)
        write_good(csv_file(GOOD2) if name == "good_csv" else GOOD2, table_dir)
        write_good(three, table_dir)


@dataclass
class ProducerCase:
    """A failing table of the producer-files tests: its metadata, files, where it stops."""

    name: str
    metadata: dict
    files: tuple[tuple[str, bytes], ...]
    stop_file: str
    line: int | None  # the line (header counted) of the delimited file where it stops


def _typed(columns):
    return {"keyColumns": ["id"], "SchemaDefinition": {"Columns": columns}}


PRODUCER_CASES = [
    ProducerCase("trailing_separator", {"keyColumns": ["id"]},
                 ((sequence_name(1, "csv"), b"id,v,\r\n1,a,\r\n"),), sequence_name(1, "csv"), 1),
    ProducerCase("typed_insert", _typed([{"Name": "id", "DataType": "Int32"},
                                         {"Name": "n", "DataType": "Int32"}]),
                 ((sequence_name(1, "csv"), b"id,n,__rowMarker__\r\n1,NULL,0\r\n"),),
                 sequence_name(1, "csv"), 2),
    ProducerCase("not_nullable", _typed([{"Name": "id", "DataType": "Int32"},
                                         {"Name": "seq", "DataType": "Int64",
                                          "IsNullable": False}]),
                 ((sequence_name(1, "csv"), b"id,seq,__rowMarker__\r\n1,5,0\r\n9,,2\r\n"),
                  (sequence_name(2, "csv"), b"id,seq,__rowMarker__\r\n2,6,0\r\n3,,0\r\n")),
                 sequence_name(2, "csv"), 3),
]


def write_producer_case(landing: str, case: ProducerCase) -> str:
    table_dir = os.path.join(landing, case.name)
    os.makedirs(table_dir, exist_ok=True)
    with open(os.path.join(table_dir, "_metadata.json"), "w") as handle:
        json.dump(case.metadata, handle)
    for name, data in case.files:
        with open(os.path.join(table_dir, name), "wb") as handle:
            handle.write(data)
    return table_dir


def assert_lint_agrees(outcomes: dict, linted: dict) -> None:
    """Each table's lint prediction (`stops_at`, linted before the engine ran) against the
    engine's outcome: the same file and row where it failed, no stop where it mirrored."""
    for name, outcome in outcomes.items():
        predicted = linted[name].stops_at
        if outcome.status != "Failed":
            assert predicted is None, (name, predicted)
            continue
        assert predicted is not None, name
        assert os.path.basename(outcome.error["file"]) == predicted.file.rsplit("/", 1)[-1], name
        assert outcome.error["row"] == predicted.row, (name, outcome.error, predicted)
        assert outcome.error.get("line") == predicted.line, (name, outcome.error, predicted)
