"""Dates and timestamps outside 0001-01-01 … 9999-12-31: a BadFile naming the row and column
at mirror time (the check lint shares), and shown as text, never a crash, by `show`."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mirrorspec.landing import checks
from mirrorspec.readers.delta import _python_values

YEAR_200000_MICROS = int((200000 - 1970) * 365.2425 * 86400) * 1_000_000


@pytest.mark.parametrize("array,statistics,year", [
    (pa.array([0, 5, YEAR_200000_MICROS], pa.timestamp("us")), True, "200000"),
    (pa.array([0, 5, YEAR_200000_MICROS], pa.timestamp("us")), False, "200000"),
    (pa.array([0, 5, YEAR_200000_MICROS // 1000], pa.timestamp("ms", tz="UTC")), True, "200000"),
    (pa.array([0, 1, -800_000], pa.date32()), True, "-220"),
])
def test_the_first_value_out_of_range_is_named(tmp_path, array, statistics, year):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": [1, 2, 3], "at": array}), path, write_statistics=statistics)
    row, column, problem = checks.time_range_problem(path)
    assert (row, column) == (3, "at")
    assert f"year {year}" in problem and "0001-01-01 … 9999-12-31" in problem


def test_values_in_range_and_nanoseconds_pass(tmp_path):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({
        "d": pa.array([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), None]),
        "t": pa.array([datetime.datetime(9999, 12, 31, 23, 59, 59, 999999), None, None]),
        "n": pa.array([2**62, 0, None], pa.timestamp("ns"))}), path)
    assert checks.time_range_problem(path) is None


def test_show_spells_an_out_of_range_value_instead_of_crashing():
    column = pa.array([0, None, YEAR_200000_MICROS], pa.timestamp("us", tz="UTC"))
    assert _python_values(column) == [datetime.datetime(1970, 1, 1), None,
                                      "200000-01-01T06:36:00.000000"]
    assert _python_values(pa.array([0, 80_000_000], pa.date32()))[1] == "221002-07-25"
