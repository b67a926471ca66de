"""Reloads under the pure delivery harness (tests/support/delivery_harness.py): Qlik Replicate
and Arcion send a table's full load again after its changes (Qlik's table reload: REFRESH
rows; Arcion: a new snapshot), possibly without rows the source lost without a change the
producer captured. The publisher model follows the loads with the reader's own pure
`LoadFollower` (sources/reload_runs.py): a clean stream with a reload, split into any files
and batches — and, for Qlik, over Kafka topic-partitions by message key, where
`changeSequence` places the runs and changes against the reload — lands the final table
(keyed), or lands it or stops at a located error (keyless: a reload that lacks a row the table
holds can't be written to a table without key columns)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from tests.support.delivery_harness import (KEY, REPLACE_HINT, Plan, Stream, clean_streams,
                                            deliveries, partitioned, run_pure)
from tests.support.replicator_streams import ArcionAdapter, QlikAdapter

from mirrorspec.sources.delivery import KEYLESS_HINT
from mirrorspec.sources.reload_runs import LOST_HINT

DEEP = os.environ.get("MIRRORSPEC_PROPERTY_RANDOM") == "1"
EXAMPLES = int(os.environ.get("MIRRORSPEC_PROPERTY_EXAMPLES", "10"))
ADAPTERS = {"qlik_replicate": QlikAdapter, "arcion": ArcionAdapter}


def examples(times: int):
    return settings(max_examples=max(1, EXAMPLES * times), deadline=None, database=None,
                    derandomize=not DEEP, phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


def reload_at(stream: Stream) -> int | None:
    """The index of the first read of the stream's reload (None without one)."""
    return next((i for i in range(1, len(stream.events))
                 if stream.events[i].op == "r" and stream.events[i - 1].op != "r"), None)


def batch_starts_at(plan: Plan, index: int) -> Plan:
    """`plan` with a new batch (and file) starting at the event `index`: Replicant writes a
    new snapshot in a run of its own, and ranks snapshot files first within a batch."""
    before: Plan = []
    after: Plan = []
    for files in plan:
        early, late = [], []
        for events in files:
            head = [d for d in events if d.index < index]
            tail = [d for d in events if d.index >= index]
            early += [head] if head else []
            late += [tail] if tail else []
        before += [early] if early else []
        after += [late] if late else []
    return before + after


def failure(outcome, stream: Stream, plan) -> str:
    events = [(e.op, e.row and e.row[KEY]) for e in stream.events]
    return f"{outcome.explain(stream)}\nplan: {plan}\nstream (op, key): {events}"


def stream_with_reload(data, keyed: bool, drops: bool = True) -> Stream:
    stream = data.draw(clean_streams(keyed=keyed, reloads=1, max_events=10, reload_drops=drops))
    assume(reload_at(stream) is not None)
    return stream


@pytest.mark.parametrize("reader", sorted(ADAPTERS))
@examples(3)
@given(data=st.data())
def test_a_reload_split_over_files_and_batches_lands_the_final_table(reader, data):
    """Rows the reload lacks went with a captured delete: a keyed table applies the batch's
    changes from before the reload again after it (a feed's file names need not follow its
    order), so a change to a row the source then lost without one brings it back until the
    next reload (a limit the docs state)."""
    stream = stream_with_reload(data, keyed=True, drops=False)
    plan = data.draw(deliveries(stream, resend=False))
    if reader == "arcion":
        plan = batch_starts_at(plan, reload_at(stream))
    outcome = run_pure(ADAPTERS[reader](), stream, plan, reloads=True)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        failure(outcome, stream, plan)


def every_part_follows_a_change(stream: Stream, partitions: int) -> bool:
    """Whether each partition that holds rows of the reload had a change between its rows
    of the first load and them. A partition without one sends both loads as one run of
    reads, which nothing tells apart: when that run arrives in an earlier batch than every run
    that tells the reload, the truncate coming with that run deletes its rows (a limit
    docs/sources/qlik_replicate.md states)."""
    start = reload_at(stream)
    for partition in range(partitions):
        mine = [e for e in stream.events if e.row is not None
                and e.row[KEY] % partitions == partition]
        reloaded = any(e.op == "r" for e in stream.events[start:] if e in mine)
        if reloaded and not any(e.op != "r" for e in stream.events[:start] if e in mine):
            return False
    return True


def _batches(plan) -> dict[int, int]:
    """Each delivered event's batch."""
    return {item.index: number for number, files in enumerate(plan)
            for _, events in files for item in events}


def told_before_the_rest(stream: Stream, plan) -> bool:
    """Whether the batch with the reload's first run arrives no later than anything sent after
    the reload began, in any partition: a change made after the reload that arrives in an
    earlier batch than every run of the reload is deleted by the truncate that comes with
    the first run (a limit docs/sources/qlik_replicate.md states)."""
    start = reload_at(stream)
    batches = _batches(plan)
    reloaded = [b for i, b in batches.items()
                if i >= start and stream.events[i].op == "r"]
    later = [b for i, b in batches.items() if i >= start]
    return bool(reloaded) and min(reloaded) <= min(later)


def placed_by_sequence(stream: Stream, plan, partitions: int) -> bool:
    """Whether changeSequence places what arrives with the reload or after it against the
    reload: every partition holds rows of the reload (a partition without a run of it can't
    place its changes: one made after the reload began that arrives before every run of the
    reload is deleted by its truncate, one made before it to a row the source then lost
    without a captured change lands); a change of a partition from before the reload that
    arrives with the reload's first run or later arrives with its partition's run of the
    reload (its partition's order places it; earlier, nothing does); and a partition's run of
    the first load arriving then has a change of its partition after it in its batch (what
    places it before the reload). The limits docs/sources/qlik_replicate.md states."""
    start = reload_at(stream)
    batch = _batches(plan)
    part = {i: e.row[KEY] % partitions for i, e in enumerate(stream.events) if e.row}
    runs = {}
    for i in range(start, len(stream.events)):
        if stream.events[i].op == "r":
            runs.setdefault(part[i], batch[i])
    if set(runs) != set(range(partitions)):
        return False
    told = min(runs.values())
    for i in range(start):
        if batch[i] >= told and stream.events[i].op != "r" and batch[i] != runs[part[i]]:
            return False
        if batch[i] >= told and stream.events[i].op == "r" and not any(
                j > i and j < start and part[j] == part[i] and batch[j] == batch[i]
                and stream.events[j].op != "r" for j in batch):
            return False
    return True


@examples(3)
@given(data=st.data())
def test_a_qlik_reload_over_partitions_lands_the_final_table(data):
    """Each partition's runs of the first load and of the reload, its files arriving in any
    batch after its earlier ones: one truncate per load, the table equal to the source once
    every partition's files have arrived — where the reload can be told: each partition's
    reload run follows a change in it, and the first one arrives no later than anything sent
    after the reload began. Rows the reload lacks went with a captured delete. (Those limits
    are the ones the docs state.)"""
    stream = stream_with_reload(data, keyed=True, drops=False)
    partitions = data.draw(st.integers(2, 3))
    assume(every_part_follows_a_change(stream, partitions))
    plan = data.draw(partitioned(stream, partitions))
    assume(told_before_the_rest(stream, plan))
    outcome = run_pure(QlikAdapter(), stream, plan, reloads=True, ordered=True)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        failure(outcome, stream, plan)


@examples(2)
@given(data=st.data())
def test_a_qlik_reload_that_lost_rows_is_placed_by_change_sequence(data):
    """The reload lacks rows the source lost without a captured change: changeSequence
    places a partition's changes and its older run against the reload (a change before the
    reload doesn't apply again after it, an older load's run arriving with the reload or
    later is left out), so the table ends equal to the source wherever the sequences place
    them (`placed_by_sequence`). Arrival order alone can't: the same plans fail without
    positions."""
    stream = stream_with_reload(data, keyed=True, drops=True)
    partitions = data.draw(st.integers(2, 3))
    assume(every_part_follows_a_change(stream, partitions))
    plan = data.draw(partitioned(stream, partitions))
    assume(placed_by_sequence(stream, plan, partitions))
    outcome = run_pure(QlikAdapter(), stream, plan, reloads=True, ordered=True)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        failure(outcome, stream, plan)


@pytest.mark.parametrize("reader", sorted(ADAPTERS))
@examples(2)
@given(data=st.data())
def test_a_keyless_reload_lands_the_final_table_or_stops_where_it_cannot(reader, data):
    stream = stream_with_reload(data, keyed=False)
    plan = data.draw(deliveries(stream, resend=False, partial=False))
    if reader == "arcion":
        plan = batch_starts_at(plan, reload_at(stream))
    outcome = run_pure(ADAPTERS[reader](), stream, plan, reloads=True)
    if outcome.error is None:
        assert outcome.rows == stream.expected(), failure(outcome, stream, plan)
    else:
        hint = outcome.error.hint or ""
        assert hint.startswith((KEYLESS_HINT, REPLACE_HINT)), outcome.explain(stream)
        assert outcome.error.file and outcome.error.line


def lost_to_the_truncate(stream: Stream, plan, partitions: int) -> bool:
    """Whether a change made after the reload began arrived in an earlier batch than every
    run of the reload, in a partition with no run of it in that run's batch, past the first
    change that follows one of those runs in its partition and batch: the positions show the
    reload began before that change and doesn't hold it, so its truncate would delete it."""
    start = reload_at(stream)
    batch = _batches(plan)
    part = {i: e.row[KEY] % partitions for i, e in enumerate(stream.events) if e.row}
    reads = [i for i in batch if i >= start and stream.events[i].op == "r"]
    told = min(batch[i] for i in reads)
    running = {part[i] for i in reads if batch[i] == told}
    bounds = [j for j in batch if batch[j] == told and part[j] in running
              and stream.events[j].op != "r"
              and j > min(i for i in reads if batch[i] == told and part[i] == part[j])]
    return bool(bounds) and any(
        batch[j] < told and part[j] not in running and stream.events[j].op != "r"
        and j > min(bounds) for j in batch)


@examples(3)
@given(data=st.data())
def test_a_change_a_qlik_reloads_truncate_would_delete_stops_the_table(data):
    """A change made after the reload began that arrives a batch before every run of the
    reload, in a partition with no run of it: where a change after a run shows the reload
    began before it, the table stops at a located error naming the full refresh (before the
    truncate lands, or in the batch that shows it), rather than lose the change with exit
    0; and it never stops where the reload is told before anything made after it."""
    stream = stream_with_reload(data, keyed=True, drops=data.draw(st.booleans()))
    partitions = data.draw(st.integers(2, 3))
    assume(every_part_follows_a_change(stream, partitions))
    plan = data.draw(partitioned(stream, partitions))
    assume(not told_before_the_rest(stream, plan) or data.draw(st.booleans()))
    outcome = run_pure(QlikAdapter(), stream, plan, reloads=True, ordered=True)
    stopped = outcome.error is not None and (outcome.error.hint or "").startswith(
        LOST_HINT.split("{")[0])
    if lost_to_the_truncate(stream, plan, partitions):
        assert stopped and outcome.error.file and outcome.error.line, \
            failure(outcome, stream, plan)
    if stopped:
        assert not told_before_the_rest(stream, plan), failure(outcome, stream, plan)
