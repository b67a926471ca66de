"""AwsDmsReader.read(): canonical changes of DMS CSV and Parquet files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from tests.support.project_files import feed_plan

from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.spark.publish.feeds import get_reader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "aws_dms"
EMPLOYEES = [("id", "Int32"), ("last_name", "String"), ("first_name", "String"),
             ("hire_date", "IDate"), ("city", "String"), ("salary", "Double")]


def plan_for(tmp_path, feed, columns, keys, options=None) -> TablePlan:
    return feed_plan(tmp_path, "aws_dms", feed, columns, keys, options)


def files_of(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.iterdir())


def test_csv_full_load_then_cdc_in_timestamp_order(spark, tmp_path):
    table = plan_for(tmp_path, FIXTURES / "csv", EMPLOYEES, ["id"], {"timestamp_column": "ts"})
    result = get_reader("aws_dms").read(spark, table, files_of(FIXTURES / "csv"), {})
    rows = result.changes.orderBy("_order").collect()
    # LOAD00000001.csv sorts after 2023…csv by name but is applied first
    assert [(r["_op"], r["id"], r["city"]) for r in rows] == [
        (0, 101, "New York"), (0, 102, "Chicago"), (0, 103, "Boston"),
        (1, 101, "Los Angeles"), (0, 104, "Seattle"), (2, 102, "Chicago"),
        (1, 104, "Tacoma"), (1, 104, "Portland"), (0, 105, "Austin")]
    assert rows[0]["hire_date"] == dt.date(2014, 6, 4) and rows[0]["salary"] == 5000.5
    assert rows[1]["salary"] is None
    assert rows[-1]["first_name"] == "Multi\nLine" and rows[-1]["_source_line"] == 3
    assert dict(result.changes.dtypes)["hire_date"] == "date"


def test_csv_with_header_rows(spark, tmp_path):
    table = plan_for(tmp_path, FIXTURES / "csv_header", EMPLOYEES, ["id"],
                     {"header": True, "null_value": "NULL"})
    rows = get_reader("aws_dms").read(
        spark, table, files_of(FIXTURES / "csv_header"), {}).changes.orderBy("_order").collect()
    assert [(r["_op"], r["id"], r["city"], r["salary"]) for r in rows] == [
        (0, 201, "Denver", 7000.0), (0, 202, "Dallas", 7100.0), (1, 201, "Miami", 7200.0),
        (2, 202, "Dallas", 7100.0), (0, 203, "Reno", None)]


def test_parquet_files_with_op_and_timestamp_columns(spark, tmp_path):
    columns = [("id", "Int32"), ("name", "String"), ("price", "Double"), ("created", "DateTime")]
    table = plan_for(tmp_path, FIXTURES / "parquet", columns, ["id"], {"timestamp_column": "ts"})
    files = files_of(FIXTURES / "parquet")
    df = get_reader("aws_dms").read(spark, table, files, {}).changes
    assert dict(df.dtypes)["price"] == "double" and dict(df.dtypes)["created"] == "timestamp"
    rows = df.orderBy("_order").collect()
    assert [(r["_op"], r["id"], r["name"]) for r in rows] == [
        (0, 301, "alpha"), (0, 302, "beta"), (0, 303, "gamma"),
        (1, 303, "gamma2"), (1, 301, "alpha2"), (2, 302, "beta"), (0, 304, "delta")]
    assert rows[0]["price"] == 10.5 and rows[0]["created"] == dt.datetime(2023, 1, 1, 8, 0)
    assert rows[3]["_source_file"] == files[0] and rows[3]["_source_line"] == 4


def test_bad_csv_row_names_file_and_line(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / "LOAD00000001.csv").write_text("1,A,B,2020-01-01,X,1\n")
    bad = feed / "20230101-000000000.csv"
    bad.write_text("I,2,A,B,2020-01-01,X,1\nI,3,A,B,not-a-date,X,1\n")
    table = plan_for(tmp_path, feed, EMPLOYEES, ["id"])
    with pytest.raises(SourceError) as err:
        get_reader("aws_dms").read(spark, table, files_of(feed), {})
    assert err.value.file == str(bad) and err.value.line == 2
    assert "hire_date" in err.value.message


def test_preserve_transactions_files_route_rows_to_the_table(spark, tmp_path):
    from mirrorspec.sources.base import list_feed_files

    root = FIXTURES / "transactions"
    table = plan_for(tmp_path, root, [("id", "Int32"), ("name", "String")], ["id"],
                     {"table": "rdsTempsdb.Names_03cdcad11a"})
    files = list_feed_files(str(root))
    result = get_reader("aws_dms").read(spark, table, files, {})
    rows = result.changes.orderBy("_order").collect()
    assert [(r["_op"], r["id"], r["name"]) for r in rows] == [
        (0, 11, "Ann"), (0, 13, "Cathy"), (0, 23, "Kate"), (0, 13, "Daniel"), (1, 23, "Kathy"),
        (2, 13, "Cathy"), (0, 16, "Mike"), (1, 16, "Michael")]
    assert set(result.files) == set(files)  # the other table's files are consumed, unread
