"""Partial-row completion and truncate expansion (mirrorspec.spark.publish.completion) on DataFrames."""

from __future__ import annotations

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
        (2, "n", "m", 0, 6, None, "f", 6),                # a whole re-insert
        (2, None, "m2", 1, 7, ["k", "b"], "f", 7),        # a → n, not x from before the delete
        (3, "i", "j", 0, 8, None, "f", 8),                # untouched key passes through
        (3, None, "j2", 1, 9, ["k", "b"], "f", 9),        # insert in the same batch seeds it
    ])
    done = complete_changes(spark, changes, ["k", "a", "b"], ["k"], mirrored)
    assert result(done) == [
        (1, "a1", "b0", 1), (1, "a1", "b2", 1), (1, None, None, 1), (1, None, "b4", 1),
        (2, None, None, 2), (2, "n", "m", 0), (2, "n", "m2", 1), (3, "i", "j", 0),
        (3, "i", "j2", 1)]
    assert done.where("_present is not null").count() == 0


def test_a_column_no_place_has_stops_the_table_at_that_change(spark):
    """Absent never becomes NULL: a partial row of a key neither the batch nor the mirror
    holds (no mirrored table at all, here), or of a key deleted before it in the batch, stops
    the table at the first such change, naming its file, line, key and columns."""
    import pytest

    from mirrorspec.base.errors import SourceError

    cases = [
        ([(5, "a", "b", 0, 1, None, "f", 1),
          (1, "a", None, 1, 2, ["k", "a"], "f", 7)], None, 7, "k=1", "lacks b"),
        ([(2, None, None, 2, 1, None, "g", 3),               # delete of a mirrored key
          (2, "n", None, 0, 2, ["k", "a"], "g", 4)],         # re-insert lacking b: not y
         spark.createDataFrame([(2, "x", "y")], "k int, a string, b string"), 4, "k=2",
         "lacks b"),
    ]
    for rows, mirrored, line, key, lacking in cases:
        with pytest.raises(SourceError) as caught:
            complete_changes(spark, frame(spark, rows), ["k", "a", "b"], ["k"], mirrored)
        assert caught.value.line == line and key in caught.value.message
        assert lacking in caught.value.message and "never becomes NULL" in caught.value.message
        assert "full row images" in caught.value.hint


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
    # an old key nobody knows: what the new key lacks has no value anywhere
    unknown = with_tie(spark.createDataFrame([
        (9, None, None, 2, 7, None, "f", 5, "p3"),
        (8, "a8", None, 0, 8, ["k", "a"], "f", 5, "p3"),
    ], SCHEMA + ", _pair string"))
    import pytest

    from mirrorspec.base.errors import SourceError
    with pytest.raises(SourceError, match=r"key \(k=8\) lacks b"):
        complete_changes(spark, unknown, ["k", "a", "b"], ["k"], mirrored)


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
