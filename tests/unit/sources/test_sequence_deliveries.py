"""The column-wise `_delivery` of a plain Qlik chunk (`sequence_deliveries`) equals what the
event-by-event path gives (`qlik_delivery` + `clean_chunk_deliveries`), and it declines every
chunk that path would have to look at closely."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspec.sources.delivery import STATE_KEY, STREAM, FileCheck, Marks
from mirrorspec.sources.replicator_positions import (clean_chunk_deliveries, qlik_delivery,
                                                     sequence_deliveries, sequence_position)

FILE = "/feed/orders+2+1000.json"  # a Kafka sink's name: the channel is orders/2


def event_by_event(sequences, lines, marks):
    by_line = dict(sorted(zip(lines, sequences)))
    check = FileCheck(marks, True, True, FILE)
    values = clean_chunk_deliveries([qlik_delivery(s, FILE) for s in by_line.values()],
                                    check, True)
    if values is None:
        return None
    value_of = dict(zip(by_line, values))
    return [value_of[line] for line in lines]


def as_rows(array):
    return [(v["partition"], v["phase"], tuple(v["position"]), v["exact"], v["per_key"],
             v["backwards"]) for v in array.to_pylist()]


def marks_at(sequence: str) -> Marks:
    return Marks.from_state({STATE_KEY: {"version": 1, "partitions": {"orders/2": {
        "stream": {"position": list(sequence_position(sequence))}}}}})


@st.composite
def chunks(draw):
    width = draw(st.integers(1, 54))
    count = draw(st.integers(1, 30))
    start = draw(st.integers(0, 10 ** min(width, 18) - 1))
    steps = draw(st.lists(st.integers(1, 3), min_size=count, max_size=count))
    if draw(st.booleans()):  # a message sent twice in a row
        steps[draw(st.integers(0, count - 1))] = 0
    values, value = [], start
    for step in steps:
        value += step
        values.append(str(value).rjust(width, "0")[-width:])
    if draw(st.booleans()):  # a sequence of another width, or an empty one (REFRESH)
        at = draw(st.integers(0, count - 1))
        values[at] = draw(st.sampled_from(["", values[at] + "1", values[at][1:] or "x"]))
    lines = list(range(1, count + 1))
    if draw(st.booleans()):  # a line whose two rows (a key change) share the message
        at = draw(st.integers(0, count - 1))
        values.insert(at, values[at])
        lines.insert(at, lines[at])
    if draw(st.booleans()):
        lines = list(reversed(lines))
        values = list(reversed(values))
    mark = draw(st.one_of(st.none(), st.sampled_from(values), st.just(values[0])))
    return values, lines, mark


@settings(max_examples=300, deadline=None)
@given(chunks())
def test_the_columnwise_deliveries_equal_the_event_by_event_ones(chunk):
    sequences, lines, mark = chunk
    marks = marks_at(mark) if mark and mark.isdigit() else None
    fast = sequence_deliveries(pa.array(sequences, pa.string()), pa.array(lines, pa.int64()),
                               FILE, marks)
    slow = event_by_event(sequences, lines, marks)
    if fast is not None:
        assert slow is not None
        assert as_rows(fast) == [(p, ph, tuple(pos), e, k, b) for p, ph, pos, e, k, b in slow]


def test_a_plain_chunk_takes_the_columnwise_path():
    sequences = ["20240502100000000000000000000000001", "20240502100000000000000000000000002"]
    fast = sequence_deliveries(pa.array(sequences), pa.array([1, 2], pa.int64()), FILE, None)
    assert fast is not None
    assert as_rows(fast)[1] == ("orders/2", STREAM, sequence_position(sequences[1]), True,
                                False, False)


def test_a_chunk_at_or_below_the_marks_is_declined():
    sequences = ["0005", "0006"]
    assert sequence_deliveries(pa.array(sequences), pa.array([1, 2], pa.int64()), FILE,
                               marks_at("0005")) is None
    assert sequence_deliveries(pa.array(sequences), pa.array([1, 2], pa.int64()), FILE,
                               marks_at("0004")) is not None
