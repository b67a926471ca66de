"""Delivery semantics (mirrorspec/sources/delivery.py): the per-file re-send check and the marks
of earlier batches, in pure Python (the producers' table: test_producers.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspec.sources.delivery import (KEYLESS_HINT, SNAPSHOT, STREAM, TABLE, Delivery,
                                         DeliveryError, FileCheck, Marks, channel_of)


def at(*position: int, phase: int = STREAM, exact: bool = False, per_key: bool = False,
       partition: str = "") -> Delivery:
    return Delivery(partition, phase, tuple(position), exact, per_key)


def test_a_position_going_back_in_a_file_is_a_resend_when_equal_and_marked_when_not():
    check = FileCheck(keyed=True)
    assert check.admit(at(1, 10, exact=True), (1,), "a") is not None
    assert check.admit(at(1, 20, exact=True), (2,), "b") is not None
    assert check.admit(at(1, 10, exact=True), (1,), "a") is None          # re-sent: dropped
    value = check.admit(at(1, 10, exact=True), (1,), "other")              # differs
    assert value[-1] is True  # backwards: the publisher looks for it in the batch's other files
    assert check.admit(at(1, 20, exact=True), (2,), "b") is None          # an exact repeat


def test_shared_positions_repeat_on_keyed_tables_and_stop_keyless_ones():
    keyed = FileCheck(keyed=True)
    assert keyed.admit(at(5), (1,), "row") is not None
    assert keyed.admit(at(5), (1,), "row") is not None  # harmless: an upsert applied twice
    keyless = FileCheck(keyed=False)
    assert keyless.admit(at(5), (), "row") is not None
    with pytest.raises(DeliveryError) as err:
        keyless.admit(at(5), (), "row")
    assert err.value.hint == KEYLESS_HINT


def test_a_keyless_change_without_a_position_lands_unless_the_file_sent_it_before():
    """Nothing tells a re-send by: each change lands as sent, but one equal to a change the
    file already sent (a dump read twice) stops instead of landing a duplicate."""
    unpositioned = FileCheck(keyed=False)
    assert unpositioned.admit(Delivery("", STREAM, None), (), "row") is not None
    assert unpositioned.admit(Delivery("", STREAM, None), (), "other") is not None
    with pytest.raises(DeliveryError, match="equals one the file sent before") as err:
        unpositioned.admit(Delivery("", STREAM, None), (), "row")
    assert err.value.hint == KEYLESS_HINT
    keyed = FileCheck(keyed=True)
    assert all(keyed.admit(Delivery("", STREAM, None), (1,), "row") is not None for _ in "ab")
    with pytest.raises(DeliveryError, match="one row's changes only"):
        FileCheck(keyed=False).admit(at(7, per_key=True), (), "row")
    assert FileCheck(keyed=False, redelivers=False).admit(Delivery("", STREAM, None), (),
                                                          "row") is not None


def test_a_snapshot_read_after_the_stream_went_past_it_is_a_resend():
    check = FileCheck(keyed=True)
    check.admit(at(1, phase=SNAPSHOT), (1,), "r1")
    check.admit(at(2), (1,), "u1")
    assert check.admit(at(1, phase=SNAPSHOT), (1,), "r1") is None


def test_per_key_positions_are_checked_per_key_and_against_truncates():
    check = FileCheck(keyed=True)
    assert check.admit(at(20, per_key=True), (1,), "a") is not None
    assert check.admit(at(10, per_key=True), (2,), "b") is not None  # another key: fine
    assert check.admit(at(30), (), "truncate") is not None
    assert check.admit(at(25, per_key=True), (3,), "c")[-1] is True  # before the truncate


def test_marks_drop_what_earlier_batches_applied():
    marks = Marks().advanced([("", STREAM, False, [10, 2], []), ("", SNAPSHOT, False, [5], [])])
    assert marks.resent(at(10, 1)) and not marks.resent(at(10, 3))
    assert marks.resent(at(10, 2, exact=True))
    assert not marks.resent(at(10, 2))  # shared: applied again, idempotently
    assert marks.resent(at(5, phase=SNAPSHOT))  # the stream went past it
    assert Marks.from_state({"delivery": marks.to_state()}).to_state() == marks.to_state()
    per_key = Marks().advanced([("", STREAM, True, [50], []), ("", STREAM, False, [30], [])])
    assert per_key.position("", TABLE) == (30,) and per_key.position("", STREAM) == (50,)
    assert per_key.resent(at(20, per_key=True))
    assert not per_key.resent(at(40, per_key=True))
    # and a file checked against them drops what they cover
    check = FileCheck(marks, keyed=True)
    assert check.admit(at(10, 1), (1,), "a") is None and check.admit(at(11), (1,), "b")


def test_keyless_marks_remember_the_events_at_the_highest_shared_position():
    marks = Marks().advanced([("p", STREAM, False, [9], [7, 7, 8])])
    assert marks.at() == [("p", STREAM, (9,), 7), ("p", STREAM, (9,), 8)]
    later = marks.advanced([("p", STREAM, False, [9], [5])])  # the same position: more events
    assert {fp for *_, fp in later.at()} == {5, 7, 8}
    assert marks.advanced([("p", STREAM, False, [12], [1])]).at() == [("p", STREAM, (12,), 1)]


def test_channels_come_from_staged_and_sink_file_names():
    assert channel_of("/s/k1-server1.inventory.customers-p3-o00000000000000000042.jsonl") == \
        "server1.inventory.customers/3"
    assert channel_of("topics/orders/partition=1/orders+1+0000000100.json") == "orders/1"
    assert channel_of("feed/customers-0001.json") == ""


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.booleans()), max_size=30))
def test_a_file_repeated_after_itself_is_entirely_dropped(events):
    """A dump read twice: every event of the second copy is a re-send."""
    ordered = sorted(events)
    check = FileCheck(keyed=True)
    first = [check.admit(at(p, s), (p,), (p, s, v)) for p, s, v in ordered]
    again = [check.admit(at(p, s), (p,), (p, s, v)) for p, s, v in ordered]
    assert all(v is not None for v in first)
    highest = max(((p, s) for p, s, _ in ordered), default=None)
    for (p, s, _), value in zip(ordered, again):
        assert value is None or (p, s) == highest  # the last position repeats harmlessly


def test_a_dump_repeated_with_nan_values_compares_by_equality_not_identity():
    """hash(float('nan')) differs per object: such a re-send is marked `backwards`, and the
    publisher matches it by Spark's row fingerprint (not the hash)."""
    check = FileCheck(keyed=True)
    assert check.admit(at(1, exact=True), (1,), (float("nan"),)) is not None
    assert check.admit(at(2, exact=True), (2,), "b") is not None
    value = check.admit(at(1, exact=True), (1,), (float("nan"),))
    assert value is None or value[-1] is True
