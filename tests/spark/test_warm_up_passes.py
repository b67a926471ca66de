"""The warm-up a new warm Spark server runs (`spark start`): its landing-zone table and its CSV
extract are published and mirrored to the rows they should hold, so the warm-up went through
a MERGE and the publish's comparison of two snapshots rather than stopping early."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mirrorspec.spark.ops.warm_up import warm_up_passes
from tests.support.reference_model import read_delta_rs

pytestmark = pytest.mark.extra  # with the other warm-server tests: `make test-extras`


def rows_of(warehouse: Path) -> list[tuple]:
    (log,) = warehouse.rglob("_delta_log")
    _columns, rows = read_delta_rs(str(log.parent))
    return sorted((r["id"], r["name"]) for r in rows)


def test_the_warm_up_merges_and_publishes_the_next_snapshot(spark, tmp_path):
    warm_up_passes(spark, tmp_path)
    assert rows_of(tmp_path / "landed" / "warehouse") == [
        (0, "row 0"), (1, "row 1"), (3, "row 3"), (4, "row 4")]
    assert rows_of(tmp_path / "extract" / "warehouse") == [
        (1, "row 1"), (2, "row 2"), (3, "row 3"), (4, "row 4")]
    # the second snapshot was compared with the first: one new row, in a file of its own
    second = tmp_path / "extract" / "landing" / "orders" / "00000000000000000002.parquet"
    assert pq.read_table(second).column("id").to_pylist() == [4]
