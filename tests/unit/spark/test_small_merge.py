"""A MERGE of a small table runs without adaptive execution, in one shuffle partition."""

from __future__ import annotations

from mirrorspec.spark.mirror import fold


def test_small_tables_merge_without_adaptive_execution_in_one_partition():
    limit = fold.SMALL_MERGE_BYTES
    assert fold.small_merge_conf(5_000, 300) == {"spark.sql.adaptive.enabled": "false",
                                                "spark.sql.shuffle.partitions": "1"}
    assert fold.small_merge_conf(limit - 301, 300) != {}
    assert fold.small_merge_conf(limit - 300, 300) == {}  # the batch counts with the table
    assert fold.small_merge_conf(None, 300) == {}  # size unknown: Spark's own settings
    # each call gets its own dict: the caller adds to it
    fold.small_merge_conf(1, 1)["x"] = "y"
    assert "x" not in fold.small_merge_conf(1, 1)
