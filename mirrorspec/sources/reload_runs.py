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

A batch's changes sort after its reads, so its own changes land after a truncate; an earlier
batch's change does not. A channel with no run of a new load whose changes an earlier batch
landed past the load's `start` is *exposed*: once `bound` is known to be below such a change,
the change came after the load began, the load doesn't hold it and its truncate deletes it.
The follower then reports it (`LoadFollower.lost`, `lost_change_error`): the table stops, at the
run when the truncate is still to be published, rather than lose the change with exit 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.delivery import channel_of
from mirrorspec.sources.replicator_positions import sequence_text


RELOAD_REPEATED = ("this row of a full load equals one the load already sent: the load started "
                   "again (the table reloaded, or the task restarted from its full load) or "
                   "the source table holds the row twice, and a table without key columns "
                   "can't tell them apart")


LOST_HINT = ("publish the table again from its sources, in one batch, where each partition's "
             "order places the reload: `mirrorspec run --full-refresh --select {table}`. A "
             "table whose messages all go to one Kafka partition avoids this: a topic with "
             "one partition, or Qlik's Kafka target partitioning by message key with the "
             "schema and table name as the key")


@dataclass(frozen=True)
class LostChange:
    """A change an earlier batch landed that the table's load doesn't hold (module docstring):
    its channel, its position, the position the load began at or before, where that showed
    (`file`, `line`), and whether the load's truncate was published already (`landed`)."""

    channel: str
    position: tuple[int, ...]
    bound: tuple[int, ...]
    file: str
    line: int | None
    landed: bool


def lost_change_error(lost: LostChange, table: str) -> SourceError:
    """The located stop for `LoadFollower.lost` (positions shown as Qlik's `changeSequence`)."""
    change, bound = sequence_text(lost.position), sequence_text(lost.bound)
    if lost.landed:
        message = (f"the table's reload, which began before changeSequence {bound} (this "
                   "change shows it), was published in an earlier batch; Kafka partition "
                   f"{lost.channel} had published change {change}, made after that, in a "
                   "batch before it: the reload doesn't hold that change, and its truncate "
                   "deleted it, so the table lacks it")
    else:
        message = (f"REFRESH rows here reload the table, which began before changeSequence "
                   f"{bound}; Kafka partition {lost.channel} published change {change}, made "
                   "after that, in an earlier batch: the reload doesn't hold that change, and "
                   "its truncate would delete it")
    return SourceError(message, file=lost.file, line=lost.line,
                       hint=LOST_HINT.format(table=table))


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
    # channels without a run of the current load whose landed changes pass its start, with
    # the highest of them (module docstring)
    exposed: dict[str, Position] = field(default_factory=dict)
    # set by `follow` or `changes_after`: a landed change the load's truncate deletes
    lost: LostChange | None = None

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
                       start=as_position(saved.get("start")), bound=as_position(saved.get("bound")),
                       exposed={name: as_position(position) for name, position
                                in (saved.get("exposed") or {}).items()})
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
        if self.exposed:
            state["exposed"] = {name: list(p) for name, p in sorted(self.exposed.items())}
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
        (the delivery marks, of every channel of the table: a channel without a run of a new
        load is `exposed`); None where positions don't order them (the runs get no bounds).
        `published`: whether anything of the table was published before.

        Each channel's runs are counted on their own (the batch's order across channels is
        its files' names, not time), and placed between the positions around them in their
        channel (Kafka topic-partitions only: plain files' names need not follow the feed);
        then, in the batch's order, a run of an older load than the table's is `stale`, a run
        that started after the table's load began moves its channel's count past the table's,
        and the first run of each generation past the table's starts that load."""
        placed = positions is not None
        generation = self.generation
        last_change = {name: tuple(p) for name, p in (positions or {}).items()}
        landed = dict(last_change)
        told: dict[Position, tuple[str, int]] = {}  # where each stretch's lowest change is
        runs: list[Run] = []
        before: list[bool | None] = []  # the kind of the row before each run in its channel
        started: set[str] = set()
        open_runs: dict[str, int] = {}  # a channel's run still waiting for a change after it
        for stretch in stretches:
            file, line, is_read = stretch[:3]
            low, high = (as_position(stretch[3]), as_position(stretch[4])) if len(stretch) > 3 \
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
            if not is_read and bounded and low is not None:
                told.setdefault(low, (file, line))
            if not is_read and bounded and high is not None:
                last_change[name] = max(last_change.get(name) or high, high)
            item.last = is_read
        for index in range(len(runs)):
            self._place(runs, index, before[index], published)
        if self.start is not None:  # runs of a load older than the one the batch ends in
            for index, run in enumerate(runs):
                if run.before is not None and run.before <= self.start:
                    runs[index] = replace(run, stale=True)
        if placed:
            self._expose(runs, landed, generation, told)
        return runs

    def _expose(self, runs: Sequence[Run], landed: Mapping[str, Position], generation: int,
                told: Mapping[Position, tuple[str, int]]) -> None:
        """Follow the exposed channels (module docstring) after a batch's runs: a new load
        exposes every channel without a run of it whose landed changes pass its start; a
        channel's run of the table's load ends its exposure. Sets `lost` where an exposed
        change lies past the load's bound."""
        running = {run.channel for run in runs
                   if not run.stale and run.generation == self.generation}
        new_load = self.generation > generation
        if new_load:
            self.exposed = {name: position for name, position in landed.items()
                            if name and name not in running and self.start is not None
                            and position > self.start}
        for name in running:
            self.exposed.pop(name, None)
        if new_load:
            first = next((run for run in runs if run.generation == self.generation
                          and not run.continues and not run.stale), runs[0])
            self._check(first.file, first.line, landed=False)
        elif self.bound is not None:
            file, line = told.get(self.bound, (runs[0].file, runs[0].line) if runs
                                  else ("", None))
            self._check(file, line, landed=True)

    def _check(self, file: str, line: int | None, landed: bool) -> None:
        """Set `lost` when an exposed change lies past the load's bound."""
        if self.bound is None or self.lost is not None:
            return
        past = sorted((position, name) for name, position in self.exposed.items()
                      if position > self.bound)
        if past:
            position, name = past[-1]
            self.lost = LostChange(name, position, self.bound, file, line, landed)

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

    def changes_after(self, lowest: Mapping[str, Sequence[int] | None],
                      where: Mapping[str, tuple[str, int]] | None = None) -> None:
        """For a batch of changes only: each `awaiting` channel's lowest change position in
        it came after the table's load began (`bound`), as `follow` takes it in a batch with
        reads. `where`: each channel's file and line of that change (where `lost` points)."""
        for name in self.awaiting(lowest):
            bound = _lowest(self.bound, as_position(lowest[name]))
            if bound != self.bound:
                self.bound = bound
                file, line = (where or {}).get(name, (name, None))
                self._check(file, line, landed=True)

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


def as_position(value: Any) -> Position | None:
    """A position as the state's JSON or a Spark row holds it (a list of integers; None)."""
    return None if value is None else tuple(int(v) for v in value)


def _highest(a: Position | None, b: Position | None) -> Position | None:
    return b if a is None else a if b is None else max(a, b)


def _lowest(a: Position | None, b: Position | None) -> Position | None:
    return b if a is None else a if b is None else min(a, b)


__all__ = ["LOST_HINT", "RELOAD_REPEATED", "ChannelLoad", "LoadFollower", "LostChange", "Run",
           "as_position", "kept_runs", "lost_change_error", "reload_runs", "stale_spans",
           "truncate_before"]
