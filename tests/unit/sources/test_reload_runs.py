"""Where a producer's full load starts again (`sources.reload_runs`): the runs of full-load
reads (Qlik REFRESH rows, Arcion snapshot rows) among a batch's rows, in file order."""

from __future__ import annotations

import json
from dataclasses import replace

from mirrorspec.sources.delivery import channel_of
from mirrorspec.sources.replicator_positions import sequence_position
from mirrorspec.sources.reload_runs import (LoadFollower, Run, kept_runs, lost_change_error,
                                           reload_runs, stale_spans, truncate_before)


def test_the_feeds_first_load_replaces_nothing_and_a_load_after_changes_replaces():
    runs, last = reload_runs([("a", 1, True), ("a", 4, False), ("b", 1, True)], None, False)
    assert runs == [Run("a", 1, replaces=False), Run("b", 1, replaces=True)] and last is True


def test_reads_continuing_across_files_and_batches_are_one_load():
    runs, last = reload_runs([("a", 1, True), ("b", 1, True)], True, True)
    assert runs == [Run("a", 1, replaces=False, continues=True)] and last is True
    assert reload_runs([("a", 1, True), ("b", 1, True)], None, False)[0] == [
        Run("a", 1, replaces=False)]


def test_a_first_load_after_an_earlier_publish_replaces():
    """A table that published before (rows of another origin, or a state lost) and whose feed
    now starts with reads: the load replaces what the table holds."""
    assert reload_runs([("a", 1, True)], None, True)[0] == [Run("a", 1, replaces=True)]


def test_changes_only_end_in_a_change():
    assert reload_runs([("a", 1, False), ("b", 1, False)], True, True) == ([], False)


# --- a load's runs across several channels (Kafka topic-partitions) -----------------------------

def part(partition: int, offset: int) -> str:
    """A Kafka Connect sink file of topic `orders`: `<topic>+<partition>+<start offset>`."""
    return f"orders+{partition}+{offset:010d}.json"


def follow(follower: LoadFollower, published: bool, *rows: tuple[int, int, int, bool]
           ) -> list[tuple[str, bool, int]]:
    """The batch's runs as (file, replaces, generation), from rows (partition, offset, line,
    is_read) given in file order; the follower goes through its saved form between batches,
    as the reader state does."""
    runs = follower.follow([(part(p, o), line, read) for p, o, line, read in rows], published)
    restored = LoadFollower.from_state(json.loads(json.dumps(follower.to_state())))
    assert restored.to_state() == follower.to_state()
    return [(run.file, run.replaces, run.generation) for run in runs]


def test_a_first_load_spread_over_two_partitions_replaces_nothing():
    follower = LoadFollower()
    assert follow(follower, False, (0, 0, 1, True), (0, 0, 3, False), (1, 0, 1, True)) == [
        (part(0, 0), False, 1), (part(1, 0), False, 1)]
    assert follower.generation == 1


def test_a_reload_over_two_partitions_truncates_once_whichever_partition_comes_first():
    for first, second in ((0, 1), (1, 0)):
        follower = LoadFollower()
        follow(follower, False, (0, 0, 1, True), (1, 0, 1, True))
        follower.end_runs([channel_of(part(0, 5)), channel_of(part(1, 5))])
        # the reload: the first partition's run in one batch, the other's in the next
        assert follow(follower, True, (first, 9, 1, True)) == [(part(first, 9), True, 2)]
        assert follow(follower, True, (second, 9, 1, True)) == [(part(second, 9), False, 2)]
        # both in one batch, changes before them in each partition: the first in file order
        assert follow(follower, True, (0, 20, 1, False), (0, 20, 2, True),
                      (1, 20, 1, False), (1, 20, 2, True)) == [
            (part(0, 20), True, 3), (part(1, 20), False, 3)]


def test_a_partition_without_a_run_leaves_the_truncate_to_the_others():
    """A reload whose rows all go to partition 0 (partition 1 held keys the source deleted):
    one truncate; partition 1's next run (of the load after) adds to that load's truncate."""
    follower = LoadFollower()
    follow(follower, False, (0, 0, 1, True), (1, 0, 1, True))
    follower.end_runs([channel_of(part(0, 1)), channel_of(part(1, 1))])
    assert follow(follower, True, (0, 2, 1, True)) == [(part(0, 2), True, 2)]
    follower.end_runs([channel_of(part(0, 3)), channel_of(part(1, 3))])
    assert follow(follower, True, (0, 4, 1, True), (1, 4, 1, True)) == [
        (part(0, 4), True, 3), (part(1, 4), False, 2)]


def test_a_partition_without_rows_of_the_first_load_starts_the_reload_it_sends_first():
    """Partition 1 got no row of the feed's first load; its run after changes can't be a late
    part of that load (changes follow a table's full load), so it is the reload's first run:
    the truncate goes there, not before partition 0's run that arrives a batch later."""
    follower = LoadFollower()
    follow(follower, False, (0, 0, 1, True))
    follower.end_runs([channel_of(part(0, 1)), channel_of(part(1, 1))])
    assert follow(follower, True, (1, 2, 1, True)) == [(part(1, 2), True, 2)]
    assert follow(follower, True, (0, 2, 1, True)) == [(part(0, 2), False, 2)]
    # once a reload replaced the first load, a count that only reaches the table's is taken
    # for the late part of that reload (what counts can't tell apart)
    follower.end_runs([channel_of(part(0, 3)), channel_of(part(1, 3))])
    assert follow(follower, True, (1, 4, 1, True)) == [(part(1, 4), True, 3)]


def test_a_second_reload_after_a_complete_first_truncates_again():
    follower = LoadFollower()
    follow(follower, False, (0, 0, 1, True), (1, 0, 1, True))
    for generation in (2, 3):
        follower.end_runs([channel_of(part(0, 0)), channel_of(part(1, 0))])
        assert follow(follower, True, (0, generation, 1, True), (1, generation, 1, True)) == [
            (part(0, generation), True, generation), (part(1, generation), False, generation)]


def test_a_run_split_across_batches_continues_without_a_truncate():
    follower = LoadFollower()
    follow(follower, False, (0, 0, 1, True), (1, 0, 1, True))
    follower.end_runs([channel_of(part(0, 1)), channel_of(part(1, 1))])
    assert follow(follower, True, (0, 1, 1, True)) == [(part(0, 1), True, 2)]
    runs = follower.follow([(part(0, 2), 1, True), (part(1, 2), 1, True)], True)
    assert runs == [Run(part(0, 2), 1, False, True, channel_of(part(0, 2)), 2),
                    Run(part(1, 2), 1, False, False, channel_of(part(1, 2)), 2)]


def test_plain_files_are_one_channel_as_before():
    follower = LoadFollower()
    assert [(r.file, r.replaces) for r in follower.follow(
        [("a", 1, True), ("a", 4, False), ("b", 1, True)], False)] == [("a", False), ("b", True)]
    assert follower.to_state() == {"generation": 2,
                                   "channels": {"": {"last": True, "generation": 2}}}


def test_a_state_saved_before_generations_keeps_working():
    # one channel followed, its last row a read: the next reads continue the load
    follower = LoadFollower.from_state({"channel": "", "last": True})
    assert [(r.replaces, r.continues) for r in follower.follow([("c", 1, True)], True)] == [
        (False, True)]
    # its last row a change: the next run is a new load
    follower = LoadFollower.from_state({"channel": "", "last": False})
    assert [r.replaces for r in follower.follow([("c", 1, True)], True)] == [True]
    # changes only, the channel not learnt yet
    follower = LoadFollower.from_state({"last": False})
    assert [r.replaces for r in follower.follow([(part(0, 7), 1, True)], True)] == [True]
    # several channels, not followed: the table holds the first load, the next run after
    # changes starts the next; a partition's run without changes before adds to the first
    follower = LoadFollower.from_state({"channel": None, "last": None})
    assert follow(follower, True, (0, 5, 1, False), (0, 5, 2, True), (1, 5, 1, True)) == [
        (part(0, 5), True, 2), (part(1, 5), False, 1)]
    follower.end_runs([channel_of(part(1, 6))])
    assert follow(follower, True, (1, 6, 1, True)) == [(part(1, 6), False, 2)]


def test_the_truncate_goes_before_the_first_kept_run_of_the_new_load_or_of_another_partition():
    """Partition 0 sends the first load and its part of the reload as one run (no change in
    it between them); partition 1's run after a change tells the reload. The truncate goes
    before partition 0's run, so its rows of the reload stay; partition 1's rows before its
    new run are left out (kept_runs)."""
    follower = LoadFollower()
    runs = follower.follow([(part(0, 0), 1, True), (part(1, 0), 1, True),
                            (part(1, 0), 3, False), (part(1, 0), 4, True)], False)
    assert [(r.file, r.line, r.replaces, r.generation) for r in runs] == [
        (part(0, 0), 1, False, 1), (part(1, 0), 1, False, 1), (part(1, 0), 4, True, 2)]
    kept = kept_runs(runs)
    assert (kept[channel_of(part(0, 0))].line, kept[channel_of(part(1, 0))].line) == (1, 4)
    assert truncate_before(runs) is runs[0]
    # without a new load, no truncate; a single channel truncates before its new run
    assert truncate_before(runs[:2]) is None
    single = LoadFollower().follow([("a", 1, True), ("a", 2, False), ("a", 3, True)], False)
    assert truncate_before(single) is single[1] and kept_runs(single)[""] is single[1]


# --- runs placed by the changes' positions (Qlik's changeSequence) -----------------------------

def seq(n: int) -> tuple[int, ...]:
    return (n,)


def placed(follower: LoadFollower, published: bool, applied: dict[int, int],
           *rows: tuple) -> list[Run]:
    """`follower.follow` with stretches (partition, offset, line, is_read[, low, high]) and
    the highest change position earlier batches applied per partition (`applied`); the
    follower goes through its saved form afterwards, as the reader state does."""
    stretches = [(part(p, o), line, read, *(seq(x) for x in rest))
                 for p, o, line, read, *rest in rows]
    runs = follower.follow(stretches, published,
                           {channel_of(part(p, 0)): seq(n) for p, n in applied.items()})
    restored = LoadFollower.from_state(json.loads(json.dumps(follower.to_state())))
    assert restored == follower
    return runs


def test_a_run_after_a_change_the_load_began_before_is_a_new_load_though_counted_behind():
    """Partition 1 got no row of the reload (generation 2): its run of the next reload counts
    only 2, the table's generation. Counts take it for a late part of the reload, so the
    truncate coming with partition 0's run of the next reload would delete its rows. The
    change before it (sequence 6) came after the reload began (partition 0's change 5 after
    its run): it is the next reload, and truncates itself."""
    follower = LoadFollower()
    placed(follower, False, {}, (0, 0, 1, True), (1, 0, 1, True))
    runs = placed(follower, True, {}, (0, 1, 1, False, 1, 1), (0, 1, 2, True),
                  (0, 1, 3, False, 5, 5), (1, 1, 1, False, 2, 2))
    assert [(r.channel, r.replaces, r.generation, r.after, r.before) for r in runs] == [
        ("orders/0", True, 2, seq(1), seq(5))]
    assert (follower.start, follower.bound) == (seq(1), seq(5))
    runs = placed(follower, True, {0: 5, 1: 2}, (1, 2, 1, False, 6, 6), (1, 2, 2, True))
    assert [(r.replaces, r.generation, r.after) for r in runs] == [(True, 3, seq(6))]
    assert follower.generation == 3 and follower.start == seq(6)
    # partition 0's run of that reload then adds its rows: no truncate deletes partition 1's
    runs = placed(follower, True, {0: 5, 1: 6}, (0, 3, 1, False, 7, 7), (0, 3, 2, True))
    assert [(r.replaces, r.generation) for r in runs] == [(False, 3)]


def test_a_run_before_a_change_older_than_the_load_is_stale():
    """Partition 1's run of the first load arrives after the reload was told, followed by its
    change 2, which came before partition 0's change 3 before its reload run: an older
    load's run, whose reads are left out (`stale_spans`), kept by no channel; its run of the
    reload after it adds to the load."""
    follower = LoadFollower()
    placed(follower, False, {}, (0, 0, 1, True))
    placed(follower, True, {}, (0, 1, 1, False, 3, 3), (0, 1, 2, True))
    assert follower.start == seq(3)
    runs = placed(follower, True, {0: 3}, (1, 0, 1, True), (1, 0, 3, False, 2, 2),
                  (1, 0, 4, True))
    assert [(r.line, r.stale, r.replaces, r.generation) for r in runs] == [
        (1, True, False, 1), (4, False, False, 2)]
    assert kept_runs(runs)[channel_of(part(1, 0))] is runs[1]
    assert stale_spans(runs) == [(runs[0], runs[1])]
    assert truncate_before(runs) is None


def test_a_count_ahead_of_an_older_run_is_moved_back():
    """A stale run its channel counted past the table's load (counts lag for the table's
    load, not the run's): the channel's count moves back, so its next run, of the table's
    load, adds to it rather than truncating again."""
    follower = LoadFollower(start=seq(9), generation=2)
    runs = placed(follower, True, {}, (1, 0, 1, False, 1, 1), (1, 0, 2, True),
                  (1, 0, 3, False, 4, 4))
    assert [(r.stale, r.generation, r.replaces) for r in runs] == [(True, 1, False)]
    runs = placed(follower, True, {1: 4}, (1, 1, 1, True))
    assert [(r.replaces, r.generation) for r in runs] == [(False, 2)]


def test_plain_files_and_readers_without_positions_are_not_placed():
    """A plain file's name need not follow the feed (one channel ""), and a reader whose
    positions don't order the table across channels passes none: the runs get no bounds."""
    follower = LoadFollower()
    runs = follower.follow([("a", 1, False, seq(1), seq(1)), ("a", 2, True),
                            ("a", 3, False, seq(5), seq(5))], True, {})
    assert [(r.after, r.before) for r in runs] == [(None, None)]
    runs = LoadFollower().follow([(part(0, 0), 1, False, seq(1), seq(1)), (part(0, 0), 2, True)],
                                 True, None)
    assert [(r.after, r.before) for r in runs] == [(None, None)]


def test_a_state_saved_before_positions_reads_as_no_bounds():
    saved = {"generation": 2, "channels": {"orders/0": {"last": True, "generation": 2}}}
    follower = LoadFollower.from_state(saved)
    assert (follower.start, follower.bound) == (None, None) and follower.to_state() == saved


def test_a_batch_of_changes_after_a_run_bounds_the_load():
    """Partition 0's run of the reload ends its batch; its first change comes in a batch of
    changes only (the reader passes each awaiting partition's lowest position): that bounds
    the load, so partition 1's run after a later change is a new load."""
    follower = LoadFollower()
    placed(follower, False, {}, (0, 0, 1, True), (1, 0, 1, True))
    placed(follower, True, {}, (0, 1, 1, False, 1, 1), (0, 1, 2, True))
    assert (follower.generation, follower.bound) == (2, None)
    assert follower.awaiting([channel_of(part(0, 2)), channel_of(part(1, 2))]) == ["orders/0"]
    follower.changes_after({"orders/0": seq(4), "orders/1": seq(2)})
    follower.end_runs(["orders/0", "orders/1"])
    assert follower.bound == seq(4)
    runs = placed(follower, True, {0: 4, 1: 2}, (1, 3, 1, False, 5, 5), (1, 3, 2, True))
    assert [(r.replaces, r.generation) for r in runs] == [(True, 3)]


# --- a landed change the reload's truncate would delete ----------------------------------------

def lost_of(follower: LoadFollower, applied: dict[int, int], *rows: tuple):
    """`follower.follow` as `placed` does, then what it found lost."""
    stretches = [(part(p, o), line, read, *(seq(x) for x in rest))
                 for p, o, line, read, *rest in rows]
    follower.follow(stretches, True,
                    {channel_of(part(p, 0)): seq(n) for p, n in applied.items()})
    return follower.lost


def first_load_then_partition_1_changes(applied_1: int) -> LoadFollower:
    """Both partitions' runs of the first load, then partition 0's change 1 and partition 1's
    changes up to `applied_1` published in later batches."""
    follower = LoadFollower()
    placed(follower, False, {}, (0, 0, 1, True), (1, 0, 1, True))
    placed(follower, True, {}, (0, 1, 1, False, 1, 1), (1, 1, 1, False, 2, applied_1))
    return follower


def test_a_change_published_before_the_reload_that_it_postdates_stops_the_table_at_the_run():
    """Partition 1 got no row of the reload. Its change 9 was published a batch before
    partition 0's run of the reload, whose next change (5) shows the reload began before 5:
    the reload doesn't hold change 9, and its truncate would delete it. The table stops at
    the run, before anything of the batch lands."""
    follower = first_load_then_partition_1_changes(9)
    lost = lost_of(follower, {0: 1, 1: 9}, (0, 2, 1, True), (0, 2, 4, False, 5, 5))
    assert lost is not None
    assert (lost.channel, lost.position, lost.bound, lost.file, lost.line, lost.landed) == (
        "orders/1", seq(9), seq(5), part(0, 2), 1, False)
    # as Qlik's changeSequence reads in the message
    change, bound = "20261129120000000000000000000000009", "20261129115900000000000000000000005"
    error = lost_change_error(replace(lost, position=sequence_position(change),
                                      bound=sequence_position(bound)), "sales.orders")
    assert (error.file, error.line) == (part(0, 2), 1)
    assert f"change {change}" in str(error) and f"before changeSequence {bound}" in str(error)
    assert "`mirrorspec run --full-refresh --select sales.orders`" in error.hint


def test_the_stop_comes_when_a_later_batch_shows_the_reload_began_before_the_change():
    """The run ends its batch (no bound yet): the change is only exposed, kept in the state;
    partition 0's first change after its run, in a batch of changes only, shows the reload
    began before 5 < 9: the truncate, published already, deleted change 9 — the table stops
    there, saying so, rather than go on without it."""
    follower = first_load_then_partition_1_changes(9)
    assert lost_of(follower, {0: 1, 1: 9}, (0, 2, 1, True)) is None
    assert follower.exposed == {"orders/1": seq(9)}
    restored = LoadFollower.from_state(json.loads(json.dumps(follower.to_state())))
    assert restored.exposed == follower.exposed
    restored.changes_after({"orders/0": seq(5)}, {"orders/0": (part(0, 3), 2)})
    lost = restored.lost
    assert lost is not None and (lost.file, lost.line, lost.landed) == (part(0, 3), 2, True)
    assert "deleted" in str(lost_change_error(lost, "sales.orders"))


def test_a_change_the_positions_cant_place_against_the_reload_is_not_stopped_at():
    """Change 4 of partition 1 lies between partition 0's change before its run (1) and the
    one after it (5): the reload began somewhere in between, so 4 may be in it — no stop (a
    limit the docs state)."""
    follower = first_load_then_partition_1_changes(4)
    assert lost_of(follower, {0: 1, 1: 4}, (0, 2, 1, True), (0, 2, 4, False, 5, 5)) is None
    assert follower.exposed == {"orders/1": seq(4)}


def test_a_partitions_own_run_of_the_reload_ends_its_exposure():
    """Partition 1's run of the reload arrives a batch later: its changes before the run
    came before the reload began, so nothing of it was lost, whatever the bound."""
    follower = first_load_then_partition_1_changes(3)
    assert lost_of(follower, {0: 1, 1: 3}, (0, 2, 1, True)) is None
    assert follower.exposed == {"orders/1": seq(3)}
    assert lost_of(follower, {0: 1, 1: 3}, (1, 2, 1, True), (0, 3, 1, False, 5, 5)) is None
    assert follower.exposed == {} and follower.bound == seq(5)


def test_a_change_before_the_reloads_start_is_not_exposed():
    follower = first_load_then_partition_1_changes(2)
    placed(follower, True, {0: 1, 1: 2}, (0, 2, 1, False, 3, 3), (0, 2, 2, True),
           (0, 2, 3, False, 5, 5))
    assert follower.start == seq(3) and follower.exposed == {} and follower.lost is None
