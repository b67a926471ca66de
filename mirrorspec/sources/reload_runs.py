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
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

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
    a load behind, a run arriving a whole batch before the others): the producer's table in
    `sources.producers` and docs/sources/qlik_replicate.md say."""

    channels: dict[str, ChannelLoad] = field(default_factory=dict)
    generation: int = 0
    # the kind a legacy single-channel state gave a channel it did not name (see from_state)
    unnamed: bool | None = None

    @classmethod
    def from_state(cls, saved: Mapping[str, Any] | None) -> "LoadFollower":
        """The follower a reader state keeps; also the state saved before channels had
        generations: `{"channel": c, "last": k}` (one channel followed; `channel` absent: the
        first one seen), or `{"channel": None}` (several channels, not followed: the table
        is taken to hold the first load; the next run after changes starts the next)."""
        saved = saved or {}
        if "channels" in saved:
            return cls({name: ChannelLoad(item.get("last"), int(item.get("generation") or 0))
                        for name, item in (saved.get("channels") or {}).items()},
                       int(saved.get("generation") or 0))
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
        return {"generation": self.generation,
                "channels": {name: {"last": item.last, "generation": item.generation}
                             for name, item in sorted(self.channels.items())}}

    def channel(self, name: str) -> ChannelLoad:
        item = self.channels.get(name)
        if item is None:
            item = self.channels[name] = ChannelLoad(
                self.unnamed if not self.channels else None)
        return item

    def follow(self, transitions: Iterable[tuple[str, int, bool]], published: bool
               ) -> list[Run]:
        """The runs of reads in a batch (`transitions` as `reload_runs` takes them; a file's
        channel is `delivery.channel_of(file)`), advancing the channels and the table's
        generation. `published`: whether anything of the table was published before.

        Each channel's runs are counted on their own (the batch's order across channels is
        its files' names, not time); then the first run of each generation past the table's,
        in the batch's order, starts that load."""
        runs: list[Run] = []
        before: list[bool | None] = []  # the kind of the row before each run in its channel
        started: set[str] = set()
        for file, line, is_read in transitions:
            name = channel_of(file)
            item = self.channel(name)
            first = name not in started
            started.add(name)
            if is_read and item.last is not True:
                item.generation += 1
                if item.last is False:  # after changes: not a part of the first load
                    item.generation = max(item.generation, 2)
                runs.append(Run(file, line, replaces=False, channel=name,
                                generation=item.generation))
                before.append(item.last)
            elif is_read and first:  # the batch starts inside c's run of the batch before
                runs.append(Run(file, line, replaces=False, continues=True, channel=name,
                                generation=item.generation))
                before.append(True)
            item.last = is_read
        for index, run in enumerate(runs):
            if run.generation > self.generation:  # the first run of a new load
                self.generation = run.generation
                runs[index] = replace(run, replaces=(run.generation > 1
                                                     or before[index] is not None
                                                     or published))
        return runs

    def end_runs(self, channels: Iterable[str]) -> None:
        """Each channel's next read starts a new run, as after a change: for a batch of changes
        only, and for a full load written again under a name already published (a new load,
        whatever the channel's last row was)."""
        for name in channels:
            self.channel(name).last = False


def kept_runs(runs: Iterable[Run]) -> dict[str, Run]:
    """Per channel, the run its rows in the batch are kept from: its last run that does not
    continue the batch before's (a keyless table leaves out the rows before it: reads of an
    older load, changes the load holds), else the run that continues."""
    kept: dict[str, Run] = {}
    for run in runs:
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


__all__ = ["RELOAD_REPEATED", "ChannelLoad", "LoadFollower", "Run", "kept_runs", "reload_runs",
           "truncate_before"]
