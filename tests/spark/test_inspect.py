"""show (with time travel) and history on a hand-built Delta table."""

from __future__ import annotations

import json

import pytest

from mirrorspec.errors import InspectError
from mirrorspec.spark.inspect import history, history_entry, preview


@pytest.fixture(scope="module")
def delta_table(spark, tmp_path_factory):
    """Version 0: ids 1-3 (a WRITE); version 1: a MERGE updating 2, deleting 3, inserting 4,
    committed with engine-style userMetadata naming the landing file it applied."""
    from delta.tables import DeltaTable

    path = str(tmp_path_factory.mktemp("inspect") / "sales" / "orders")
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, v string") \
        .write.format("delta").save(path)
    session = spark.newSession()
    session.conf.set("spark.databricks.delta.commitInfo.userMetadata",
                     json.dumps({"files": ["00000000000000000002.parquet"]}))
    changes = session.createDataFrame([(2, "B", 1), (3, None, 2), (4, "d", 0)],
                                      "id int, v string, m int")
    (DeltaTable.forPath(session, path).alias("t")
     .merge(changes.alias("s"), "t.id = s.id")
     .whenMatchedDelete("s.m = 2")
     .whenMatchedUpdate(set={"v": "s.v"})
     .whenNotMatchedInsert(values={"id": "s.id", "v": "s.v"})
     .execute())
    return path


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
