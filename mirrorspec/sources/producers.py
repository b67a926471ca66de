"""Delivery semantics by producer: what each feed's producer may do to its stream, and what
mirrorspec does with each behaviour (the rules themselves live in `sources.delivery`, the
reload runs in `sources.reload_runs`).

`PRODUCERS` is the one home of the table; docs/sources.md's "Delivery semantics" table is
generated from it (`semantics_markdown`; a test keeps the page equal to it), and a reader asks
`redelivers(type)` whether its producer may send an event again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from mirrorspec.sources.delivery import KEYLESS_REPEATS

BEHAVIOURS: tuple[tuple[str, str], ...] = (
    ("redeliver", "re-sends a suffix after a restart"),
    ("snapshot_restart", "restarts a snapshot"),
    ("dump_repeat", "repeats events within one dump or file"),
    ("partial_images", "sends partial row images"),
    ("refresh", "bootstraps or refreshes a whole table"),
    ("tombstones", "sends tombstones"),
)


@dataclass(frozen=True)
class Behaviour:
    """What a producer may do (`does`; empty: it never does) and what mirrorspec does with it.
    `handled` is True only when the mirrored table then equals the source in every case the
    producer documents; False says `handling` describes what happens today. `repeats_stop`:
    `handling` has a keyless table stop at an event equal to one already sent, which
    `keyless_repeats: land` turns into another row."""

    does: str
    handling: str = ""
    handled: bool = True
    # a keyless table stops at an event equal to one already sent, unless its source.options
    # say `keyless_repeats: land` (the table's row then names the setting)
    repeats_stop: bool = False


@dataclass(frozen=True)
class ProducerDelivery:
    """One feed type's producer: where its events sit (`position`) and its behaviours."""

    source_type: str
    producer: str
    position: str
    behaviours: Mapping[str, Behaviour] = field(default_factory=dict)

    def behaviour(self, name: str) -> Behaviour:
        return self.behaviours.get(name, Behaviour(""))

    @property
    def redelivers(self) -> bool:
        """Whether the producer may send an event it already sent (any way)."""
        return any(self.behaviour(n).does for n in ("redeliver", "snapshot_restart",
                                                   "dump_repeat", "refresh"))


_NEVER = Behaviour("")
_TOMBSTONES_SKIPPED = Behaviour("a keyed Kafka topic may hold null values (compaction)",
                                "skipped (a staged message without a value is no change)")
_KEYED_UPSERTS = ("keyed inserts land as upserts (4), so a key never lands twice; not yet "
                  "filtered by position: a re-sent change older than a later change of its "
                  "key is applied again until the re-sent suffix has arrived, and a keyless "
                  "table's re-sent rows land again")

_KEYLESS_REPLACED = ("a keyless table gets the rows it lacks, or stops at the load's first row "
                     "when it holds a row the load lacks (declare key_columns)")
_SAME_FILE = ("within a file, a message at a position the file already sent is dropped when it "
              "equals the first copy; one that goes back to a position the file never sent is "
              "dropped when another file of the batch (or an earlier batch) sent it, else the "
              "table stops at it")
_NO_POSITION = ("keyed inserts land as upserts (4) and a re-sent suffix replays in order, so "
                "the table is the source's once the suffix has arrived (a change re-sent before "
                "a later change of its key is applied again until then); a keyless table's "
                "rows land as sent, as Fabric lands inserts: one equal to a row its file sent "
                "before stops the table, one re-sent into a later file lands again (declare "
                "key_columns)")

PRODUCERS: dict[str, ProducerDelivery] = {p.source_type: p for p in (
    ProducerDelivery(
        "debezium", "Debezium (Kafka Connect, Debezium Server)",
        "per Kafka topic-partition and connector stream (MySQL `server_id`, Vitess shard): "
        "the connector's source position (`debezium/positions.py`)",
        {"redeliver": Behaviour(
            "after a crash, re-sends what followed the last committed offset (at-least-once)",
            "events at or below the partition's highest applied position are dropped (a "
            "position shared by several events, such as a snapshot's, is applied again on a "
            "keyed table, which is harmless); Postgres `lsn` without `sequence` orders one row's "
            "changes only: checked per key within a file and against snapshots and truncates "
            "across batches, other re-sent changes apply again as the upserts they were; a "
            "keyless table without a stream position stops", repeats_stop=True),
         "snapshot_restart": Behaviour(
             "a snapshot interrupted by a restart starts again (`op: r` re-sent)",
             "snapshot reads land as upserts; reads at or below an applied streaming position "
             "are dropped; a keyless table's identical reads at one position stop the table",
             repeats_stop=True),
         "dump_repeat": Behaviour(
             "a topic dump read from the beginning repeats events (the position goes back)",
             "within a file, an event below the file's position is dropped when it equals one "
             "the file sent at that position, else the table stops at it"),
         "partial_images": Behaviour(
             "unchanged TOAST / LOB columns as `unavailable.value.placeholder` (text, bytes, "
             "arrays of any element type, hstore); REPLICA IDENTITY DEFAULT: no or key-only "
             "`before`; MongoDB updates without the full document",
             "completed from the event's own `before`, the batch's earlier changes, the "
             "mirrored row; the table stops at the event when no place has the value"),
         "refresh": Behaviour(
             "incremental and blocking (ad hoc) snapshots re-read a table (`op: r`, "
             "`snapshot: incremental`) while streaming",
             "reads land as upserts in stream order; Debezium never deletes rows with a "
             "snapshot, so neither does mirrorspec"),
         "tombstones": Behaviour("a null value after each delete (`tombstones.on.delete`)",
                                 "skipped")}),
    ProducerDelivery(
        "qlik_replicate", "Qlik Replicate (Kafka target)",
        "`changeSequence` (one per change; per Kafka topic-partition of a staged or sink file)",
        {"redeliver": Behaviour("re-sends changes after a task resume, with their "
                                "`changeSequence`",
                                "changes at or below the highest applied `changeSequence` are "
                                "dropped, in a later file, batch or offset"),
         "snapshot_restart": Behaviour("a full load interrupted by a resume loads the table "
                                       "again (REFRESH rows, no `changeSequence`)",
                                       "REFRESH rows right after REFRESH rows read as one load: "
                                       "a keyed table takes the repeat as upserts; a keyless "
                                       "table stops at the first row equal to an earlier row "
                                       "of the load (in the batch, or held by the table when "
                                       "the load began in an earlier batch)",
                                       repeats_stop=True),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  "within a file, a change whose `changeSequence` the file "
                                  "already sent is dropped; `changeSequence` orders the batch, "
                                  "so one going back to a sequence the file did not send is "
                                  "applied in its place"),
         "partial_images": Behaviour("`columnMask` leaves unchanged columns out",
                                     "completed from the batch and the mirrored row, else the "
                                     "table stops at the message"),
         "refresh": Behaviour("a table reload sends its full load again (`REFRESH` rows) "
                              "after its changes",
                              "a run of REFRESH rows that follows changes is a new load and "
                              "replaces the table (a truncate before its first row: rows the "
                              "reload no longer has are deleted; " + _KEYLESS_REPLACED
                              + "). Where a "
                              "table's messages span several Kafka topic-partitions, each "
                              "partition sends its own run of a load: runs are counted per "
                              "partition (load generations), the first run of a new load gets "
                              "the one truncate and the other partitions' runs of it, in the "
                              "same batch or later ones, add their rows; until every "
                              "partition's run has arrived the rows of the partitions still to "
                              "come are missing. REFRESH rows carry no position, but "
                              "`changeSequence` places each partition's run between its "
                              "partition's change before it and the one after it: a run after "
                              "a change made once the table's load had begun is a new load "
                              "whatever the counts say; a run followed by a change from before "
                              "the load began is an older load's, and its rows are left out; a "
                              "partition's changes before its run in the batch don't apply "
                              "again after it (but a delete of a key no run reads); an insert "
                              "or update from before the load's start is left out in later "
                              "batches too. What the positions can't place: a partition with "
                              "no change between two loads sends them as one run, and one that "
                              "got no row of a reload has no run of it, so its run counted a "
                              "load behind that arrives in an earlier batch than every other "
                              "partition's has its rows deleted by the truncate that comes "
                              "with theirs; a change made after the reload began in a "
                              "partition with no run of it, arriving in an earlier batch than "
                              "every run of the reload, stops the table at a located error "
                              "naming `run --full-refresh` once a change after a run of the "
                              "reload shows the reload began before it (before the truncate "
                              "lands, when that change comes with the run), and is otherwise "
                              "deleted by its truncate (the mirror keeps no per-row position to "
                              "spare it); a change from before the "
                              "reload, or an older load's run, that nothing of its own "
                              "partition in the batch places lands, so a row the source lost "
                              "without a captured change stays until the next reload. Files "
                              "not named by Kafka topic-partition don't order the feed: they "
                              "are followed by counts alone"),
         "tombstones": _TOMBSTONES_SKIPPED}),
    ProducerDelivery(
        "arcion", "Arcion Replicant (S3 target)",
        "the realtime change's `cursor` (`timestamp`, `dscId`, `mutId`)",
        {"redeliver": Behaviour("after a restart, writes a realtime file again under the next "
                                "name (same operations, same cursors)",
                                "changes at or below the highest applied cursor, or a cursor "
                                "the file already sent, are dropped; a keyless table whose "
                                "cursors lack these fields stops", repeats_stop=True),
         "snapshot_restart": Behaviour("a restarted snapshot writes its files again",
                                       "snapshot rows right after snapshot rows read as one "
                                       "snapshot: a keyed table takes the repeat as upserts; a "
                                       "keyless table stops at the first row equal to an "
                                       "earlier row of the snapshot (in the batch, or held by "
                                       "the table when it began in an earlier batch)",
                                       repeats_stop=True),
         "refresh": Behaviour("a new snapshot after realtime changes (Replicant run again in "
                              "snapshot or full mode)",
                              "snapshot rows after the table's changes are a new snapshot and "
                              "replace the table (a truncate before its first row; "
                              + _KEYLESS_REPLACED + ")"),
         "partial_images": Behaviour("`Exists_Val` 0/2: a column not sent",
                                     "completed from the batch and the mirrored row, else the "
                                     "table stops at the change")}),
    ProducerDelivery(
        "aws_dms", "AWS DMS (S3 target)",
        "the `change_sequence_column` (a column a transformation rule fills with "
        "`$AR_H_CHANGE_SEQ`: one per change), else the `timestamp_column` (TimestampColumnName: "
        "the source commit time, shared by a transaction's rows); CSV and Parquet alike",
        {"redeliver": Behaviour("a resumed task may write changes again in a new CDC file",
                                "with `change_sequence_column`: rows at or below the highest "
                                "applied sequence, or at a sequence the batch already sent, are "
                                "dropped, a keyless table's too; with `timestamp_column` only: "
                                "rows below the highest applied commit time are dropped, rows "
                                "at it apply again (a keyless table's equal rows there stop "
                                "it); without either, keyed rows land as upserts and a keyless "
                                "table's rows as sent (one equal to a row its file sent before "
                                "stops it)", False, repeats_stop=True),
         "partial_images": Behaviour("LOB columns not supplied (`CsvNoSupValue`)",
                                     "completed from the batch and the mirrored row, else the "
                                     "table stops at the row"),
         "refresh": Behaviour("a table reload writes its full load again (after "
                              "TargetTablePrepMode: DROP_AND_CREATE empties the table's folder "
                              "and the new load's files are numbered from `LOAD00000001` "
                              "again)",
                              "full-load rows after the table's CDC rows are a new load and "
                              "replace the table (a truncate before its first row; "
                              + _KEYLESS_REPLACED + "); a full-load file written again under a "
                              "name already published (its size, time or version tag changed) "
                              "is read again and starts a new load, whatever came before it; "
                              "full-load rows right after full-load rows are one load: a "
                              "keyless table stops at a row equal to an earlier row of the load",
                              repeats_stop=True)}),
    ProducerDelivery(
        "csv", "any exporter of full snapshots (CSV)", "the snapshot (file or folder) order",
        {"refresh": Behaviour("every file is a whole snapshot",
                              "the change set against the previous snapshot is landed"),
         "redeliver": Behaviour("an exporter may write the same snapshot again",
                                "an unchanged snapshot lands no change")}),
    ProducerDelivery(
        "parquet", "any exporter of full snapshots (Parquet)", "the snapshot order",
        {"refresh": Behaviour("every snapshot is a whole table",
                              "the change set against the previous snapshot is landed"),
         "redeliver": Behaviour("an exporter may write the same snapshot again",
                                "an unchanged snapshot lands no change")}),
    ProducerDelivery(
        "goldengate", "Oracle GoldenGate for Big Data (JSON formatter)",
        "per Kafka topic-partition: `pos` (trail sequence number and RBA, one per operation; "
        "compared as a number beyond 64 bits)",
        {"redeliver": Behaviour("the Kafka handler re-sends what followed the Replicat's last "
                                "checkpoint after a restart",
                                "messages at or below the partition's highest applied `pos` "
                                "are dropped, a keyless table's too"),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  _SAME_FILE),
         "partial_images": Behaviour("compressed updates carry only changed columns",
                                     "completed from the message's own `before`, the batch's "
                                     "earlier changes and the mirrored row, else the table "
                                     "stops at the message"),
         "tombstones": _TOMBSTONES_SKIPPED}),
    ProducerDelivery(
        "canal", "Alibaba Canal / DTS (FlatMessage)", "none: FlatMessage has no binlog "
        "position (`es` is the statement's start time, shared and in seconds; `ts` the time "
        "the message was built, new on a re-send; `id` the batch number, restarting with "
        "Canal), so a keyless table relies on the within-file rule",
        {"redeliver": Behaviour("re-sends after a restart (at-least-once)", _NO_POSITION,
                                False, repeats_stop=True),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  _NO_POSITION, False, repeats_stop=True),
         "refresh": Behaviour("DTS writes a table's full load as `INIT` messages, again when "
                              "a task restarts from the full load",
                              "a run of `INIT` messages replaces the table (a truncate before "
                              "its first row, then its rows as upserts; " + _KEYLESS_REPLACED
                              + "); a load run again with no other "
                              "change of the table between reads as one load: a keyed table "
                              "takes it as upserts, a keyless table stops at the first load row "
                              "equal to an earlier row of the load (in the batch, or held by "
                              "the table when the load began in an earlier batch)",
                              repeats_stop=True),
         "tombstones": _TOMBSTONES_SKIPPED}),
    ProducerDelivery(
        "maxwell", "Maxwell's daemon", "per Kafka topic-partition and `server_id` (else the "
        "binlog's base name): `position` (binlog file and offset) and `xoffset`",
        {"redeliver": Behaviour("re-sends from its stored position after a restart",
                                "rows at or below the partition's highest applied position are "
                                "dropped; without `xoffset` the rows of one binlog event share "
                                "a position: re-applied as upserts (keyed), a keyless table's "
                                "stop; a keyless table's rows without `position` land as "
                                "sent (one equal to a row its file sent before stops the "
                                "table; a re-send into a later file lands again: enable "
                                "output_binlog_position or declare key_columns)",
                                repeats_stop=True),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  _SAME_FILE),
         "refresh": Behaviour("`maxwell-bootstrap` re-reads a table (bootstrap-start, "
                              "bootstrap-insert…, bootstrap-complete)",
                              "a bootstrap replaces the table (a truncate at "
                              "`bootstrap-start`, its rows as upserts, held back until "
                              "`bootstrap-complete`); a keyless table gets the rows it lacks, "
                              "or stops at the `bootstrap-start` when it holds a row the "
                              "bootstrap lacks (declare key_columns)"),
         "tombstones": _TOMBSTONES_SKIPPED}),
)}


_REPEATS_LAND = (f". Where a keyless table stops at a row equal to one already sent, "
                 f"`source.options.{KEYLESS_REPEATS}: land` lands the row as another row instead "
                 "(a re-sent row may then be held twice)")


def producer(source_type: str) -> ProducerDelivery:
    """The delivery semantics of a feed type (one with no behaviours when unknown)."""
    return PRODUCERS.get(source_type) or ProducerDelivery(source_type, source_type, "none")


def redelivers(source_type: str) -> bool:
    """Whether a feed type's producer may send an event again."""
    return producer(source_type).redelivers


def semantics_markdown() -> str:
    """The delivery-semantics table of docs/sources.md (a test keeps the page equal to it)."""
    lines = ["| producer (`type`) | behaviour | what the producer may do | what mirrorspec does |",
             "|---|---|---|---|"]
    for item in PRODUCERS.values():
        for name, title in BEHAVIOURS:
            behaviour = item.behaviour(name)
            if not behaviour.does:
                continue
            handling = behaviour.handling if behaviour.handled else \
                f"**not handled yet**: {behaviour.handling}"
            if behaviour.repeats_stop:
                handling += _REPEATS_LAND
            lines.append(f"| {item.producer} (`{item.source_type}`) | {title} | "
                         f"{behaviour.does} | {handling} |")
    return "\n".join(lines) + "\n"


__all__ = ["BEHAVIOURS", "Behaviour", "PRODUCERS", "ProducerDelivery", "producer", "redelivers",
           "semantics_markdown"]
