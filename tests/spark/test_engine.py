"""Hand-written engine cases. Each pass covers several tables at once (the session is slow to
drive, so tables share passes); each test asserts one behaviour on the pass's outcome.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from datetime import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.support.reference_model import ModelTable

from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.spark.mirror import engine
from mirrorspec.artifacts.status import read_status

M = "__rowMarker__"


# --- helpers ----------------------------------------------------------------------------------

def table_dir(landing, table, schema=None, metadata=None, raw=None):
    folder = os.path.join(landing, f"{schema}.schema", table) if schema else \
        os.path.join(landing, table)
    os.makedirs(folder, exist_ok=True)
    if raw is not None or metadata is not None:
        with open(os.path.join(folder, "_metadata.json"), "w") as handle:
            handle.write(raw if raw is not None else json.dumps(metadata))
    return folder


def parquet(folder, seq, columns, compression="snappy", schema=None):
    name = sequence_file_name(seq) if isinstance(seq, int) else seq
    path = os.path.join(folder, name)
    pq.write_table(pa.table(columns, schema=schema), path, compression=compression)
    return path


def text(folder, name, content, encoding="utf-8"):
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(content.encode(encoding))
    return path


def delta_rows(spark, path, columns):
    return Counter(tuple(r[c] for c in columns)
                   for r in spark.read.format("delta").load(path).collect())


def model(changes, keys):
    """The rows after `changes` (marker, row) in order, by the one reference model."""
    table = ModelTable(keys)
    table.columns = list(dict.fromkeys(c for _, row in changes for c in row))
    table.apply_changes(changes)
    return table.rows


def by_name(result):
    return {o.unique_id: o for o in result.tables}


# --- pass 1 and 2 over one landing zone with many tables --------------------------------------

@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("engine")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    keyed = {"keyColumns": ["id"]}
    # markers: insert, update, delete, upsert across two files; a duplicate insert
    t = table_dir(landing, "markers", metadata=keyed)
    parquet(t, 1, {"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], M: [0, 0, 0, 0]})
    parquet(t, 2, {"id": [1, 2, 5, 3, 3, 4], "v": ["A", None, "e", "c2", "c3", "D"],
                   M: [1, 2, 4, 0, 1, 4]})
    # default marker: no marker column, isUpsertDefaultRowMarker → upserts
    t = table_dir(landing, "upserts", metadata={"keyColumns": ["id"],
                                                "isUpsertDefaultRowMarker": True})
    parquet(t, 1, {"id": [1, 2, 1], "v": ["a", "b", "a2"]})
    # keyless (no _metadata.json): inserts only, duplicates kept
    t = table_dir(landing, "keyless")
    parquet(t, 1, {"id": [1, 1], "v": ["x", "x"]})
    # keyless with an update: the table fails
    t = table_dir(landing, "keyless_update", metadata={})
    parquet(t, 1, {"id": [1], "v": ["x"], M: [1]})
    # bad marker in the second file: file 1 applied, then Failed naming file 2, row 2
    t = table_dir(landing, "badmarker", schema="sales", metadata=keyed)
    parquet(t, 1, {"id": [1], "v": ["a"], M: [0]})
    parquet(t, 2, {"id": [2, 3], "v": ["b", "c"], M: [0, 3]})
    parquet(t, 3, {"id": [4], "v": ["d"], M: [0]})
    # a gap: 1, 2, 4 → 1 and 2 applied, waiting for 3
    t = table_dir(landing, "gap", metadata=keyed)
    for seq in (1, 2, 4):
        parquet(t, seq, {"id": [seq], "v": [str(seq)], M: [0]})
    # a column added in file 2, dropped in file 3
    t = table_dir(landing, "columns", metadata=keyed)
    parquet(t, 1, {"id": [1], "v": ["a"], M: [0]})
    parquet(t, 2, {"id": [2], "v": ["b"], "extra": [2.5], M: [0]})
    parquet(t, 3, {"id": [1, 3], M: [1, 0]})
    # a type change in file 2: the table fails, file 1 applied
    t = table_dir(landing, "typechange", metadata=keyed)
    parquet(t, 1, {"id": [1], "v": ["a"], M: [0]})
    parquet(t, 2, {"id": [2], "v": [7], M: [0]})
    # a zero-byte file
    t = table_dir(landing, "zerobyte", metadata=keyed)
    parquet(t, 1, {"id": [1], "v": ["a"], M: [0]})
    text(t, sequence_file_name(2), "")
    # a NULL key in a delete row
    t = table_dir(landing, "nullkey", metadata=keyed)
    parquet(t, 1, {"id": pa.array([1, None], pa.int64()), "v": ["a", "b"], M: [0, 2]})
    # invalid _metadata.json
    t = table_dir(landing, "badmeta", raw="{not json")
    parquet(t, 1, {"id": [1], M: [0]})
    # LastUpdateTimeFileDetection: any names, ordered by modification time then name
    t = table_dir(landing, "bytime", metadata={"keyColumns": ["id"],
                                               "fileDetectionStrategy":
                                                   "LastUpdateTimeFileDetection"})
    late = parquet(t, "b_first.parquet", {"id": [1], "v": ["old"], M: [0]})
    early = parquet(t, "a_second.parquet", {"id": [1], "v": ["new"], M: [1]})
    os.utime(late, (1_000_000, 1_000_000))
    os.utime(early, (2_000_000, 2_000_000))
    # compressed Parquet and a zero-row file
    t = table_dir(landing, "codecs", metadata=keyed)
    parquet(t, 1, {"id": [1], "v": ["gz"], M: [0]}, compression="gzip")
    parquet(t, 2, {"id": [2], "v": ["zs"], M: [0]}, compression="zstd")
    parquet(t, 3, {"id": pa.array([], pa.int64()), "v": pa.array([], pa.string()),
                   M: pa.array([], pa.int64())}, compression="none")
    # a non-data file is ignored
    text(t, "notes.txt", "ignore me")
    # nanosecond timestamps, as pandas/pyarrow write them
    t = table_dir(landing, "nanos", metadata=keyed)
    parquet(t, 1, {"id": [1], "v": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns")),
                   M: [0]})

    first = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions(threads=2))
    snapshot1 = {uid: delta_rows(spark, os.path.join(warehouse, *uid.split(".")), ["id", "v"])
                 for uid in ("dbo.markers", "dbo.gap", "sales.badmarker")}
    # pass 2: more files arrive; the bad file is re-written; the gap is filled
    parquet(os.path.join(landing, "markers"), 3, {"id": [1, 9], "v": ["A2", "z"], M: [1, 0]})
    parquet(os.path.join(landing, "sales.schema", "badmarker"), 2,
            {"id": [2, 3], "v": ["b", "c"], M: [0, 0]})
    parquet(os.path.join(landing, "gap"), 3, {"id": [3], "v": ["3"], M: [0]})
    second = engine.mirror_landing_zone(spark, landing, warehouse,
                                        engine.MirrorOptions(threads=2))
    third = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions(threads=2))
    return {"landing": landing, "warehouse": warehouse, "first": by_name(first),
            "second": by_name(second), "third": by_name(third), "snapshot1": snapshot1,
            "result1": first}


def wpath(zone, uid):
    return os.path.join(zone["warehouse"], *uid.split("."))


def test_markers_follow_the_seed_table(spark, zone):
    assert zone["first"]["dbo.markers"].status == "Replicating"
    changes = [(0, {"id": 1, "v": "a"}), (0, {"id": 2, "v": "b"}), (0, {"id": 3, "v": "c"}),
               (0, {"id": 4, "v": "d"}), (1, {"id": 1, "v": "A"}), (2, {"id": 2, "v": None}),
               (4, {"id": 5, "v": "e"}), (0, {"id": 3, "v": "c2"}), (1, {"id": 3, "v": "c3"}),
               (4, {"id": 4, "v": "D"})]
    expected = Counter((r["id"], r["v"]) for r in model(changes, ["id"]))
    assert zone["snapshot1"]["dbo.markers"] == expected
    assert expected[(3, "c3")] == 2  # the duplicate insert is kept and both rows updated
    changes += [(1, {"id": 1, "v": "A2"}), (0, {"id": 9, "v": "z"})]
    expected = Counter((r["id"], r["v"]) for r in model(changes, ["id"]))
    assert delta_rows(spark, wpath(zone, "dbo.markers"), ["id", "v"]) == expected


def test_processed_files_move_and_the_last_stays(zone):
    folder = os.path.join(zone["landing"], "markers")
    remaining = sorted(n for n in os.listdir(folder) if not n.startswith("_"))
    assert remaining == [sequence_file_name(3)]
    moved = sorted(os.listdir(os.path.join(folder, "_ProcessedFiles")))
    assert moved == [sequence_file_name(1), sequence_file_name(2)]


def test_rerun_applies_nothing_twice(spark, zone):
    third = zone["third"]["dbo.markers"]
    assert third.status == "Replicating"
    assert third.files_applied == []
    assert zone["second"]["dbo.markers"].files_applied == [sequence_file_name(3)]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{wpath(zone, 'dbo.markers')}`").collect()
    assert len(history) == 2  # one commit per pass; pass 3 committed nothing


def test_commit_carries_txn_and_metrics(zone):
    outcome = zone["second"]["dbo.markers"]
    assert (outcome.rows_inserted, outcome.rows_updated, outcome.rows_deleted) == (1, 1, 0)
    log = os.path.join(wpath(zone, "dbo.markers"), "_delta_log")
    txns = []
    for name in sorted(os.listdir(log)):
        if name.endswith(".json"):
            for line in open(os.path.join(log, name)):
                action = json.loads(line)
                if "txn" in action:
                    txns.append((action["txn"]["appId"], action["txn"]["version"]))
    assert txns == [("mirrorspec:dbo.markers", 2), ("mirrorspec:dbo.markers", 3)]
    assert outcome.processed_rows == 4 + 6 + 2  # cumulative change rows


def test_default_upsert_marker(spark, zone):
    assert delta_rows(spark, wpath(zone, "dbo.upserts"), ["id", "v"]) == Counter(
        {(1, "a2"): 1, (2, "b"): 1})


def test_keyless_tables_append_and_reject_updates(spark, zone):
    assert zone["first"]["dbo.keyless"].status == "Replicating"
    assert delta_rows(spark, wpath(zone, "dbo.keyless"), ["id", "v"]) == Counter({(1, "x"): 2})
    failed = zone["first"]["dbo.keyless_update"]
    assert failed.status == "Failed"
    assert "keyColumns" in failed.error["message"]


def test_bad_marker_stops_at_that_file_then_resumes(spark, zone):
    failed = zone["first"]["sales.badmarker"]
    assert failed.status == "Failed"
    assert failed.error["file"].endswith(sequence_file_name(2))
    assert failed.error["row"] == 2
    assert "'3'" in failed.error["message"]
    assert zone["snapshot1"]["sales.badmarker"] == Counter({(1, "a"): 1})
    assert zone["second"]["sales.badmarker"].status == "Replicating"
    assert delta_rows(spark, wpath(zone, "sales.badmarker"), ["id", "v"]) == Counter(
        {(1, "a"): 1, (2, "b"): 1, (3, "c"): 1, (4, "d"): 1})


def test_gap_waits_for_the_missing_file(spark, zone):
    waiting = zone["first"]["dbo.gap"]
    assert waiting.status == "Waiting"
    assert waiting.awaiting == sequence_file_name(3)
    assert zone["snapshot1"]["dbo.gap"] == Counter({(1, "1"): 1, (2, "2"): 1})
    assert zone["second"]["dbo.gap"].status == "Replicating"
    assert len(delta_rows(spark, wpath(zone, "dbo.gap"), ["id", "v"])) == 4


def test_columns_are_the_union_with_null_for_absent(spark, zone):
    df = spark.read.format("delta").load(wpath(zone, "dbo.columns"))
    assert df.columns == ["id", "v", "extra"]
    assert Counter(tuple(r) for r in df.collect()) == Counter(
        {(1, None, None): 1, (2, "b", 2.5): 1, (3, None, None): 1})


def test_type_change_fails_only_that_table(spark, zone):
    failed = zone["first"]["dbo.typechange"]
    assert failed.status == "Failed"
    assert "recreate the table folder" in failed.error["message"]
    assert failed.error["errorCode"] == "ColumnTypeChanged"
    assert delta_rows(spark, wpath(zone, "dbo.typechange"), ["id", "v"]) == Counter({(1, "a"): 1})
    assert zone["first"]["dbo.markers"].status == "Replicating"


def test_zero_byte_file_and_null_key_and_bad_metadata_fail(zone):
    zero = zone["first"]["dbo.zerobyte"]
    assert zero.status == "Failed" and "zero-byte" in zero.error["message"]
    null = zone["first"]["dbo.nullkey"]
    assert null.status == "Failed" and "NULL in key" in null.error["message"]
    assert null.error["row"] == 2
    bad = zone["first"]["dbo.badmeta"]
    assert bad.status == "Failed" and bad.error["errorCode"] == "InvalidMetadata"
    assert zone["result1"].failed


def test_last_update_time_orders_by_mtime(spark, zone):
    assert zone["first"]["dbo.bytime"].files_applied == ["b_first.parquet", "a_second.parquet"]
    assert delta_rows(spark, wpath(zone, "dbo.bytime"), ["id", "v"]) == Counter({(1, "new"): 1})
    assert zone["third"]["dbo.bytime"].files_applied == []


def test_codecs_and_zero_row_files(spark, zone):
    assert zone["first"]["dbo.codecs"].status == "Replicating"
    assert delta_rows(spark, wpath(zone, "dbo.codecs"), ["id", "v"]) == Counter(
        {(1, "gz"): 1, (2, "zs"): 1})


def test_nanosecond_timestamps_are_read(spark, zone):
    import datetime

    assert zone["first"]["dbo.nanos"].status == "Replicating", zone["first"]["dbo.nanos"].error
    assert delta_rows(spark, wpath(zone, "dbo.nanos"), ["id", "v"]) == Counter(
        {(1, datetime.datetime(2023, 11, 14, 22, 13, 20, 123456)): 1})


def test_status_json(zone):
    status = read_status(zone["warehouse"])
    assert status["replicator"]["status"] == "Failed"
    entries = {(t["sourceSchemaName"], t["sourceTableName"]): t for t in status["tables"]}
    markers = entries[("dbo", "markers")]
    assert markers["status"] == "Replicating" and markers["error"] is None
    assert markers["metrics"]["processedRows"] == 12
    assert entries[("sales", "badmarker")]["status"] == "Replicating"
    assert entries[("dbo", "typechange")]["error"]["errorCode"] == "ColumnTypeChanged"


# --- delimited text -------------------------------------------------------------------------

SEED_TSV = r'''{"KeyColumns": ["id"], "SchemaDefinition": {"Columns": [
 {"Name": "id", "DataType": "Int32"}, {"Name": "name", "DataType": "String", "IsNullable": true},
 {"Name": "age", "DataType": "Int32", "IsNullable": true},
 {"Name": "seqNum", "DataType": "Int64", "IsNullable": false}]},
 "FileFormat": "DelimitedText", "FileExtension": "tsv",
 "FileFormatTypeProperties": {"FirstRowAsHeader": true, "RowSeparator": "\r\n",
  "ColumnSeparator": ",", "QuoteCharacter": "'", "EscapeCharacter": "\\", "NullValue": "N/A",
  "Encoding": "UTF-8"}}'''


def test_delimited_dialects(spark, tmp_path):
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    t = table_dir(landing, "tsv", raw=SEED_TSV)
    # \n where \r\n is declared, no final newline, quoted separator, escaped quote, N/A
    text(t, sequence_file_name(1, "tsv"),
         "id,name,age,seqNum,__rowMarker__\n1,'Smith, J',N/A,1,0\n2,'O\\'Neil',40,2,0\n"
         "3,Ann,30,3,0")
    text(t, sequence_file_name(2, "tsv"),
         "id,name,age,seqNum,__rowMarker__\r\n2,,,4,2\r\n3,Anne,31,5,1\r\n")
    # UTF-16 with a BOM, semicolons, marker not last, default quote
    u = table_dir(landing, "utf16", metadata={
        "keyColumns": ["k"], "FileFormatTypeProperties": {"ColumnSeparator": ";",
                                                          "Encoding": "UTF-16"}})
    text(u, "00000000000000000001.csv", "k;__rowMarker__;txt\r\n1;0;\"a;b\"\r\n2;0;ü\r\n",
         encoding="utf-16")
    # windows-1252 and a malformed record
    w = table_dir(landing, "cp1252", metadata={
        "keyColumns": ["k"], "FileFormatTypeProperties": {"Encoding": "windows-1252"}})
    text(w, "00000000000000000001.csv", "k,txt\r\n1,café\r\n", encoding="cp1252")
    text(w, "00000000000000000002.csv", "k,txt\r\n2,x,extra,more\r\n")
    # ITime holding only a time of day lands on 1970-01-01, never on the day it was read
    c = table_dir(landing, "times", metadata={"keyColumns": ["k"], "SchemaDefinition": {
        "Columns": [{"Name": "k", "DataType": "Int32"}, {"Name": "at", "DataType": "ITime"},
                    {"Name": "ts", "DataType": "DateTime"}]}})
    text(c, "00000000000000000001.csv", "k,at,ts\r\n1,14:30:00,2025-06-17T14:30:00Z\r\n"
         "2,T09:05:01.25,2025-06-17 14:30:00.1234567\r\n3,2025-06-17 08:00:00,\r\n")
    result = by_name(engine.mirror_landing_zone(spark, landing, warehouse,
                                                engine.MirrorOptions(threads=2)))
    assert result["dbo.tsv"].status == "Replicating", result["dbo.tsv"].error
    df = spark.read.format("delta").load(os.path.join(warehouse, "dbo", "tsv"))
    assert dict(df.dtypes) == {"id": "int", "name": "string", "age": "int", "seqNum": "bigint"}
    assert Counter(tuple(r) for r in df.collect()) == Counter(
        {(1, "Smith, J", None, 1): 1, (3, "Anne", 31, 5): 1})
    assert result["dbo.utf16"].status == "Replicating", result["dbo.utf16"].error
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "utf16"), ["k", "txt"]) == Counter(
        {("1", "a;b"): 1, ("2", "ü"): 1})
    assert result["dbo.times"].status == "Replicating", result["dbo.times"].error
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "times"), ["k", "at", "ts"]) == \
        Counter({(1, datetime(1970, 1, 1, 14, 30), datetime(2025, 6, 17, 14, 30)): 1,
                 (2, datetime(1970, 1, 1, 9, 5, 1, 250000),
                  datetime(2025, 6, 17, 14, 30, 0, 123456)): 1,
                 (3, datetime(2025, 6, 17, 8), None): 1})
    bad = result["dbo.cp1252"]
    assert bad.status == "Failed" and bad.error["file"].endswith("00000000000000000002.csv")
    assert "malformed" in bad.error["message"]
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "cp1252"), ["k", "txt"]) == Counter(
        {("1", "café"): 1})


# --- table operations, the fold on random batches, strict mode, select -------------------------

def test_drop_recreate_and_random_batches(spark, tmp_path):
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    rng = random.Random(7)
    expected = {}
    for n in range(4):
        folder = table_dir(landing, f"r{n}", metadata={"keyColumns": ["id"]})
        changes = []
        for seq in (1, 2, 3):
            batch = [(rng.choice([0, 0, 1, 2, 4]),
                      {"id": rng.randint(1, 4), "v": rng.randint(0, 9)})
                     for _ in range(rng.randint(1, 8))]
            changes += batch
            parquet(folder, seq, {"id": [r["id"] for _, r in batch],
                                  "v": [r["v"] for _, r in batch], M: [m for m, _ in batch]})
        expected[f"r{n}"] = Counter((r["id"], r["v"]) for r in model(changes, ["id"]))
    doomed = table_dir(landing, "doomed", metadata={"keyColumns": ["id"]})
    parquet(doomed, 1, {"id": [1], "v": [1], M: [0]})
    engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions(threads=2))
    for name, rows in expected.items():
        assert delta_rows(spark, os.path.join(warehouse, "dbo", name), ["id", "v"]) == rows, name

    # delete one folder (dropped), recreate another with new data (rebuilt)
    import shutil
    shutil.rmtree(doomed)
    shutil.rmtree(os.path.join(landing, "r0"))
    again = table_dir(landing, "r0", metadata={"keyColumns": ["id"]})
    parquet(again, 1, {"id": [42], "v": [0], M: [0]})
    result = by_name(engine.mirror_landing_zone(spark, landing, warehouse,
                                                engine.MirrorOptions(threads=2,
                                                                     select=("dbo.r0", "doomed"))))
    assert result["dbo.doomed"].status == "Dropped"
    assert not os.path.exists(os.path.join(warehouse, "dbo", "doomed"))
    assert set(result) == {"dbo.doomed", "dbo.r0"}  # --select limits the pass
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "r0"), ["id", "v"]) == Counter(
        {(42, 0): 1})


def test_strict_reports_a_marker_that_is_not_last(spark, tmp_path):
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    folder = table_dir(landing, "t", metadata={"keyColumns": ["id"]})
    parquet(folder, 1, {M: [0], "id": [1]})
    strict = engine.mirror_landing_zone(spark, landing, warehouse,
                                        engine.MirrorOptions(strict=True, threads=1))
    assert strict.tables[0].status == "Failed"
    assert "last column" in strict.tables[0].error["message"]
    lenient = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions())
    assert lenient.tables[0].status == "Replicating"


def test_mirror_command_reports_and_exits_1_on_a_failed_table(spark, tmp_path):
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    good = table_dir(landing, "good", metadata={"keyColumns": ["id"]})
    parquet(good, 1, {"id": [1, 2], M: [0, 0]})
    bad = table_dir(landing, "bad", metadata={"keyColumns": ["id"]})
    parquet(bad, 1, {"id": [1], M: [7]})
    result = CliRunner().invoke(cli, ["mirror", "--landing-zone", landing, "--warehouse",
                                      warehouse, "--master", "local[2]", "--threads", "2"])
    assert result.exit_code == 1, result.output
    assert "dbo.bad" in result.output and "1 table(s) failed" in result.output
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "good"), ["id"]) == Counter(
        {(1,): 1, (2,): 1})
    status = read_status(warehouse)
    assert {t["sourceTableName"]: t["status"] for t in status["tables"]} == {
        "good": "Replicating", "bad": "Failed"}
    # progress: a line per finished table, plain text in a pipe (no ANSI codes)
    assert re.search(r"[12] of 2 OK dbo\.good: 1 file\(s\) applied, \+2 ~0 -0 rows in "
                     r"\d+\.\ds", result.output), result.output
    assert re.search(r"[12] of 2 ERROR dbo\.bad: 0 file\(s\) applied", result.output)
    assert "\x1b" not in result.output
    # the same under --log-format json: typed table_started / table_finished events
    again = CliRunner().invoke(cli, ["--log-format", "json", "mirror", "--landing-zone", landing,
                                     "--warehouse", warehouse, "--master", "local[2]"])
    events = [json.loads(line) for line in again.output.splitlines() if line.startswith("{")]
    started = sorted(e["table"] for e in events if e["event"] == "table_started")
    finished = {e["table"]: e for e in events if e["event"] == "table_finished"}
    assert started == ["dbo.bad", "dbo.good"] and set(finished) == set(started)
    good_event, bad_event = finished["dbo.good"], finished["dbo.bad"]
    assert (good_event["status"], good_event["files_applied"], good_event["total"]) == (
        "success", 0, 2)  # nothing new to apply this time
    assert isinstance(good_event["seconds"], float) and good_event["error"] is None
    assert bad_event["status"] == "error" and "marker" in bad_event["error"].lower()
    assert isinstance(bad_event["rows_per_second"], float) and bad_event["failed"] >= 1


def test_mirror_watch_passes_show_progress_only_when_there_is_news(spark, tmp_path):
    """`mirror --watch`: a pass that applies files prints its table's line; an idle
    pass prints nothing at all (no bar, no line) through the watch's QuietConsole."""
    import io

    from mirrorspec.context.mirror import outcome_key
    from mirrorspec.base.console import Console
    from mirrorspec.operate.watch import QuietConsole

    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    folder = table_dir(landing, "t", metadata={"keyColumns": ["id"]})
    parquet(folder, 1, {"id": [1, 2], M: [0, 0]})
    stream = io.StringIO()
    quiet = QuietConsole(Console(stream=stream))

    def one_pass() -> str:
        before = len(stream.getvalue())
        result = engine.mirror_landing_zone(
            spark, landing, warehouse, engine.MirrorOptions(threads=1), quiet, progress=True,
            news=lambda t: quiet.news(t.unique_id, outcome_key(t)))
        quiet.end_pass({t.unique_id: outcome_key(t) for t in result.tables})
        return stream.getvalue()[before:]

    first = one_pass()
    assert "1 of 1 OK dbo.t: 1 file(s) applied, +2 ~0 -0 rows" in first, first
    assert one_pass() == ""  # idle: silent
    parquet(folder, 2, {"id": [3], M: [0]})
    busy = one_pass()
    assert "1 of 1 OK dbo.t: 1 file(s) applied" in busy and "1 file(s) pending" in busy, busy
    assert one_pass() == ""
