"""Partial-row completion and truncate expansion (mirrorspec.spark.publish.completion) on DataFrames."""

from __future__ import annotations

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.spark.publish.completion import (complete_changes, expand_truncates, sort_columns,
                                         with_tie)

SCHEMA = ("k int, a string, b string, _op int, _order bigint, _present array<string>, "
          "_source_file string, _source_line bigint")


def frame(spark, rows):
    return with_tie(spark.createDataFrame(rows, SCHEMA))


def result(df):
    return [tuple(r) for r in df.sort(*sort_columns(["k"])).select("k", "a", "b", "_op").collect()]


def test_completion_uses_the_mirrored_row_then_the_batch_in_order(spark):
    mirrored = spark.createDataFrame([(1, "a0", "b0"), (2, "x", "y")], "k int, a string, b string")
    changes = frame(spark, [
        (1, "a1", None, 1, 1, ["k", "a"], "f", 1),        # b absent → b0 from Delta
        (1, None, "b2", 1, 2, ["k", "b"], "f", 2),        # a absent → a1 from the row before
        (1, None, None, 1, 3, ["k", "a", "b"], "f", 3),   # present NULLs stay NULL
        (1, None, "b4", 1, 4, ["k", "b"], "f", 4),        # a is NULL now (present NULL before)
        (2, None, None, 2, 5, None, "f", 5),              # delete resets key 2
        (2, "n", None, 0, 6, ["k", "a"], "f", 6),         # re-insert lacking b → NULL, not y
        (3, "i", "j", 0, 7, None, "f", 7),                # untouched key passes through
        (3, None, "j2", 1, 8, ["k", "b"], "f", 8),        # insert in the same batch seeds it
    ])
    done = complete_changes(spark, changes, ["k", "a", "b"], ["k"], mirrored)
    assert result(done) == [
        (1, "a1", "b0", 1), (1, "a1", "b2", 1), (1, None, None, 1), (1, None, "b4", 1),
        (2, None, None, 2), (2, "n", None, 0), (3, "i", "j", 0), (3, "i", "j2", 1)]
    assert done.where("_present is not null").count() == 0


def test_a_column_no_place_has_stops_at_its_change(spark):
    """Without a mirrored row or an earlier change of the key, an absent column has no value:
    the table stops at the change (a NULL there would be a guess); after a delete of the key
    the row has none (NULL)."""
    changes = frame(spark, [(2, "x", "y", 0, 1, None, "f", 1),
                            (2, None, None, 2, 2, None, "f", 2),
                            (2, "n", None, 0, 3, ["k", "a"], "f", 3),   # after the delete: NULL
                            (1, "a", None, 1, 4, ["k", "a"], "f", 4)])  # key 1: nothing known
    with pytest.raises(SourceError, match=r"column\(s\) b of this change were not sent") as err:
        complete_changes(spark, changes, ["k", "a", "b"], ["k"], None)
    assert (err.value.file, err.value.line) == ("f", 4)
    done = complete_changes(spark, changes.where("k = 2"), ["k", "a", "b"], ["k"], None)
    assert result(done)[-1] == (2, "n", None, 0)


def test_a_key_change_takes_what_it_lacks_from_the_old_key(spark):
    mirrored = spark.createDataFrame([(1, "a0", "b0"), (2, "x", "y")], "k int, a string, b string")
    changes = with_tie(spark.createDataFrame([
        (1, None, None, 2, 1, None, "f", 1, "p1"),             # key 1 → 5: delete of the old key
        (5, "a5", None, 0, 2, ["k", "a"], "f", 1, "p1"),       # ... insert lacking b → b0
        (5, None, "b6", 1, 3, ["k", "b"], "f", 2, None),       # later partial update of key 5
        (2, "x2", None, 1, 4, ["k", "a"], "f", 3, None),       # key 2 changes a first
        (2, None, None, 2, 5, None, "f", 4, "p2"),             # then becomes key 7
        (7, None, None, 0, 6, ["k"], "f", 4, "p2"),            # lacking a and b → x2, y
    ], SCHEMA + ", _pair string"))
    done = complete_changes(spark, changes, ["k", "a", "b"], ["k"], mirrored)
    assert result(done) == [
        (1, None, None, 2), (5, "a5", "b0", 0), (5, "a5", "b6", 1), (2, "x2", "y", 1),
        (2, None, None, 2), (7, "x2", "y", 0)]
    unknown = with_tie(spark.createDataFrame([
        (9, None, None, 2, 7, None, "f", 5, "p3"),             # an old key nobody knows:
        (8, "a8", None, 0, 8, ["k", "a"], "f", 5, "p3"),       # b has no value anywhere
    ], SCHEMA + ", _pair string"))
    with pytest.raises(SourceError) as err:
        complete_changes(spark, unknown, ["k", "a", "b"], ["k"], mirrored)
    assert err.value.line == 5 and "b of this change" in err.value.message


def test_truncate_deletes_mirrored_keys_and_earlier_batch_keys(spark):
    mirrored = spark.createDataFrame([(1, "a", "b"), (2, "a", "b")], "k int, a string, b string")
    changes = frame(spark, [
        (3, "x", "y", 0, 1, None, "f", 1),
        (0, None, None, 8, 2, None, "f", 2),   # truncate
        (4, "z", "w", 0, 3, None, "f", 3),
    ])
    done = expand_truncates(spark, changes, ["k"], mirrored)
    assert result(done) == [(3, "x", "y", 0), (1, None, None, 2), (2, None, None, 2),
                            (3, None, None, 2), (4, "z", "w", 0)]
