"""show (with time travel) and history on a hand-built Delta table."""

from __future__ import annotations

import json

import pytest

from mirrorspec.base.errors import InspectError
from mirrorspec.spark.ops.inspect import history, history_entry, preview


@pytest.fixture(scope="module")
def delta_table(spark, tmp_path_factory):
    """Version 0: ids 1-3 (a WRITE); version 1: a MERGE updating 2, deleting 3, inserting 4,
    committed with engine-style userMetadata naming the landing file it applied."""
    path = str(tmp_path_factory.mktemp("inspect") / "sales" / "orders")
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, v string") \
        .write.format("delta").save(path)
    session = spark.newSession()
    session.conf.set("spark.databricks.delta.commitInfo.userMetadata",
                     json.dumps({"files": ["00000000000000000002.parquet"]}))
    merge_changes(session, path, [(2, "B", 1), (3, None, 2), (4, "d", 0)])
    return path


def merge_changes(session, path: str, changes: list[tuple]) -> None:
    """MERGE (id, v, marker) rows: marker 2 deletes, a match updates v, the rest insert."""
    from delta.tables import DeltaTable

    source = session.createDataFrame(changes, "id int, v string, m int")
    (DeltaTable.forPath(session, path).alias("t")
     .merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete("s.m = 2")
     .whenMatchedUpdate(set={"v": "s.v"})
     .whenNotMatchedInsert(values={"id": "s.id", "v": "s.v"})
     .execute())


def test_preview_current_rows_with_where_and_limit(spark, delta_table):
    columns, rows = preview(spark, delta_table, "sales.orders")
    assert columns == ["id", "v"]
    assert sorted(map(tuple, rows)) == [(1, "a"), (2, "B"), (4, "d")]
    _, rows = preview(spark, delta_table, where="id >= 2")
    assert sorted(map(tuple, rows)) == [(2, "B"), (4, "d")]
    _, rows = preview(spark, delta_table, limit=1)
    assert len(rows) == 1


def test_preview_time_travel_by_version_and_timestamp(spark, delta_table):
    _, rows = preview(spark, delta_table, version=0)
    assert sorted(map(tuple, rows)) == [(1, "a"), (2, "b"), (3, "c")]
    first = history(spark, delta_table)[-1]
    _, rows = preview(spark, delta_table, timestamp=first.timestamp)
    assert sorted(map(tuple, rows)) == [(1, "a"), (2, "b"), (3, "c")]


def test_preview_errors_are_user_errors(spark, delta_table, tmp_path):
    with pytest.raises(InspectError, match="version") as info:
        preview(spark, delta_table, "sales.orders", version=99)
    assert "mirrorspec history" in str(info.value)
    with pytest.raises(InspectError, match="sales.orders"):
        preview(spark, delta_table, "sales.orders", where="no_such_column = 1")
    with pytest.raises(InspectError, match="no Delta table"):
        preview(spark, str(tmp_path / "nothing"), "dbo.nothing")


def test_history_lists_commits_newest_first_with_files_and_row_counts(spark, delta_table):
    entries = history(spark, delta_table)
    assert [e.version for e in entries] == [1, 0]
    merge, write = entries
    assert merge.operation == "MERGE"
    assert merge.files_applied == ["00000000000000000002.parquet"]
    assert (merge.rows_inserted, merge.rows_updated, merge.rows_deleted) == (1, 1, 1)
    assert write.operation == "WRITE" and write.rows_inserted == 3 and write.files_applied == []
    assert len(history(spark, delta_table, limit=1)) == 1


def test_history_entry_is_lenient_about_user_metadata():
    entry = history_entry(3, "2026-01-01", "MERGE", {"numTargetRowsInserted": "5"}, "not json")
    assert entry.user_metadata == "not json" and entry.files_applied == []
    assert entry.rows_inserted == 5 and entry.rows_deleted is None
    # the engine keeps its commit state under "mirrorspec"
    engine = history_entry(2, "2026-01-01", "MERGE", {"numTargetRowsDeleted": "1"},
                           '{"mirrorspec": {"files": ["00000000000000000003.parquet"]}}')
    assert engine.files_applied == ["00000000000000000003.parquet"] and engine.rows_deleted == 1


@pytest.fixture(scope="module")
def dv_table(spark, tmp_path_factory):
    """Version 0: ids 1-5 in one file; version 1: DELETE id 2, leaving a deletion vector;
    version 2: the MERGE of `delta_table`'s kind."""
    path = str(tmp_path_factory.mktemp("inspect_dv") / "orders")
    spark.createDataFrame([(i, chr(96 + i)) for i in range(1, 6)], "id int, v string") \
        .coalesce(1).write.format("delta").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    merge_changes(spark, path, [(3, "C", 1), (4, None, 2), (6, "f", 0)])
    return path


def test_delta_rs_reads_what_spark_reads_with_deletion_vectors(spark, dv_table):
    """The JVM-free reader behind `show`/`history` gives Spark's answer on a table with
    deletion vectors (which `to_pyarrow_table()` refuses)."""
    import deltalake

    from mirrorspec.readers import delta as delta_rs

    delta_table = dv_table

    table = deltalake.DeltaTable(delta_table)
    assert "deletionVectors" in (table.protocol().reader_features or [])
    assert _has_deletion_vector(delta_table)
    with pytest.raises(Exception, match="(?i)deletion"):
        table.to_pyarrow_table()
    for kwargs in ({}, {"where": "ID >= 2"}, {"version": 0}, {"version": 1}, {"limit": 1}):
        spark_columns, spark_rows = preview(spark, delta_table, order_by=["id"], **kwargs)
        columns, rows, _version = delta_rs.preview(delta_table, order_by=["id"], **kwargs)
        assert (columns, rows) == (spark_columns, spark_rows), kwargs
    spark_history = history(spark, delta_table)
    rs_history = delta_rs.history(delta_table)
    assert [(e.version, e.operation, e.files_applied, e.rows_inserted, e.rows_updated,
             e.rows_deleted) for e in rs_history] == \
        [(e.version, e.operation, e.files_applied, e.rows_inserted, e.rows_updated,
          e.rows_deleted) for e in spark_history]
    first = spark_history[-1].timestamp
    _, rows, version = delta_rs.preview(delta_table, timestamp=delta_rs.parse_timestamp(first))
    assert version == 0 and [r[0] for r in rows] == [1, 2, 3, 4, 5]
    _, rows, _ = delta_rs.preview(delta_table, order_by=["id"])
    assert rows == [[1, "a"], [3, "C"], [5, "e"], [6, "f"]]


def _has_deletion_vector(path: str) -> bool:
    """Whether some live-or-past add action of the log carries a deletion vector."""
    import glob
    import os

    for log in glob.glob(os.path.join(path, "_delta_log", "*.json")):
        with open(log) as handle:
            if any(json.loads(line).get("add", {}).get("deletionVector")
                   for line in handle if line.strip()):
                return True
    return False
