"""The read path's pure parts: --where rewritten for DataFusion, --timestamp parsing, URIs."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mirrorspec.readers.delta import parse_timestamp, table_uri
from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError
from mirrorspec.readers.sql import spark_where_to_datafusion

COLUMNS = ["Order_ID", "Status", "note"]


@pytest.mark.parametrize("spark, datafusion", [
    ("status = 'open'", "\"Status\" = 'open'"),
    ("STATUS = \"open\"", "\"Status\" = 'open'"),           # "…" is a string in Spark SQL
    ("`order_id` == 2", "\"Order_ID\" = 2"),                # backticks, ==
    ("lower(status) like 'o%'", "lower(\"Status\") like 'o%'"),
    ("note = 'it\\'s'", "\"note\" = 'it''s'"),              # Spark's backslash escape
    ("note = 'it''s'", "\"note\" = 'it''s'"),
    ("note = 'status'", "\"note\" = 'status'"),             # names inside strings stay
    ("unknown is null", "unknown is null"),
])
def test_where_keeps_spark_meaning(spark, datafusion):
    assert spark_where_to_datafusion(spark, COLUMNS) == datafusion


def test_a_function_named_like_a_column_stays_a_function():
    assert spark_where_to_datafusion("note(status) = 1", COLUMNS) == "note(\"Status\") = 1"


@pytest.mark.parametrize("text, expected", [
    ("2026-01-31", datetime(2026, 1, 31, tzinfo=timezone.utc)),
    ("2026-01-31 12:00:00", datetime(2026, 1, 31, 12, tzinfo=timezone.utc)),
    ("2026-01-31T12:00:00Z", datetime(2026, 1, 31, 12, tzinfo=timezone.utc)),
    ("2026-01-31T14:00:00+02:00", datetime(2026, 1, 31, 12, tzinfo=timezone.utc)),
])
def test_timestamps(text, expected):
    assert parse_timestamp(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "", "31/01/2026"])
def test_bad_timestamps_say_what_to_give(text):
    with pytest.raises(InspectError, match="ISO 8601"):
        parse_timestamp(text)


def test_table_uris():
    assert table_uri("s3a://bucket/wh/t") == "s3://bucket/wh/t"
    assert table_uri("abfss://c@a.dfs.core.windows.net/t") == "abfss://c@a.dfs.core.windows.net/t"
    assert table_uri("rel/t").startswith("/")
    with pytest.raises(DeltaRsUnsupported):
        table_uri("hdfs://nn/t")
