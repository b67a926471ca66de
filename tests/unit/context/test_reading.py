"""The rows `context/reading.py` hands both doors: Spark's collected rows and delta-rs' Arrow
table give the command line Python values and the API a pyarrow.Table."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa

from mirrorspec.context.reading import DELTA_RS, SPARK, TableRows


def test_spark_rows_become_an_arrow_table_with_their_columns_even_when_empty():
    read = TableRows("sales.orders", SPARK, None, ["id", "note"], values=[[1, None], [2, "b"]])
    assert read.rows() == [[1, None], [2, "b"]]
    assert read.to_arrow().to_pylist() == [{"id": 1, "note": None}, {"id": 2, "note": "b"}]
    nothing = TableRows("sales.orders", SPARK, None, ["id", "note"], values=[])
    assert nothing.rows() == [] and nothing.to_arrow().column_names == ["id", "note"]


def test_delta_rs_rows_are_the_arrow_table_and_naive_utc_values():
    stamp = datetime(2026, 1, 31, 12, tzinfo=timezone.utc)
    data = pa.table({"id": [1], "at": pa.array([stamp], pa.timestamp("us", tz="UTC"))})
    read = TableRows("sales.orders", DELTA_RS, 3, data.column_names, arrow=data)
    assert read.to_arrow() is data
    assert read.rows() == [[1, datetime(2026, 1, 31, 12)]]
