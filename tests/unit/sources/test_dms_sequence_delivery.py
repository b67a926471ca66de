"""AWS DMS under at-least-once delivery with the task's `AR_H_CHANGE_SEQ` as a column, and its
Parquet files' delivery checks, in pure Python.

AWS DMS User Guide, "Using transformation rule expressions to define column content" →
"Replicating source table headers using expressions": an `add-column` rule with the expression
`$AR_H_CHANGE_SEQ` writes the change's sequence (a timestamp and a change number, unique and
increasing per change; empty in a full load) into a column. Unlike the commit time
(TimestampColumnName), which one transaction's rows share, it tells a re-sent row from a second
identical row of a keyless table. The reader's rule (`delivery.FileCheck`, unordered: a DMS
file's rows need not be in position order) is checked here directly and under the property
harness (tests/support/delivery_harness.py)."""

from __future__ import annotations

from typing import Any, Sequence

import pytest
from tests.support.delivery_harness import clean_plan, clean_streams, deliveries, run_pure
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.support.replicator_streams import NO_SUP, DmsAdapter, change_seq

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.aws_dms import check_parquet_rows, parse_csv, parse_options
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.delivery import STREAM, Delivery, DeliveryError, FileCheck, Marks

SEQ = "change_seq"
TWO = (("id", "Int32"), ("name", "String"), (SEQ, "String"))


def rows(text: str, keys: Sequence[str] = (), marks: Marks | None = None,
         file: str = "20231029-113401000.csv", options: dict | None = None) -> list[tuple]:
    shape = TableShape(TWO, tuple(keys))
    opts = parse_options(options or {"change_sequence_column": SEQ})
    return [(r[0], r[1], r[-1]) for r in parse_csv(text, file, shape, opts, marks)]


def applied(*parsed: tuple) -> Marks:
    """The marks after a batch that landed `parsed` rows (as the publisher advances them)."""
    highest: dict = {}
    for *_, value in parsed:
        partition, phase, position = value[0], value[1], tuple(value[2])
        highest[(partition, phase)] = max(highest.get((partition, phase), position), position)
    return Marks().advanced((p, ph, False, pos, []) for (p, ph), pos in highest.items())


# --- the rule -----------------------------------------------------------------------------------

def test_an_unordered_file_takes_a_position_going_back_as_a_new_event():
    check = FileCheck(Marks(), keyed=False, file="f", ordered=False)
    assert check.admit(Delivery("", STREAM, (5, 0)), (), "a") is not None
    assert check.admit(Delivery("", STREAM, (3, 0)), (), "b") is not None  # no re-send


def test_an_unordered_file_drops_an_exact_copy_and_stops_at_a_shared_one():
    check = FileCheck(Marks(), keyed=False, file="f", ordered=False)
    assert check.admit(Delivery("", STREAM, (5,), exact=True), (), "a") is not None
    assert check.admit(Delivery("", STREAM, (5,), exact=True), (), "a") is None
    assert check.admit(Delivery("", STREAM, (7,)), (), "b") is not None
    with pytest.raises(DeliveryError, match="same source position"):
        check.admit(Delivery("", STREAM, (7,)), (), "b")


# --- AR_H_CHANGE_SEQ --------------------------------------------------------------------------

def test_a_keyless_transaction_of_two_equal_rows_lands_both_with_change_sequences():
    """Two identical inserts in one transaction share the commit time: with it only, the
    keyless table stops; with AR_H_CHANGE_SEQ each row is its own change."""
    stamped = "I,2023-10-29 11:34:01.000001,1,a\nI,2023-10-29 11:34:01.000001,1,a\n"
    shape = TableShape((("ts", "String"), ("id", "Int32"), ("name", "String")), ())
    with pytest.raises(SourceError, match="same source position"):
        list(parse_csv(stamped, "20231029-113401000.csv", shape,
                       parse_options({"timestamp_column": "ts"})))
    both = rows(f"I,1,a,{change_seq(1)}\nI,1,a,{change_seq(2)}\n")
    assert [(k, n) for k, n, _ in both] == [(1, "a"), (1, "a")]
    assert all(d[3] for *_, d in both)  # exact positions


def test_a_resent_change_sequence_is_dropped_in_its_file_and_in_a_later_batch():
    first = rows(f"I,1,a,{change_seq(1)}\nI,1,a,{change_seq(1)}\nI,2,b,{change_seq(2)}\n")
    assert [(k, n) for k, n, _ in first] == [(1, "a"), (2, "b")]
    again = rows(f"I,2,b,{change_seq(2)}\nI,3,c,{change_seq(3)}\n", marks=applied(*first),
                 file="20231029-113501000.csv")
    assert [(k, n) for k, n, _ in again] == [(3, "c")]


def test_a_change_sequence_column_must_be_a_table_column():
    with pytest.raises(SourceError, match="not one of the table's columns") as err:
        rows("I,1,a,x\n", options={"change_sequence_column": "AR_H_CHANGE_SEQ"})
    assert "$AR_H_CHANGE_SEQ" in (err.value.hint or "")


def test_full_load_rows_have_no_position_and_are_not_checked():
    loaded = rows("1,a,\n1,a,\n", file="LOAD00000001.csv")
    assert [(k, n) for k, n, _ in loaded] == [(1, "a"), (1, "a")]
    assert all(d[2] is None for *_, d in loaded)


# --- Parquet ------------------------------------------------------------------------------------

def test_parquet_rows_get_the_checks_of_csv_rows():
    """A Parquet CDC file's rows go through the same rule: a commit time below the marks is a
    re-send, a keyless row equal to one at the same commit time stops the table."""
    opts = parse_options({"timestamp_column": "ts", "format": "parquet"})
    marks = Marks().advanced([("", STREAM, False, (1698579242, 0), [])])
    found = list(check_parquet_rows("20231029-113501000.parquet", [
        (1, "2023-10-29 11:34:01", None, 11),   # below the marks: a re-send
        (2, "2023-10-29 11:34:03", None, 12),
        (3, "2023-10-29 11:34:03", None, 13)], True, opts, marks))
    assert [(line, value is not None) for line, value in found] == [(1, False), (2, True),
                                                                     (3, True)]
    with pytest.raises(SourceError, match="equals one the file sent before") as err:
        list(check_parquet_rows("20231029-113501000.parquet", [
            (1, "2023-10-29 11:34:03", None, 12), (2, "2023-10-29 11:34:03", None, 12)],
            False, opts, marks))
    assert err.value.line == 2


# --- the property --------------------------------------------------------------------------------

class DmsSequenceAdapter(DmsAdapter):
    """DMS CSV with the commit time after `Op` and AR_H_CHANGE_SEQ as the last column."""

    options: dict[str, Any] = {"timestamp_column": "commit_ts", "no_sup_value": NO_SUP,
                               "change_sequence_column": SEQ}
    sequence_column = SEQ


PROPERTY = settings(max_examples=40, deadline=None, database=None, derandomize=True,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


@PROPERTY
@given(data=st.data())
def test_change_sequences_land_every_table_under_every_perturbation(data):
    """Keyed or keyless, a DMS stream with AR_H_CHANGE_SEQ re-sent in part (same file, later
    file, later batch), split otherwise and with partial images lands the source table: a
    keyless table never has to stop."""
    keyed = data.draw(st.booleans())
    stream = data.draw(clean_streams(keyed=keyed, snapshot=False))
    adapter = DmsSequenceAdapter()
    clean = run_pure(adapter, stream, clean_plan(stream))
    assert clean.error is None and clean.rows == stream.expected(), clean.explain(stream)
    plan = data.draw(deliveries(stream, resend_snapshot=False))
    outcome = run_pure(adapter, stream, plan)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        f"{outcome.explain(stream)}\nplan: {plan}"
