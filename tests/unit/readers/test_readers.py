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


def test_storage_options_from_the_profiles_spark_conf():
    from mirrorspec.readers.storage import storage_options

    conf = {"spark.hadoop.fs.s3a.access.key": "AK", "spark.hadoop.fs.s3a.secret.key": "SK",
            "spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "AZ",
            "spark.sql.shuffle.partitions": "2"}
    assert storage_options(conf) == {
        "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        "AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "AZ"}
    assert storage_options({"spark.hadoop.fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com"}) == \
        {"AWS_ENDPOINT_URL": "https://s3.eu-west-1.amazonaws.com"}


def test_an_object_store_table_delta_rs_cannot_open_goes_to_spark():
    """Missing credentials look like a missing table to delta-rs: Spark gives the answer."""
    from mirrorspec.readers.delta import open_table

    with pytest.raises(DeltaRsUnsupported, match="delta-rs could not open"):
        open_table("s3a://bucket/wh/dbo/t", "dbo.t", storage_options={
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1",
            "max_retries": "0", "retry_timeout": "1s"})


def test_history_of_the_initial_load_says_0_updated_and_deleted():
    from mirrorspec.readers.history import history_entry

    first = history_entry(0, "2026-01-01T00:00:00Z", "WRITE", {"numOutputRows": "50"}, None)
    assert (first.rows_inserted, first.rows_updated, first.rows_deleted) == (50, 0, 0)
    unknown = history_entry(3, "2026-01-01T00:00:00Z", "OPTIMIZE", {}, None)
    assert (unknown.rows_inserted, unknown.rows_updated, unknown.rows_deleted) == (None,) * 3
