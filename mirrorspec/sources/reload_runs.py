"""Where a producer's full load starts again: the runs of full-load reads in a feed (pure).

Qlik Replicate (REFRESH rows) and Arcion (snapshot rows) send a table's full load as reads
without a position; they send it again when the table is reloaded or the task restarts from its
full load, and nothing in the reads says where a load starts. What the feed does say is its
kinds of rows in file order: a run of reads that follows changes (or starts a feed that was
published before) is a new load, which replaces the table; reads that follow reads are the same
load — or the same load sent again right after itself, which only a keyed table can tell apart
(the Spark side, `spark/publish/reloads.py`, stops a keyless table at a repeated row).

A table's messages may span several channels (Kafka topic-partitions: Qlik's Kafka target
writes each message to a partition of its topic), and each channel gets its own run of every
load. `LoadFollower` follows them with *load generations*: each channel counts the runs it
starts, the table keeps the highest count any channel reached; the first run past the table's
count is a new load and brings the batch's one truncate (`truncate_before`), a run that only
reaches it is another channel's part of a load already started, and adds its rows.

Counts can lag (a channel with no row of a load, or no change between two loads, sends fewer
runs than there were loads). Where the changes carry positions that order them across channels
(Qlik's `changeSequence`, task-wide and increasing) and the files' order is the channel's (Kafka
topic-partitions), each run is placed between positions: the last change before it in its
channel (`Run.after`) and the first change after it (`Run.before`); its load started in
between. A full-load read carries no position of its own, so these bounds are all there is:
the table keeps its current load's `start` (a position known to precede it) and `bound` (one
known to follow its start). A run whose `after` is at or past `bound` started after the current
load: a new load, whatever the counts say; a run whose `before` is at or below `start` is of an
older load (`Run.stale`: its rows are left out); an insert or update at or below `start` is in
the current load already (`LoadFollower.start`: the reader leaves it out; a delete there may
still delete an older load's row landed since).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from mirrorspec.sources.delivery import channel_of


RELOAD_REPEATED = ("this row of a full load equals one the load already sent: the load started "
                   "again (the table reloaded, or the task restarted from its full load) or "
                   "the source table holds the row twice, and a table without key columns "
                   "can't tell them apart")


@dataclass(frozen=True)
class Run:
    """A run of full-load reads: its first row's file and line, and whether it replaces the
    table (False for the feed's first load, which nothing precedes, and for a run that
    continues one from the batch before)."""

    file: str
    line: int
    replaces: bool
    continues: bool = False
    channel: str = ""
    generation: int = 0
    # the positions around the run in its channel (None: not known): its load started after
    # `after` and at or before `before`; `stale`: a run of a load older than the table's
    after: tuple[int, ...] | None = None
    before: tuple[int, ...] | None = None
    stale: bool = False


Position = tuple[int, ...]
# a batch's stretch of rows of one kind in one file: (file, first line, is_read), and for
# changes their lowest and highest positions (None: none carried)
Stretch = tuple  # (str, int, bool) or (str, int, bool, Position | None, Position | None)


def reload_runs(transitions: Iterable[tuple[str, int, bool]], last_reload: bool | None,
                published: bool) -> tuple[list[Run], bool | None]:
    """The runs of full-load reads in a batch and the kind of its last row (True: a read).

    `transitions`: (file, line, is_read) of each file's first row and of every row whose kind
    differs from the row before it in its file, in the batch's file and line order.
    `last_reload`: the kind of the last row of the batches before (None: no row yet);
    `published`: whether anything of the table was published before."""
    runs: list[Run] = []
    previous = last_reload
    first = True
    for file, line, is_read in transitions:
        if is_read and previous is not True:
            runs.append(Run(file, line, replaces=previous is not None or published))
        elif is_read and first:  # the batch starts inside the load of the batch before
            runs.append(Run(file, line, replaces=False, continues=True))
        previous, first = is_read, False
    return runs, previous


@dataclass
class ChannelLoad:
    """One channel's place in the table's loads: the kind of its last row (True: a read, None:
    no row yet) and how many loads it has started a run of (its generation)."""

    last: bool | None = None
    generation: int = 0


@dataclass
class LoadFollower:
    """The loads of a table whose full loads may span several channels (see the module
    docstring), kept in the reader state as `to_state()`.

    A run of reads in channel c that follows changes in c (or starts c) moves c to its next
    generation. When that exceeds the table's generation, the run starts a new load: the table
    moves to it and the run gets a truncate (unless nothing precedes it: the feed's first
    load). A run that only reaches the table's generation is c's part of a load another
    channel started (in this batch or an earlier one): its rows add to the table. Reads after
    reads in c continue c's run. Generation 1 is the feed's first load, which no change
    precedes (the producer sends a table's changes after its full load): a run that follows
    changes is at least generation 2, whatever c's count (c got no row of the first load, or
    the feed started with changes). So a keyed table equals the source once every channel's
    run of the last load has arrived; in between, the rows of channels whose run has not
    arrived are missing (the truncate deleted them). What counts can't tell (a channel counted
    a load behind, a run arriving a whole batch before the others) positions place in part
    (`follow`); the rest the producer's table in `sources.producers` and
    docs/sources/qlik_replicate.md say."""

    channels: dict[str, ChannelLoad] = field(default_factory=dict)
    generation: int = 0
    # the kind a legacy single-channel state gave a channel it did not name (see from_state)
    unnamed: bool | None = None
    # the current load's bounds (module docstring): a position known to precede its start, and
    # one known to follow it (None: not known)
    start: Position | None = None
    bound: Position | None = None

    @classmethod
    def from_state(cls, saved: Mapping[str, Any] | None) -> "LoadFollower":
        """The follower a reader state keeps; also the state saved before channels had
        generations: `{"channel": c, "last": k}` (one channel followed; `channel` absent: the
        first one seen), or `{"channel": None}` (several channels, not followed: the table
        is taken to hold the first load; the next run after changes starts the next), and the
        state saved before loads had bounds (no `start`, `bound`: not known)."""
        saved = saved or {}
        if "channels" in saved:
            return cls({name: ChannelLoad(item.get("last"), int(item.get("generation") or 0))
                        for name, item in (saved.get("channels") or {}).items()},
                       int(saved.get("generation") or 0),
                       start=_position(saved.get("start")), bound=_position(saved.get("bound")))
        if not saved:
            return cls()
        if "channel" in saved and saved["channel"] is None:
            return cls(generation=1)
        last = saved.get("last")
        if "channel" not in saved:  # only changes were seen: no load yet
            return cls(unnamed=last)
        generation = 1 if last is not None else 0
        return cls({saved["channel"]: ChannelLoad(last, generation)}, generation)

    def to_state(self) -> dict[str, Any]:
        """The JSON the reader state keeps (`from_state` reads it back)."""
        state: dict[str, Any] = {
            "generation": self.generation,
            "channels": {name: {"last": item.last, "generation": item.generation}
                         for name, item in sorted(self.channels.items())}}
        for name, position in (("start", self.start), ("bound", self.bound)):
            if position is not None:
                state[name] = list(position)
        return state

    def channel(self, name: str) -> ChannelLoad:
        item = self.channels.get(name)
        if item is None:
            item = self.channels[name] = ChannelLoad(
                self.unnamed if not self.channels else None)
        return item

    def follow(self, stretches: Iterable[Stretch], published: bool,
               positions: Mapping[str, Sequence[int]] | None = None) -> list[Run]:
        """The runs of reads in a batch, advancing the channels and the table's generation
        and bounds. `stretches`: (file, line, is_read) of each file's first row and of every
        row whose kind differs from the row before it in its file, in the batch's file and
        line order (as `reload_runs` takes them; a file's channel is
        `delivery.channel_of(file)`), each with the lowest and highest position of the changes
        it starts when the producer's positions order the table's changes across channels.
        `positions`: then, per channel, the highest change position earlier batches applied
        (the delivery marks); None where positions don't order them (the runs get no bounds).
        `published`: whether anything of the table was published before.

        Each channel's runs are counted on their own (the batch's order across channels is
        its files' names, not time), and placed between the positions around them in their
        channel (Kafka topic-partitions only: plain files' names need not follow the feed);
        then, in the batch's order, a run of an older load than the table's is `stale`, a run
        that started after the table's load began moves its channel's count past the table's,
        and the first run of each generation past the table's starts that load."""
        placed = positions is not None
        last_change = {name: tuple(p) for name, p in (positions or {}).items()}
        runs: list[Run] = []
        before: list[bool | None] = []  # the kind of the row before each run in its channel
        started: set[str] = set()
        open_runs: dict[str, int] = {}  # a channel's run still waiting for a change after it
        for stretch in stretches:
            file, line, is_read = stretch[:3]
            low, high = (_position(stretch[3]), _position(stretch[4])) if len(stretch) > 3 \
                else (None, None)
            name = channel_of(file)
            item = self.channel(name)
            first = name not in started
            started.add(name)
            bounded = placed and bool(name)
            if is_read and item.last is not True:
                item.generation += 1
                if item.last is False:  # after changes: not a part of the first load
                    item.generation = max(item.generation, 2)
                runs.append(Run(file, line, replaces=False, channel=name,
                                generation=item.generation,
                                after=last_change.get(name) if bounded else None))
                before.append(item.last)
                open_runs[name] = len(runs) - 1
            elif is_read and first:  # the batch starts inside c's run of the batch before
                runs.append(Run(file, line, replaces=False, continues=True, channel=name,
                                generation=item.generation))
                before.append(True)
                open_runs[name] = len(runs) - 1
            elif not is_read and bounded and low is not None:
                if name in open_runs:
                    index = open_runs.pop(name)
                    runs[index] = replace(runs[index], before=low)
                elif first and item.last is True and item.generation >= self.generation:
                    # c's run of the table's load ended the batch before: this change came
                    # after the load began
                    self.bound = _lowest(self.bound, low)
            if not is_read and bounded and high is not None:
                last_change[name] = max(last_change.get(name) or high, high)
            item.last = is_read
        for index in range(len(runs)):
            self._place(runs, index, before[index], published)
        if self.start is not None:  # runs of a load older than the one the batch ends in
            for index, run in enumerate(runs):
                if run.before is not None and run.before <= self.start:
                    runs[index] = replace(run, stale=True)
        return runs

    def _place(self, runs: list[Run], index: int, before: bool | None, published: bool) -> None:
        """Decide `runs[index]` against the table's load (see `follow`)."""
        run = runs[index]
        if run.continues:
            if run.generation >= self.generation and run.before is not None:
                self.bound = _lowest(self.bound, run.before)
            return
        if run.before is not None and self.start is not None and run.before <= self.start:
            # a change after the run came before the table's load began: an older load's run
            if run.generation >= self.generation:  # c's count ran ahead of the table's
                self._shift(runs, index, self.generation - 1 - run.generation)
            runs[index] = replace(runs[index], stale=True)
            return
        if (run.after is not None and self.bound is not None and run.after >= self.bound
                and run.generation <= self.generation):
            # a change before the run came after the table's load began: a newer load
            self._shift(runs, index, self.generation + 1 - run.generation)
            run = runs[index]
        if run.generation > self.generation:  # the first run of a new load
            self.generation = run.generation
            self.start = _highest(self.start, run.after)
            self.bound = run.before
            runs[index] = replace(run, replaces=(run.generation > 1 or before is not None
                                                 or published))
        elif run.generation == self.generation and run.before is not None:
            self.bound = _lowest(self.bound, run.before)

    def _shift(self, runs: list[Run], index: int, delta: int) -> None:
        """Move the count of `runs[index]`'s channel by `delta`, from that run on."""
        name = runs[index].channel
        for later in range(index, len(runs)):
            if runs[later].channel == name:
                runs[later] = replace(runs[later], generation=runs[later].generation + delta)
        self.channel(name).generation += delta

    def awaiting(self, channels: Iterable[str]) -> list[str]:
        """The channels (of Kafka topic-partitions) whose last row is a read of the table's
        load or a later one: their first change after it bounds the load (`changes_after`)."""
        return sorted(name for name in set(channels) if name and name in self.channels
                      and self.channels[name].last is True
                      and self.channels[name].generation >= self.generation)

    def changes_after(self, lowest: Mapping[str, Sequence[int] | None]) -> None:
        """For a batch of changes only: each `awaiting` channel's lowest change position in
        it came after the table's load began (`bound`), as `follow` takes it in a batch with
        reads."""
        for name in self.awaiting(lowest):
            self.bound = _lowest(self.bound, _position(lowest[name]))

    def end_runs(self, channels: Iterable[str]) -> None:
        """Each channel's next read starts a new run, as after a change: for a batch of changes
        only, and for a full load written again under a name already published (a new load,
        whatever the channel's last row was)."""
        for name in channels:
            self.channel(name).last = False


def kept_runs(runs: Iterable[Run]) -> dict[str, Run]:
    """Per channel, the run its rows in the batch are kept from: its last run that does not
    continue the batch before's (a keyless table leaves out the rows before it: reads of an
    older load, changes the load holds), else the run that continues; never a `stale` run."""
    kept: dict[str, Run] = {}
    for run in runs:
        if run.stale:
            continue
        if not run.continues or run.channel not in kept:
            kept[run.channel] = run
    return kept


def truncate_before(runs: list[Run]) -> Run | None:
    """Where a batch whose runs start a new load gets its one truncate (None: none starts
    one): before the first run, in the batch's order, that some channel's rows are kept from
    (`kept_runs`; everything before it is left out or deleted). That is the run starting the
    load, or an earlier kept run of another channel — a channel with no change between two
    loads sends them as one run, which may hold its part of the new load, so its rows land
    after the truncate (a run of an older load there lands too: the channel's next run
    replaces its rows)."""
    if not any(run.replaces for run in runs):
        return None
    kept = {id(run) for run in kept_runs(runs).values()}
    return next(run for run in runs if id(run) in kept)


def stale_spans(runs: Sequence[Run]) -> list[tuple[Run, Run | None]]:
    """Each `stale` run and the next run of its channel in the batch (None: none), between
    which its reads lie (the reader leaves them out)."""
    spans = []
    for index, run in enumerate(runs):
        if run.stale:
            spans.append((run, next((r for r in runs[index + 1:] if r.channel == run.channel),
                                    None)))
    return spans


def _position(value: Any) -> Position | None:
    return None if value is None else tuple(int(v) for v in value)


def _highest(a: Position | None, b: Position | None) -> Position | None:
    return b if a is None else a if b is None else max(a, b)


def _lowest(a: Position | None, b: Position | None) -> Position | None:
    return b if a is None else a if b is None else min(a, b)


__all__ = ["RELOAD_REPEATED", "ChannelLoad", "LoadFollower", "Run", "kept_runs", "reload_runs",
           "stale_spans", "truncate_before"]
