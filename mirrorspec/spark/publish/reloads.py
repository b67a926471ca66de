"""A feed's full loads replace its table: the Spark side of `sources.reload_runs`.

Full-load reads (`_delivery` phase SNAPSHOT without a position: Qlik Replicate's REFRESH rows,
Arcion's snapshot rows) carry nothing that says where a load starts, so a reload of the table
(or a task restarted from its full load) would add its rows to the table's. Here the batch's
runs of reads are found from the kinds of its rows in file order, per channel (a Kafka
topic-partition: `reload_runs.LoadFollower`), and a run that starts a new load gets a truncate
before its first row — once per load, however many channels its runs span: the publisher
then deletes what the table held (`completion.expand_truncates`), and a keyless table gets
only the rows it lacks, or stops (`replace.replace_keyless`). A load sent again right after itself reads as one
run: a keyed table takes the repeated rows as the upserts they are; a keyless table can't tell
them from rows its source holds twice, so it stops at the first row of a run equal to an earlier
row of the run (in the batch, or held by the table when the run continues from the batch before).
Canal/DTS INIT runs get their truncates from the Canal parser; only the keyless check is here
(`stop_at_repeated_reads`).

Where the changes' positions order them across channels (Qlik's `changeSequence`: `ordered`),
the runs of Kafka topic-partitions are also placed by the positions around them
(`reload_runs` module docstring): a stale run's reads are left out (but for keys a later
change of the batch sends partial, which they complete); a keyed table leaves out a
partition's rows before its kept run, as a keyless one does, except a delete of a key no kept
run reads again (it may delete an older load's row landed since); and an insert or
update at or below the table's load's start is left out in every batch (the load holds it).
"""

from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_COLUMN, OP_DELETE, OP_TRUNCATE, ORDER_COLUMN,
                                     PRESENT_COLUMN, SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN)
from mirrorspec.sources.delivery import (DELIVERY_COLUMN, KEYLESS_HINT, SNAPSHOT, STREAM, Marks,
                                         channel_of, repeats_land)
from mirrorspec.sources.reload_runs import (RELOAD_REPEATED, LoadFollower, Run, as_position,
                                           kept_runs, lost_change_error, reload_runs,
                                           stale_spans, truncate_before)
from mirrorspec.spark.publish.replace import held_rows, replace_keyless

_READ, _RUN, _COPY = "__read", "__run", "__copy"
_REREAD, _STRETCH = "__reread", "__stretch"


def is_read():
    """True for a full-load read: phase SNAPSHOT, no position, not a truncate."""
    delivery = F.col(DELIVERY_COLUMN)
    return ((delivery["phase"] == SNAPSHOT) & delivery["position"].isNull()
            & (F.col(OP_COLUMN) != OP_TRUNCATE))


RELOADS_STATE = "reloads"  # reader state: `follow_reloads`


def follow_reloads(spark, table: Any, changes: DataFrame, columns: Sequence[str], keyed: bool,
                   consumed: Sequence[str], state: dict[str, Any], reads: int,
                   ranks: dict[str, int] | None = None, restarted: bool = False,
                   ordered: bool = False, keys: Sequence[str] = ()
                   ) -> tuple[DataFrame, dict[str, Any] | None]:
    """`changes` with a truncate before each run of full-load reads that starts a new load
    (keyless: as the rows the landing zone can take; `reads`: how many the batch holds, 0
    skips the work), and what the reader state keeps under RELOADS_STATE (the loads followed
    per channel: `reload_runs.LoadFollower`). A table's runs are followed per channel (a Kafka
    topic-partition, or plain files), so a load spread over several topic-partitions gets
    one truncate, before the first of its runs. `ranks`: the files' order in the batch when it
    is not their names' (Arcion ranks its files by their first change). `restarted`: the
    batch's first reads start a new load whatever came before (a full-load file written again
    under a name already published). `ordered`: the changes' positions (`_delivery`, whose
    partition is the file's channel) order them across channels; `keys`: then the table's key
    columns. Raises SourceError at a keyless table's repeated read."""
    saved = (state.get("reader") or {}).get(RELOADS_STATE)
    if not consumed:
        return changes, saved or None
    follower = LoadFollower.from_state(saved)
    channels = {channel_of(file) for file in consumed}
    awaiting = follower.awaiting(channels) if ordered and not reads else []
    if awaiting:
        lowest = _lowest_changes(changes, awaiting)
        follower.changes_after({name: item[0] for name, item in lowest.items()},
                               {name: item[1:] for name, item in lowest.items()})
        _stop_at_lost_change(follower, table)
    if not reads or restarted:  # changes only, or a load written again
        follower.end_runs(channels)
    if not reads:
        return _after_start(changes, follower, ordered), follower.to_state()
    ranks = ranks or {}
    stretches = _stretches(changes, ranks, ordered)
    transitions = [stretch[:3] for stretch in stretches]
    published = any(b.get("sequence") for b in state.get("batches", []))
    positions = None
    if ordered:  # every channel's: one without a run of a new load is exposed to its truncate
        positions = Marks.from_state(state).positions(STREAM)
    runs = follower.follow(stretches, published, positions)
    _stop_at_lost_change(follower, table)
    changes = _after_start(changes, follower, ordered)
    if runs and not keyed:
        _stop_at_repeated_reads(spark, changes, table, columns, runs, ranks)
    cut = kept_runs(runs)
    if keyed:  # a feed's file names need not follow its order: Kafka partitions' do
        cut = {name: run for name, run in cut.items() if ordered and name}
    if cut and any(not run.continues for run in runs):
        # a channel's rows from before its last run are in that load (reads sort before the
        # batch's changes, so they would land again after it); a keyed table keeps a delete
        # of a key no kept run reads again
        changes = _leave_out_before(changes, transitions, cut, ranks, keys if keyed else ())
    if any(run.stale for run in runs):
        changes = _leave_out_stale(changes, transitions, runs, ranks, keys if keyed else ())
    start = truncate_before(runs)
    if start is not None:
        changes = changes.unionByName(_truncates(spark, changes, [start]))
        if not keyed:
            changes = replace_keyless(spark, changes, table, columns)
    return changes, follower.to_state()


def _lowest_changes(changes: DataFrame, channels: Sequence[str]) -> dict[str, tuple]:
    """The lowest change position of each of `channels` in the batch (its `_delivery`
    partition: `ordered`), with that change's file and line."""
    delivery = F.col(DELIVERY_COLUMN)
    lowest = F.min(F.struct(delivery["position"].alias("p"), F.col(SOURCE_FILE_COLUMN).alias("f"),
                            F.col(SOURCE_LINE_COLUMN).alias("l")))
    rows = (changes.where(delivery["partition"].isin(list(channels))
                          & (delivery["phase"] == STREAM) & delivery["position"].isNotNull())
            .groupBy(delivery["partition"]).agg(lowest).collect())
    return {row[0]: (as_position(row[1]["p"]), row[1]["f"], int(row[1]["l"])) for row in rows}


def _stop_at_lost_change(follower: LoadFollower, table: Any) -> None:
    """Raise the located stop for a landed change the table's load deletes
    (`reload_runs.LoadFollower.lost`)."""
    if follower.lost is not None:
        raise lost_change_error(follower.lost, table.unique_id)


def _after_start(changes: DataFrame, follower: LoadFollower, ordered: bool) -> DataFrame:
    """`changes` without the inserts and updates of Kafka partitions at or below the table's
    load's start (the load holds them; a delete there may still delete an older load's row)."""
    if not ordered or follower.start is None:
        return changes
    delivery = F.col(DELIVERY_COLUMN)
    start = F.array(*[F.lit(v).cast("bigint") for v in follower.start])
    held = ((delivery["partition"] != "") & (delivery["phase"] == STREAM)
            & delivery["position"].isNotNull() & (delivery["position"] <= start)
            & ~F.col(OP_COLUMN).isin(OP_DELETE, OP_TRUNCATE))
    return changes.where(~F.coalesce(held, F.lit(False)))


def _leave_out_before(changes: DataFrame, transitions: Sequence[tuple[str, int, bool]],
                      cut: dict[str, Run], ranks: dict[str, int], keys: Sequence[str]
                      ) -> DataFrame:
    """`changes` without each channel's rows before the run it keeps (`cut`); with `keys`
    (a keyed table), a delete there stays unless a kept run reads its key again."""
    before = _before_kept_runs(transitions, cut, ranks)
    if not keys:
        return changes.where(~before)
    # a key any kept run reads again (a topic partitioned at random sends it to any partition)
    kept_files = [file for channel, names in _channel_files(transitions).items()
                  if channel in cut for file in names]
    reread = (changes.where(is_read() & ~before & F.col(SOURCE_FILE_COLUMN).isin(kept_files))
              .select(*keys).distinct().withColumn(_REREAD, F.lit(True)))
    marked = changes.withColumn("__before", before).join(reread, list(keys), "left")
    stays = ~F.col("__before") | ((F.col(OP_COLUMN) == OP_DELETE) & F.col(_REREAD).isNull())
    return marked.where(stays).select(*changes.columns)


def _leave_out_stale(changes: DataFrame, transitions: Sequence[tuple[str, int, bool]],
                     runs: Sequence[Run], ranks: dict[str, int], keys: Sequence[str]
                     ) -> DataFrame:
    """`changes` without the reads of stale runs (`reload_runs.stale_spans`); with `keys`, a
    read stays whose key a later change of the batch sends partial (its columns come from it)."""
    files = _channel_files(transitions)
    place = _place(ranks)
    stale = F.lit(False)
    for run, end in stale_spans(runs):
        span = F.col(SOURCE_FILE_COLUMN).isin(files[run.channel]) & (
            place >= _start(run, ranks))
        if end is not None:
            span = span & (place < _start(end, ranks))
        stale = stale | span
    stale = stale & is_read()
    if not keys:
        return changes.where(~stale)
    partial = (changes.where(~is_read() & (F.col(OP_COLUMN) != OP_DELETE)
                             & F.col(PRESENT_COLUMN).isNotNull())
               .select(*keys).distinct().withColumn(_REREAD, F.lit(True)))
    marked = changes.withColumn("__stale", stale).join(partial, list(keys), "left")
    return (marked.where(~F.col("__stale") | F.col(_REREAD).isNotNull())
            .select(*changes.columns))


def _before_kept_runs(transitions: Sequence[tuple[str, int, bool]], kept: dict[str, Run],
                      ranks: dict[str, int]):
    """True for a row in a channel's files before the run its rows are kept from (`kept`,
    from `reload_runs.kept_runs`; False for truncates)."""
    files = _channel_files(transitions)
    before = F.lit(False)
    for channel, run in kept.items():
        before = before | (F.col(SOURCE_FILE_COLUMN).isin(files[channel])
                           & (_place(ranks) < _start(run, ranks)))
    return before & (F.col(OP_COLUMN) != OP_TRUNCATE)


def _channel_files(transitions: Sequence[tuple[str, int, bool]]) -> dict[str, list[str]]:
    """Each channel's files in the batch, sorted."""
    files: dict[str, set[str]] = {}
    for file, _, _ in transitions:
        files.setdefault(channel_of(file), set()).add(file)
    return {channel: sorted(names) for channel, names in files.items()}


def stop_at_repeated_reads(spark, changes: DataFrame, table: Any, columns: Sequence[str],
                           last_read: bool | None, published: bool) -> None:
    """For a keyless table whose reader writes its own truncates (Canal/DTS INIT runs): raise
    SourceError at the first read equal to an earlier read of its run, across the batch's
    files and against the rows the table holds when the batch's first run continues the
    batch before's (`last_read`: whether the batch before ended in a read)."""
    runs, _ = reload_runs(_transitions(changes, {}), last_read, published)
    if runs:
        _stop_at_repeated_reads(spark, changes, table, columns, runs, {})


def _transitions(changes: DataFrame, ranks: dict[str, int]) -> list[tuple[str, int, bool]]:
    """(file, line, is_read) of each file's first row and of each row whose kind differs
    from the row before it in its file, in the batch's file order. A truncate the reader
    wrote (Canal's before an INIT run) is not a read: it ends a run."""
    data = changes.select(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN, ORDER_COLUMN,
                          is_read().alias(_READ))
    before = F.lag(_READ).over(Window.partitionBy(SOURCE_FILE_COLUMN)
                               .orderBy(SOURCE_LINE_COLUMN, ORDER_COLUMN))
    flips = (data.withColumn("__before", before)
             .where(F.col("__before").isNull() | (F.col("__before") != F.col(_READ)))
             .select(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN, _READ).distinct().collect())
    return sorted(((r[0], int(r[1]), bool(r[2])) for r in flips),
                  key=lambda t: (ranks.get(t[0], len(ranks)), t[0], t[1], t[2]))


def _stretches(changes: DataFrame, ranks: dict[str, int], ordered: bool) -> list[tuple]:
    """`_transitions`, each with the lowest and highest position of the changes of the stretch
    it starts (up to the next transition of its file) when `ordered` (`LoadFollower.follow`)."""
    if not ordered:
        return list(_transitions(changes, ranks))
    delivery = F.col(DELIVERY_COLUMN)
    position = F.when((delivery["phase"] == STREAM) & ~is_read(), delivery["position"])
    data = changes.select(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN, ORDER_COLUMN,
                          is_read().alias(_READ), position.alias("__position"))
    in_file = Window.partitionBy(SOURCE_FILE_COLUMN).orderBy(SOURCE_LINE_COLUMN, ORDER_COLUMN)
    before = F.lag(_READ).over(in_file)
    flip = (before.isNull() | (before != F.col(_READ))).cast("int")
    rows = (data.withColumn(_STRETCH, F.sum(flip).over(
                in_file.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
            .groupBy(SOURCE_FILE_COLUMN, _STRETCH)
            .agg(F.min(SOURCE_LINE_COLUMN), F.max(F.col(_READ).cast("int")),
                 F.min("__position"), F.max("__position"))
            .collect())
    return sorted(((r[0], int(r[2]), bool(r[3]), as_position(r[4]), as_position(r[5])) for r in rows),
                  key=lambda t: (ranks.get(t[0], len(ranks)), t[0], t[1], t[2]))


def _truncates(spark, changes: DataFrame, starts: Sequence[Run]) -> DataFrame:
    """A truncate row just before the first row of each run (its `_order` with the last field
    one less)."""
    rows = []
    for run in starts:
        first = (changes.where((F.col(SOURCE_FILE_COLUMN) == run.file)
                               & (F.col(SOURCE_LINE_COLUMN) == run.line) & is_read())
                 .orderBy(ORDER_COLUMN).limit(1).collect()[0])
        order = list(first[ORDER_COLUMN])
        order[-1] = (order[-1] or 0) - 1
        values: dict[str, Any] = {name: None for name in changes.columns}
        values.update({OP_COLUMN: OP_TRUNCATE, ORDER_COLUMN: tuple(order),
                       SOURCE_FILE_COLUMN: run.file, SOURCE_LINE_COLUMN: run.line,
                       DELIVERY_COLUMN: first[DELIVERY_COLUMN]})
        rows.append(tuple(values[name] for name in changes.columns))
    return spark.createDataFrame(rows, changes.schema)


def _place(ranks: dict[str, int]):
    """A row's place in the feed: its file's rank (when the files' names don't order them),
    file and line."""
    file_rank = F.lit(0)
    if ranks:
        pairs = [item for file, r in ranks.items() for item in (F.lit(file), F.lit(r))]
        file_rank = F.coalesce(F.create_map(*pairs)[F.col(SOURCE_FILE_COLUMN)],
                               F.lit(len(ranks)))
    return F.struct(file_rank.alias("r"), F.col(SOURCE_FILE_COLUMN).alias("f"),
                    F.col(SOURCE_LINE_COLUMN).alias("l"))


def _start(run: Run, ranks: dict[str, int]):
    """The place of a run's first row (`_place`)."""
    return F.struct(F.lit(ranks.get(run.file, len(ranks)) if ranks else 0).alias("r"),
                    F.lit(run.file).alias("f"), F.lit(run.line).cast("bigint").alias("l"))


def _stop_at_repeated_reads(spark, changes: DataFrame, table: Any, columns: Sequence[str],
                            runs: Sequence[Run], ranks: dict[str, int]) -> None:
    """Raise SourceError at the first read equal to an earlier read of its run: in the batch,
    or among the rows the table holds when the run continues one of the batch before (they
    are that run's rows, and other channels' rows of its load). Nothing to check when the table's equal rows land
    (`keyless_repeats: land`)."""
    if repeats_land(table.source.options):
        return
    place = _place(ranks)
    run_of = F.lit(-1)
    for index, run in enumerate(runs):
        run_of = F.when(place >= _start(run, ranks), F.lit(index)).otherwise(run_of)
    reads = (changes.where(is_read()).withColumn("__place", place)
             .withColumn(_RUN, run_of).where(F.col(_RUN) >= 0))
    copies = Window.partitionBy(_RUN, *columns).orderBy("__place")
    repeated = (reads.withColumn(_COPY, F.row_number().over(copies)).where(F.col(_COPY) == 2)
                .orderBy("__place").limit(1).collect())
    continuing = [index for index, run in enumerate(runs) if run.continues]
    if not repeated and continuing:
        held = held_rows(spark, table, columns)
        if held is not None:
            held = held.select(*[F.col(c).cast(changes.schema[c].dataType).alias(c)
                                 for c in columns]).distinct()
            first = reads.where(F.col(_RUN).isin(continuing))
            match = [first[c].eqNullSafe(held[c]) for c in columns]
            repeated = (first.join(held, match, "left_semi")
                        .orderBy("__place").limit(1).collect())
    if repeated:
        raise SourceError(RELOAD_REPEATED, file=repeated[0][SOURCE_FILE_COLUMN],
                          line=repeated[0][SOURCE_LINE_COLUMN], hint=KEYLESS_HINT)
