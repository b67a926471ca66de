"""Landing zones as partner writers write them, each habit one table, mirrored end to end and
read back with delta-rs (docs/semantics.md, "Partner writers' habits").

One landing zone, three passes: pass 1 mirrors every habit; between passes 1 and 2 folders are
deleted and re-uploaded from file 1 (the engine never sees them missing), another is deleted
(pass 2 drops it) and re-uploaded before pass 3, and a zero-byte file is re-written; during
pass 2 one more folder is re-uploaded right after its commit (pass 3 rebuilds it). A second,
tiny landing zone is mirrored with `strict` (three of its tables stop at the schema check).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import threading
import time
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.landing_cases import assert_lint_agrees
from tests.support.reference_model import read_delta_rs

from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.openmirroring.mirroring import sequence_file_name

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")

M = "__rowMarker__"
BOM = b"\xef\xbb\xbf"
KEYED = {"keyColumns": ["id"]}


def folder(landing, rel, metadata=None):
    path = os.path.join(landing, *rel.split("/"))
    os.makedirs(path, exist_ok=True)
    if metadata is not None:
        with open(os.path.join(path, "_metadata.json"), "w") as handle:
            json.dump(metadata, handle)
    return path


def write(path, name, data: bytes):
    with open(os.path.join(path, name), "wb") as handle:
        handle.write(data)


def parquet(path, name, columns: dict, types: dict | None = None, required=()):
    """A Parquet file with the columns in the order given (pyarrow, as partners write it)."""
    types = types or {}
    fields = [pa.field(c, types.get(c, pa.int32() if c == M else None) or
                       pa.array(v).type, nullable=c not in required)
              for c, v in columns.items()]
    table = pa.table({c: pa.array(v, f.type) for (c, v), f in zip(columns.items(), fields)},
                     schema=pa.schema(fields))
    pq.write_table(table, os.path.join(path, name))


def seq(n, ext="parquet"):
    return sequence_file_name(n, ext)


def first_upload(landing, rel):
    """Files 1..3 of a table keyed on id (int64 id, string v)."""
    path = folder(landing, rel, KEYED)
    for n, (ids, vs, ms) in enumerate([([1, 2], ["a", "b"], [0, 0]),
                                       ([3], ["c"], [0]),
                                       ([1], ["a2"], [1])], start=1):
        parquet(path, seq(n), {"id": ids, "v": vs, M: ms}, {"id": pa.int64()})
    return path


def reupload(landing, rel, count):
    """The folder deleted and re-uploaded from file 1, `v` now an int64 (a fresh schema)."""
    shutil.rmtree(os.path.join(landing, *rel.split("/")), ignore_errors=True)
    path = folder(landing, rel, KEYED)
    for n in range(1, count + 1):
        parquet(path, seq(n), {"id": [10 * n], "v": [n], M: [0]},
                {"id": pa.int64(), "v": pa.int64()})
    return path


def snapshot(result, warehouse):
    outcomes = {o.unique_id: o for o in result.tables}
    tables = {}
    for unique_id, outcome in outcomes.items():
        path = outcome.delta_path or os.path.join(warehouse, *unique_id.split(".", 1))
        if os.path.isdir(os.path.join(path, "_delta_log")):
            tables[unique_id] = read_delta_rs(path)
    return {"outcomes": outcomes, "tables": tables}


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("partner_habits")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")

    # __rowMarker__ as a string and not last (pandas object columns, text-typed writers)
    path = folder(landing, "string_marker", KEYED)
    parquet(path, seq(1), {M: ["0", "0", "0"], "id": [1, 2, 3], "v": ["a", "b", "c"]},
            {M: pa.string(), "id": pa.int64()})
    parquet(path, seq(2), {"id": [1, 2, 4, 3], M: ["1", "2", " 4 ", "4.0"],
                           "v": ["a2", None, "d", "c2"]}, {M: pa.string(), "id": pa.int64()})
    # the same in CSV: the marker first, quoted
    path = folder(landing, "csv_marker_first", {"keyColumns": ["id"], "SchemaDefinition": {
        "Columns": [{"Name": "id", "DataType": "Int32"}, {"Name": "v", "DataType": "String"}]}})
    write(path, seq(1, "csv"), b'__rowMarker__,id,v\r\n"0",1,a\r\n"0",2,b\r\n')
    write(path, seq(2, "csv"), b'__rowMarker__,id,v\r\n"1",1,a2\r\n"2",2,\r\n')
    # a required (non-nullable) int32 marker as the first column
    path = folder(landing, "int32_marker_first", KEYED)
    parquet(path, seq(1), {M: [0, 0], "id": [1, 2], "v": ["a", "b"]}, {"id": pa.int64()},
            required=(M,))
    parquet(path, seq(2), {M: [1, 2, 0], "id": [1, 2, 3], "v": ["a2", None, "c"]},
            {"id": pa.int64()}, required=(M,))
    # key and data columns named like internal ones, but the partner's own
    path = folder(landing, "rowid_key", {"keyColumns": ["__rowid__"]})
    parquet(path, seq(1), {"__rowid__": [1, 2], "__source__": ["bc", "bc"], "v": ["a", "b"],
                           M: [0, 0]}, {"__rowid__": pa.int64()})
    parquet(path, seq(2), {"__rowid__": [1, 2, 3], "__source__": ["bc", None, "bc"],
                           "v": ["a2", None, "c"], M: [4, 2, 4]}, {"__rowid__": pa.int64()})
    # ... but not one the engine itself works with: the table stops at that file
    path = folder(landing, "engine_column", KEYED)
    parquet(path, seq(1), {"id": [1], "v": ["a"], M: [0]}, {"id": pa.int64()})
    parquet(path, seq(2), {"id": [2], "__P": [7], M: [0]}, {"id": pa.int64()})
    # schema and table folders with spaces; a file name with a space, by modification time
    path = folder(landing, "My Schema.schema/My Table", KEYED)
    parquet(path, seq(1), {"id": [1, 2], "v": ["a", "b"], M: [0, 0]}, {"id": pa.int64()})
    parquet(path, seq(2), {"id": [2], "v": ["b2"], M: [1]}, {"id": pa.int64()})
    path = folder(landing, "My Schema.schema/Time Table",
                  {"keyColumns": ["id"], "fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    for n, (name, v, m) in enumerate([("batch one.parquet", "a", 0),
                                      ("batch two.parquet", "a2", 1)]):
        parquet(path, name, {"id": [1], "v": [v], M: [m]}, {"id": pa.int64()})
        os.utime(os.path.join(path, name), (1_700_000_000 + n,) * 2)
    # a UTF-8 BOM before the header (Excel, .NET writers); the key is the first column
    path = folder(landing, "bom_csv", {"keyColumns": ["id"], "SchemaDefinition": {
        "Columns": [{"Name": "id", "DataType": "Int32"}, {"Name": "v", "DataType": "String"}]}})
    write(path, seq(1, "csv"), BOM + b"id,v,__rowMarker__\r\n1,a,0\r\n2,b,0\r\n")
    write(path, seq(2, "csv"), BOM + b'"id","v","__rowMarker__"\r\n1,a2,1\r\n2,,2\r\n')
    # whole-table re-uploads keyed by line number, upsert by default; the table shrank
    path = folder(landing, "line_reupload", {"keyColumns": ["LineNo"],
                                             "isUpsertDefaultRowMarker": True})
    write(path, seq(1, "csv"), b"LineNo,Item\r\n1,apple\r\n2,pear\r\n3,plum\r\n")
    write(path, seq(2, "csv"), b"LineNo,Item\r\n1,apple\r\n2,fig\r\n")
    # folders deleted and re-uploaded from file 1 (below: between the passes)
    for name in ("recreated_unseen", "recreated_fewer", "recreated_seen", "recreated_midpass"):
        first_upload(landing, name)
    # a table failed by a type change; its publisher deletes the folder and re-uploads it
    path = folder(landing, "recreated_failed", KEYED)
    parquet(path, seq(1), {"id": [1], "v": ["a"], M: [0]}, {"id": pa.int64()})
    parquet(path, seq(2), {"id": [2], "v": [2], M: [0]}, {"id": pa.int64(), "v": pa.int64()})
    # bc2adls: a zero-byte CSV in the sequence, then the same name re-written
    path = folder(landing, "bc_zero_byte", KEYED)
    write(path, seq(1, "csv"), b"id,v,__rowMarker__\r\n1,a,0\r\n")
    write(path, seq(2, "csv"), b"")
    write(path, seq(3, "csv"), b"id,v,__rowMarker__\r\n2,b,0\r\n")
    # bc2adls: an empty table exported as a header-only CSV
    bc_schema = {"keyColumns": ["systemId"], "SchemaDefinition": {"Columns": [
        {"Name": "systemId", "DataType": "String", "IsNullable": False},
        {"Name": "Description", "DataType": "String", "IsNullable": False},
        {"Name": "SystemModifiedAt", "DataType": "DateTime"},
        {"Name": "Amount", "DataType": "Double"}]}}
    write(folder(landing, "bc_empty_table", bc_schema), seq(1, "csv"),
          b"systemId,Description,SystemModifiedAt,Amount,__rowMarker__\r\n")
    # bc2adls: empty DateTime cells, and delete rows with empty/NULL non-key cells
    path = folder(landing, "bc_nulls", bc_schema)
    write(path, seq(1, "csv"), b"systemId,Description,SystemModifiedAt,Amount,__rowMarker__\r\n"
          b"s1,one,,1.5,0\r\ns2,two,2025-01-02T03:04:05Z,2,0\r\ns3,three,,3,0\r\n")
    write(path, seq(2, "csv"), b"systemId,Description,SystemModifiedAt,Amount,__rowMarker__\r\n"
          b"s1,,,,2\r\ns3,NULL,NULL,NULL,2\r\n")

    linted = {t.unique_id: t for t in lint_landing_zone(landing).tables}
    first = snapshot(engine.mirror_landing_zone(spark, landing, warehouse,
                                                engine.MirrorOptions(threads=2)), warehouse)

    reupload(landing, "recreated_unseen", 4)   # more files than were applied: only the folder
    reupload(landing, "recreated_fewer", 1)    # identity tells / the sequence restarted too
    reupload(landing, "recreated_failed", 2)
    shutil.rmtree(os.path.join(landing, "recreated_seen"))
    write(os.path.join(landing, "bc_zero_byte"), seq(2, "csv"), b"id,v,__rowMarker__\r\n")
    # within the pass: right after this table's commit of file 4, the folder is deleted and
    # re-uploaded as files 1..4 (names the pass listed and is about to move)
    parquet(os.path.join(landing, "recreated_midpass"), seq(4), {"id": [4], "v": ["d"], M: [0]},
            {"id": pa.int64()})
    with recreated_after_commit(root, "dbo.recreated_midpass",
                                lambda: reupload(landing, "recreated_midpass", 4)):
        second = snapshot(engine.mirror_landing_zone(spark, landing, warehouse,
                                                     engine.MirrorOptions(threads=2)), warehouse)

    reupload(landing, "recreated_seen", 2)
    third = snapshot(engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions(
        threads=1, select=("recreated_seen", "recreated_midpass"))), warehouse)
    return {"first": first, "second": second, "third": third, "lint": linted,
            "warehouse": warehouse}


@contextlib.contextmanager
def recreated_after_commit(root, table, action):
    """Runs `action` while the engine pauses right after `table`'s commit (the fault points of
    mirrorspec.base.faults, in this process: the pass runs in the `with` block), then lets it go on."""
    folder = str(root / "pause")
    os.makedirs(folder, exist_ok=True)
    reached, go = (os.path.join(folder, f"after_commit.{n}") for n in ("reached", "go"))
    acted = threading.Event()

    def wait_then_act():
        deadline = time.monotonic() + 600
        while not os.path.exists(reached) and not os.path.exists(go) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        if os.path.exists(reached):
            action()
            acted.set()
        open(go, "w").close()

    os.environ.update(MIRRORSPEC_PAUSE_AT="after_commit", MIRRORSPEC_PAUSE_DIR=folder,
                      MIRRORSPEC_CRASH_TABLE=table)
    helper = threading.Thread(target=wait_then_act, daemon=True)
    helper.start()
    try:
        yield
    finally:
        for name in ("MIRRORSPEC_PAUSE_AT", "MIRRORSPEC_PAUSE_DIR", "MIRRORSPEC_CRASH_TABLE"):
            os.environ.pop(name, None)
        open(go, "w").close()
        helper.join()
    assert acted.is_set(), "the engine never reached after_commit"


def replicating(snap, unique_id):
    outcome = snap["outcomes"][unique_id]
    assert outcome.status == "Replicating", (unique_id, outcome.status, outcome.error)
    return outcome


def rows(snap, unique_id, columns=None):
    table_columns, data = snap["tables"][unique_id]
    columns = columns or table_columns
    return Counter(tuple(r[c] for c in columns) for r in data)


def test_string_markers_anywhere_in_the_row(zone):
    first = zone["first"]
    replicating(first, "dbo.string_marker")
    assert first["tables"]["dbo.string_marker"][0] == ["id", "v"]
    assert rows(first, "dbo.string_marker") == Counter({(1, "a2"): 1, (3, "c2"): 1, (4, "d"): 1})
    replicating(first, "dbo.csv_marker_first")
    assert first["tables"]["dbo.csv_marker_first"][0] == ["id", "v"]
    assert rows(first, "dbo.csv_marker_first") == Counter({(1, "a2"): 1})


def test_a_required_int32_marker_as_the_first_column(zone):
    replicating(zone["first"], "dbo.int32_marker_first")
    assert zone["first"]["tables"]["dbo.int32_marker_first"][0] == ["id", "v"]
    assert rows(zone["first"], "dbo.int32_marker_first") == Counter({(1, "a2"): 1, (3, "c"): 1})


def test_double_underscore_columns_of_the_partner_are_table_columns(zone):
    replicating(zone["first"], "dbo.rowid_key")
    columns, _ = zone["first"]["tables"]["dbo.rowid_key"]
    assert columns == ["__rowid__", "__source__", "v"]
    assert rows(zone["first"], "dbo.rowid_key") == Counter(
        {(1, "bc", "a2"): 1, (3, "bc", "c"): 1})


def test_a_column_named_like_an_engine_column_stops_its_table(zone):
    outcome = zone["first"]["outcomes"]["dbo.engine_column"]
    assert outcome.status == "Failed" and outcome.error["file"].endswith(seq(2))
    assert "'__P' is a name the mirroring engine works with" in outcome.error["message"]
    assert rows(zone["first"], "dbo.engine_column") == Counter({(1, "a"): 1})


def test_schema_and_table_folders_with_spaces(zone):
    outcome = replicating(zone["first"], "My Schema.My Table")
    assert outcome.delta_path.endswith("/My Schema/My Table")
    assert rows(zone["first"], "My Schema.My Table") == Counter({(1, "a"): 1, (2, "b2"): 1})
    outcome = replicating(zone["first"], "My Schema.Time Table")
    assert outcome.files_applied == ["batch one.parquet", "batch two.parquet"]
    assert rows(zone["first"], "My Schema.Time Table") == Counter({(1, "a2"): 1})


def test_root_level_tables_go_to_dbo(zone):
    outcome = replicating(zone["first"], "dbo.string_marker")
    assert outcome.schema is None
    assert outcome.delta_path == os.path.join(zone["warehouse"], "dbo", "string_marker")


def test_a_utf8_bom_never_reaches_a_column_name(zone):
    replicating(zone["first"], "dbo.bom_csv")
    columns, _ = zone["first"]["tables"]["dbo.bom_csv"]
    assert columns == ["id", "v"]
    assert rows(zone["first"], "dbo.bom_csv") == Counter({(1, "a2"): 1})


def test_whole_table_reuploads_keyed_by_line_number_keep_lines_no_longer_sent(zone):
    replicating(zone["first"], "dbo.line_reupload")
    assert rows(zone["first"], "dbo.line_reupload") == Counter(
        {("1", "apple"): 1, ("2", "fig"): 1, ("3", "plum"): 1})


@pytest.mark.parametrize("name,files", [("recreated_unseen", 4), ("recreated_fewer", 1)])
def test_a_folder_recreated_between_passes_rebuilds_the_table_with_its_new_schema(
        zone, name, files):
    assert rows(zone["first"], f"dbo.{name}") == Counter({(1, "a2"): 1, (2, "b"): 1, (3, "c"): 1})
    outcome = replicating(zone["second"], f"dbo.{name}")
    assert outcome.files_applied == [seq(n) for n in range(1, files + 1)]
    assert rows(zone["second"], f"dbo.{name}") == Counter(
        {(10 * n, n): 1 for n in range(1, files + 1)})
    _, data = zone["second"]["tables"][f"dbo.{name}"]
    assert all(isinstance(r["v"], int) for r in data)  # v changed type from string to bigint


def test_a_failed_tables_folder_recreated_with_the_new_type_replicates(zone):
    outcome = zone["first"]["outcomes"]["dbo.recreated_failed"]
    assert outcome.status == "Failed" and outcome.error["errorCode"] == "ColumnTypeChanged"
    assert rows(zone["first"], "dbo.recreated_failed") == Counter({(1, "a"): 1})
    outcome = replicating(zone["second"], "dbo.recreated_failed")
    assert outcome.files_applied == [seq(1), seq(2)]
    assert rows(zone["second"], "dbo.recreated_failed") == Counter({(10, 1): 1, (20, 2): 1})


def test_a_folder_deleted_then_reuploaded_is_dropped_then_rebuilt(zone):
    assert zone["second"]["outcomes"]["dbo.recreated_seen"].status == "Dropped"
    assert "dbo.recreated_seen" not in zone["second"]["tables"]
    outcome = replicating(zone["third"], "dbo.recreated_seen")
    assert outcome.files_applied == [seq(1), seq(2)]
    assert rows(zone["third"], "dbo.recreated_seen") == Counter({(10, 1): 1, (20, 2): 1})


def test_a_folder_recreated_within_a_pass_is_rebuilt_on_the_next(zone):
    """Deleted and re-uploaded from file 1 between the commit and the moves of one pass: the
    new files (same names as the ones applied) stay in the folder, and the next pass rebuilds
    the table from all of them."""
    outcome = replicating(zone["second"], "dbo.recreated_midpass")
    assert outcome.files_applied == [seq(4)]
    outcome = replicating(zone["third"], "dbo.recreated_midpass")
    assert outcome.files_applied == [seq(n) for n in range(1, 5)]
    assert rows(zone["third"], "dbo.recreated_midpass") == Counter(
        {(10 * n, n): 1 for n in range(1, 5)})


def test_bc2adls_zero_byte_csv_stops_the_table_until_rewritten(zone):
    outcome = zone["first"]["outcomes"]["dbo.bc_zero_byte"]
    assert outcome.status == "Failed" and outcome.error["errorCode"] == "BadFile"
    assert outcome.error["file"].endswith(seq(2, "csv"))
    assert "zero-byte" in outcome.error["message"]
    assert rows(zone["first"], "dbo.bc_zero_byte") == Counter({("1", "a"): 1})
    outcome = replicating(zone["second"], "dbo.bc_zero_byte")
    assert outcome.files_applied == [seq(2, "csv"), seq(3, "csv")]
    assert rows(zone["second"], "dbo.bc_zero_byte") == Counter({("1", "a"): 1, ("2", "b"): 1})


def test_bc2adls_header_only_csv_of_an_empty_table(zone):
    replicating(zone["first"], "dbo.bc_empty_table")
    columns, data = zone["first"]["tables"]["dbo.bc_empty_table"]
    assert columns == ["systemId", "Description", "SystemModifiedAt", "Amount"]
    assert data == []


def test_bc2adls_empty_datetime_cells_and_null_cells_of_delete_rows(zone):
    replicating(zone["first"], "dbo.bc_nulls")
    assert rows(zone["first"], "dbo.bc_nulls", ["systemId", "Description", "SystemModifiedAt",
                                                "Amount"]) == Counter(
        {("s2", "two", dt.datetime(2025, 1, 2, 3, 4, 5), 2.0): 1})


def test_lint_predicted_where_the_engine_stopped(zone):
    assert_lint_agrees(zone["first"]["outcomes"], zone["lint"])


# --- strict: the marker last, as an integer ------------------------------------------------

@pytest.fixture(scope="module")
def strict_zone(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("partner_habits_strict")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    parquet(folder(landing, "string_last", KEYED), seq(1),
            {"id": [1], M: ["0"]}, {M: pa.string(), "id": pa.int64()})
    parquet(folder(landing, "int_first", KEYED), seq(1), {M: [0], "id": [1]}, {"id": pa.int64()})
    write(folder(landing, "csv_first", KEYED), seq(1, "csv"), b"__rowMarker__,id\r\n0,1\r\n")
    parquet(folder(landing, "int_last", KEYED), seq(1), {"id": [1], M: [0]}, {"id": pa.int64()})
    linted = {t.unique_id: t for t in lint_landing_zone(landing, strict=True).tables}
    result = engine.mirror_landing_zone(spark, landing, warehouse,
                                        engine.MirrorOptions(threads=1, strict=True))
    return {"outcomes": {o.unique_id: o for o in result.tables}, "lint": linted}


@pytest.mark.parametrize("name,words", [("string_last", "not an integer"),
                                        ("int_first", "not the last column"),
                                        ("csv_first", "not the last column")])
def test_strict_refuses_what_the_service_asks_otherwise(strict_zone, name, words):
    outcome = strict_zone["outcomes"][f"dbo.{name}"]
    assert outcome.status == "Failed", outcome
    assert words in outcome.error["message"] and "--strict" in outcome.error["message"]
    assert outcome.error["file"].endswith(seq(1, "csv" if name.startswith("csv") else "parquet"))


def test_strict_lint_and_engine_agree(strict_zone):
    assert strict_zone["outcomes"]["dbo.int_last"].status == "Replicating"
    assert_lint_agrees(strict_zone["outcomes"], strict_zone["lint"])
