"""CSV/Parquet extract readers: the change set between consecutive snapshots."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from tests.support.project_files import feed_plan

from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.spark.publish.feeds import get_reader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "extract"
CUSTOMERS = [("id", "Int64"), ("name", "String"), ("city", "String"), ("balance", "Double"),
             ("signup_date", "IDate"), ("updated_at", "DateTime")]


def plan_for(tmp_path, feed, columns, keys, kind="csv", options=None) -> TablePlan:
    return feed_plan(tmp_path, kind, feed, columns, keys, options)


def changes(result):
    return [(r["_order"]["snapshot"], r["_op"], r["id"], r["city"], r["balance"])
            for r in result.changes.orderBy("_order", "id").collect()]


def test_new_csv_snapshots_are_each_compared_with_the_one_before(spark, tmp_path):
    feed = FIXTURES / "csv"
    files = sorted(str(p) for p in feed.iterdir())
    table = plan_for(tmp_path, feed, CUSTOMERS, ["id"])
    result = get_reader("csv").read(spark, table, files[1:], {"reader": {"snapshot": files[:1]}})
    assert changes(result) == [
        # second against the first: 1 unchanged (nothing), 2 moved, 3 gone, 4 new (header in
        # another order)
        (0, 1, 2, "Milan", 20.0), (0, 2, 3, "Nice", None), (0, 0, 4, "Bergen, NO", 40.25),
        # third: 1 gone, 4 lost its balance, 5 new; 2 unchanged
        (1, 2, 1, "Oslo", 10.5), (1, 1, 4, "Bergen, NO", None), (1, 0, 5, "Turku", 5.0)]
    assert result.info["state"] == {"snapshot": [files[2]]}
    row = result.changes.where("id = 4 and _op = 0").first()
    assert row["name"] == 'Dan "D"' and row["signup_date"] == dt.date(2023, 4, 1)
    assert row["updated_at"] == dt.datetime(2024, 1, 2, 9, 31)
    assert row["_present"] is None and row["_source_file"] == files[1]


def test_with_nothing_before_only_the_newest_snapshot_is_read(spark, tmp_path):
    """A first run (or a full refresh): the newest snapshot is the table; the older ones are
    consumed unread, so one lacking a column added since fails nothing."""
    feed = tmp_path / "feed"
    shutil.copytree(FIXTURES / "csv", feed)
    files = sorted(str(p) for p in feed.iterdir())
    Path(files[0]).write_text("id,name\n1,an old extract without most columns\n")
    table = plan_for(tmp_path, feed, CUSTOMERS, ["id"])
    result = get_reader("csv").read(spark, table, files, {})
    assert changes(result) == [(0, 0, 2, "Milan", 20.0), (0, 0, 4, "Bergen, NO", None),
                               (0, 0, 5, "Turku", 5.0)]
    assert result.info["skipped_snapshots"] == files[:2] and result.files == tuple(files)
    assert result.info["state"] == {"snapshot": [files[2]]}


def test_previous_snapshot_from_state_makes_republish_identical(spark, tmp_path):
    feed = FIXTURES / "csv"
    files = sorted(str(p) for p in feed.iterdir())
    table = plan_for(tmp_path, feed, CUSTOMERS, ["id"])
    state = {"reader": {"snapshot": [files[1]]}}
    first = changes(get_reader("csv").read(spark, table, files[2:], state))
    again = changes(get_reader("csv").read(spark, table, files[2:], state))
    assert first == again == [(0, 2, 1, "Oslo", 10.5), (0, 1, 4, "Bergen, NO", None),
                              (0, 0, 5, "Turku", 5.0)]


def test_mirrored_table_stands_in_when_the_previous_extract_is_gone(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    shutil.copy(FIXTURES / "csv" / "customers_2024-01-03.csv", feed)
    table = plan_for(tmp_path, feed, CUSTOMERS, ["id"])
    mirrored = spark.createDataFrame(
        [(2, "Ben", "Milan", 20.0, dt.date(2023, 2, 1), dt.datetime(2024, 1, 2, 9, 30)),
         (9, "Old", "Gone", 1.0, None, None)],
        "id bigint, name string, city string, balance double, signup_date date, "
        "updated_at timestamp")
    mirrored.write.format("delta").save(table.delta_path)
    state = {"reader": {"snapshot": [str(tmp_path / "removed.csv")]}}
    result = get_reader("csv").read(spark, table, [str(feed / "customers_2024-01-03.csv")], state)
    assert changes(result) == [(0, 0, 4, "Bergen, NO", None), (0, 0, 5, "Turku", 5.0),
                               (0, 2, 9, "Gone", 1.0)]
    assert result.info["previous_snapshot"].startswith("mirrored table")


def test_parquet_folder_snapshots(spark, tmp_path):
    feed = FIXTURES / "parquet"
    files = sorted(str(p) for p in feed.rglob("*.parquet"))
    columns = [("sku", "String"), ("qty", "Int32"), ("price", "Double"), ("seen", "DateTime")]
    table = plan_for(tmp_path, feed, columns, ["sku"], kind="parquet")
    first = [f for f in files if "snapshot=2024-03-01" in f]
    result = get_reader("parquet").read(spark, table, [f for f in files if f not in first],
                                        {"reader": {"snapshot": first}})
    rows = [(r["_order"]["snapshot"], r["_op"], r["sku"], r["qty"])
            for r in result.changes.orderBy("_order", "sku").collect()]
    assert rows == [(0, 1, "A-1", 4), (0, 2, "B-1", 7), (0, 0, "C-1", 1)]
    assert result.info["snapshots"] == [str(feed / "snapshot=2024-03-02")]
    assert len(result.info["state"]["snapshot"]) == 1
    # with nothing before, the newest folder alone is read: all inserts
    result = get_reader("parquet").read(spark, table, files, {})
    rows = [(r["_op"], r["sku"], r["qty"]) for r in result.changes.orderBy("sku").collect()]
    assert rows == [(0, "A-1", 4), (0, "A-2", 0), (0, "C-1", 1)]
    assert result.info["skipped_snapshots"] == [str(feed / "snapshot=2024-03-01")]


_HEAD = "id,name,city,balance,signup_date,updated_at\r\n"
_NOTE = '7,"two\r\nlines",X,1,2023-01-01,2024-01-01\r\n'  # lines 2-3: a quoted line break


@pytest.mark.parametrize("content, words, line, options", [
    (_HEAD + _NOTE + "1,A,X,1,2023-01-01,2024-01-01\r\n1,B,Y,2,2023-01-01,2024-01-01\r\n",
     "key id=1 appears 2 times in the snapshot (first on line 4, again here)", 5, None),
    (_HEAD + _NOTE + "1,A,X,lots,2023-01-01,2024-01-01\r\n",
     "column balance (field 4): 'lots' is not a valid Double", 4, None),
    ("id,name,balance\n1,A,2\n", "lacks column(s) city, signup_date, updated_at", None, None),
    (_HEAD, "has no rows", None, None),
    (_HEAD + _NOTE + ",A,X,1,2023-01-01,2024-01-01\r\n", "NULL key", 4, None),
    (_HEAD + _NOTE + "1,A,X,1,2023-01-01,2024-01-01,extra\r\n", "malformed CSV record", 4,
     None),
    # no header: the YAML columns in order, the first row is line 1
    (_NOTE + "1,A,X,1,2023-01-01,2024-01-01\r\n7,B,Y,2,2023-01-01,2024-01-01\r\n",
     "key id=7 appears 2 times in the snapshot (first on line 1, again here)", 4,
     {"header": False}),
])
def test_bad_extracts_are_rejected_naming_the_file_and_line(spark, tmp_path, content, words,
                                                            line, options):
    feed = tmp_path / "feed"
    feed.mkdir()
    bad = feed / "extract.csv"
    bad.write_bytes(content.encode())
    table = plan_for(tmp_path, feed, CUSTOMERS, ["id"], options=options)
    with pytest.raises(SourceError) as err:
        get_reader("csv").read(spark, table, [str(bad)], {})
    assert err.value.file == str(bad) and words in err.value.message
    assert err.value.line == line


def test_a_bad_value_names_its_file_line_column_and_type(spark, tmp_path):
    """One Spark pass per format: a CSV folder snapshot whose second file has the bad value
    after a quoted line break (its line, not its row), then a Parquet extract (its row)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    feed = tmp_path / "feed"
    (feed / "snap").mkdir(parents=True)
    header = "id,name,city,balance,signup_date,updated_at\n"
    (feed / "snap" / "part-0.csv").write_text(header + "1,A,X,1,2023-01-01,2024-01-01\n")
    bad = feed / "snap" / "part-1.csv"
    bad.write_text(header + '2,"B\nsecond line",Y,2,2023-01-01,2024-01-01\n'
                   "3,C,Z,3,not a date,2024-01-01\n")
    table = plan_for(tmp_path, feed, CUSTOMERS, ["id"])
    with pytest.raises(SourceError) as err:
        get_reader("csv").read(spark, table, sorted(str(p) for p in (feed / "snap").iterdir()),
                               {})
    assert (err.value.file, err.value.line) == (str(bad), 4)
    assert err.value.message == "column signup_date (field 5): 'not a date' is not a valid IDate"
    assert err.value.render().startswith(f"{bad}:4: column signup_date")

    parquet_feed = tmp_path / "pfeed"
    parquet_feed.mkdir()
    pq.write_table(pa.table({"sku": ["A", "B", "C"], "qty": ["1", "2", "five"]}),
                   parquet_feed / "s.parquet")
    columns = [("sku", "String"), ("qty", "Int32")]
    table = plan_for(tmp_path / "p", parquet_feed, columns, ["sku"], kind="parquet")
    with pytest.raises(SourceError) as err:
        get_reader("parquet").read(spark, table, [str(parquet_feed / "s.parquet")], {})
    assert err.value.file == str(parquet_feed / "s.parquet")
    assert err.value.message == "row 3: column qty (field 2): 'five' is not a valid Int32"
