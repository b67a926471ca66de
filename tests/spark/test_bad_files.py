"""Bad landing files: a clear error naming the file (and row), only that table stops.

One landing zone holds a table per kind of bad file, each receiving file 1 (good), file 2 (bad)
and file 3 (good), next to good tables. The first pass must apply file 1 only, report the table
Failed with the file, row and reason, and mirror the good tables fully; once file 2 is rewritten
under the same name (or `_metadata.json` fixed), the next pass applies files 2 and 3.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest

from reference_model import (
    MARKER, LandingFile, ModelTable, as_multiset, csv_schema_definition, landing_data_files,
    read_delta, sequence_name, write_csv, write_metadata, write_parquet)

engine = pytest.importorskip("mirrorspec.spark.engine")

KEYED = ("id", "v", MARKER)
T_KEYED = ("int64", "string", "int32")
FILE1 = LandingFile(sequence_name(1), KEYED, ((1, "a", 0), (2, "b", 0), (2, "b2", 0)), T_KEYED)
FILE3 = LandingFile(sequence_name(3), KEYED, ((3, "c", 0), (2, "z", 1), (1, None, 2)), T_KEYED)
FILE3_KEYLESS = LandingFile(sequence_name(3), KEYED, ((3, "c", 0), (3, "c", None)), T_KEYED)
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
    Case("keyless_update", _keyless_update, parquet_writer(_keyless_update), row=2,
         words=("key",), keys=()),
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
]
GOOD_TABLES = ("good", "good_csv")


def csv_file(f: LandingFile) -> LandingFile:
    return LandingFile(f.name.replace(".parquet", ".csv"), f.columns, f.rows, f.types)


def table_files(case_or_name) -> tuple[LandingFile, LandingFile]:
    """Files 1 and 3 of a table (CSV tables get the same rows as CSV)."""
    is_csv = getattr(case_or_name, "csv", False) or case_or_name == "good_csv"
    if getattr(case_or_name, "keys", True) == ():
        return FILE1, FILE3_KEYLESS
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


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):
    """Runs the two passes once; returns what each pass left, captured right after it."""
    root = tmp_path_factory.mktemp("bad_files")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    by_name = {c.name: c for c in CASES}

    # pass 0: only type_change_vs_table exists, so its file 1 is already in Delta
    vs_table = os.path.join(landing, "type_change_vs_table")
    metadata_for(vs_table, ("id",), False)
    write_parquet(FILE1, vs_table)
    first = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions())
    assert not first.failed, first.tables

    for case in CASES:
        table_dir = os.path.join(landing, case.name)
        metadata_for(table_dir, case.keys, case.csv)
        if case.bad_metadata is not None:
            with open(os.path.join(table_dir, "_metadata.json"), "w") as handle:
                handle.write(case.bad_metadata)
        one, three = table_files(case)
        if case.name != "type_change_vs_table":
            write_good(one, table_dir)
        case.write_bad(table_dir)
        write_good(three, table_dir)
    for name in GOOD_TABLES:
        table_dir = os.path.join(landing, name)
        metadata_for(table_dir, ("id",), name == "good_csv")
        one, three = table_files(name)
        write_good(one, table_dir)
        write_good(csv_file(GOOD2) if name == "good_csv" else GOOD2, table_dir)
        write_good(three, table_dir)

    def snapshot(result):
        tables = {}
        for name in [c.name for c in CASES] + list(GOOD_TABLES):
            path = os.path.join(warehouse, "dbo", name)
            tables[name] = read_delta(spark, path) if os.path.isdir(
                os.path.join(path, "_delta_log")) else None
        files = {name: landing_data_files(os.path.join(landing, name)) for name in tables}
        with open(os.path.join(warehouse, "tables.json")) as handle:
            status = json.load(handle)
        return {"outcomes": {o.name: o for o in result.tables}, "tables": tables,
                "files": files, "status": status, "result": result}

    failed_pass = snapshot(engine.mirror_landing_zone(spark, landing, warehouse,
                                                      engine.MirrorOptions(threads=2)))

    for case in CASES:  # rewrite the bad file under the same name (or fix _metadata.json)
        table_dir = os.path.join(landing, case.name)
        metadata_for(table_dir, case.keys, case.csv)
        bad_name = case.bad.name
        good = csv_file(GOOD2) if case.csv else GOOD2
        if case.name == "keyless_update":
            good = LandingFile(GOOD2.name, KEYED, ((4, "d", 0), (5, "e", 0)), T_KEYED)
        if bad_name != good.name and os.path.exists(os.path.join(table_dir, bad_name)):
            os.remove(os.path.join(table_dir, bad_name))
        write_good(good, table_dir)
    fixed_pass = snapshot(engine.mirror_landing_zone(spark, landing, warehouse,
                                                     engine.MirrorOptions(threads=2)))
    return {"first": failed_pass, "fixed": fixed_pass, "cases": by_name}


def expected_model(case: Case, fixed: bool) -> ModelTable:
    model = ModelTable(case.keys)
    one, three = table_files(case)
    if case.bad_metadata is not None and not fixed:
        return model
    second = case.bad
    if fixed:
        second = GOOD2 if case.name != "keyless_update" else LandingFile(
            GOOD2.name, KEYED, ((4, "d", 0), (5, "e", 0)), T_KEYED)
    error = model.apply([one, second, three])
    assert (error is None) == fixed
    return model


def assert_rows(snapshot, name, model):
    table = snapshot["tables"][name]
    if not model.rows and table is None:
        return
    assert table is not None, f"{name}: no Delta table"
    columns, rows = table
    assert as_multiset(model.columns, rows) == model.multiset(), name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_file_stops_only_its_table_with_a_clear_error(zone, case):
    first = zone["first"]
    outcome = first["outcomes"][case.name]
    assert outcome.status == "Failed"
    error = outcome.error
    assert error and error.get("errorCode") and error.get("message")
    named = "_metadata.json" if case.bad_metadata is not None else case.bad.name
    assert named in (error.get("file") or "") or named in error["message"], error
    if case.row is not None:
        assert error.get("row") == case.row, error
    for word in case.words:
        assert word in error["message"].lower(), error
    assert_rows(first, case.name, expected_model(case, fixed=False))
    # the bad file and the file after it stay where they are, to be retried
    assert case.bad.name in first["files"][case.name]


def test_status_json_reports_each_failed_table(zone):
    status = zone["first"]["status"]
    by_name = {t["sourceTableName"]: t for t in status["tables"]}
    for case in CASES:
        entry = by_name[case.name]
        assert entry["status"] == "Failed"
        assert entry["error"]["errorCode"] and entry["error"]["message"]
    for name in GOOD_TABLES:
        assert by_name[name]["status"] == "Replicating"
        assert not by_name[name].get("error")


def test_other_tables_go_on(zone):
    first = zone["first"]
    assert first["result"].failed
    for name in GOOD_TABLES:
        assert first["outcomes"][name].status == "Replicating"
        model = ModelTable(("id",))
        one, three = table_files(name)
        assert model.apply([one, csv_file(GOOD2) if name == "good_csv" else GOOD2, three]) is None
        assert_rows(first, name, model)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rewriting_the_bad_file_lets_the_next_run_go_on(zone, case):
    fixed = zone["fixed"]
    outcome = fixed["outcomes"][case.name]
    assert outcome.status == "Replicating", outcome.error
    assert_rows(fixed, case.name, expected_model(case, fixed=True))
    assert fixed["files"][case.name] == [table_files(case)[1].name]
    assert not fixed["result"].failed
