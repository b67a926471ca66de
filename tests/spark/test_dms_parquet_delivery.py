"""AWS DMS Parquet CDC files (`DataFormat=parquet`) get the delivery checks of CSV ones: a row
an earlier batch applied (by AR_H_CHANGE_SEQ, or below the commit time) is a re-send, dropped;
a keyless row equal to one its file sent at the same commit time stops the table. One Spark
read per case, tiny files written with pyarrow as DMS's S3 target lays them out (Op, the
TimestampColumnName column, the table's columns, an added `$AR_H_CHANGE_SEQ` column)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.support.project_files import feed_plan

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.delivery import STATE_KEY, STREAM, Marks
from mirrorspec.sources.replicator_positions import sequence_position
from mirrorspec.spark.publish.feeds import get_reader

COLUMNS = [("id", "Int32"), ("name", "String"), ("change_seq", "String")]


def seq(n: int) -> str:
    return f"2023102911340100{n:019d}"


def write(folder, name: str, rows: list[tuple]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    names = ["Op", "ts", "id", "name", "change_seq"]
    table = pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)},
                     schema=pa.schema([("Op", pa.string()), ("ts", pa.string()),
                                       ("id", pa.int32()), ("name", pa.string()),
                                       ("change_seq", pa.string())]))
    path = folder / name
    pq.write_table(table, path)
    return str(path)


def test_parquet_cdc_rows_are_checked_like_csv_rows(spark, tmp_path):
    feed = tmp_path / "feed"
    first = write(feed, "20231029-113501000.parquet", [
        ("I", "2023-10-29 11:34:01.000001", 1, "a", seq(1)),   # applied by the earlier batch
        ("I", "2023-10-29 11:34:02.000001", 2, "b", seq(2)),
        ("I", "2023-10-29 11:34:02.000001", 2, "b", seq(2))])  # the same change again
    table = feed_plan(tmp_path, "aws_dms", feed, COLUMNS, [],
                      {"timestamp_column": "ts", "change_sequence_column": "change_seq"})
    marks = Marks().advanced([("", STREAM, False, sequence_position(seq(1)), [])])
    got = get_reader("aws_dms").read(spark, table, [first], {STATE_KEY: marks.to_state()})
    rows = got.changes.orderBy("_order").collect()
    assert [(r["id"], r["name"]) for r in rows] == [(2, "b")]
    assert rows[0]["_delivery"]["exact"] and rows[0]["_order"]["ts"] == seq(2)

    # by commit time only: two equal rows of one transaction in a keyless table stop it
    twice = write(tmp_path / "twice", "20231029-113601000.parquet", [
        ("I", "2023-10-29 11:34:03.000001", 3, "c", None),
        ("I", "2023-10-29 11:34:03.000001", 3, "c", None)])
    table = feed_plan(tmp_path / "t2", "aws_dms", tmp_path / "twice", COLUMNS, [],
                      {"timestamp_column": "ts"})
    with pytest.raises(SourceError, match="equals one the file sent before") as err:
        get_reader("aws_dms").read(spark, table, [twice], {})
    assert err.value.line == 2 and err.value.file.endswith("20231029-113601000.parquet")
