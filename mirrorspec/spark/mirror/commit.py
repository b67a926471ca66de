"""The one Delta commit of a table run: the batch's changes folded into ONE commit (a MERGE, or
an append for insert-only batches) that also carries the progress (`txn` action plus
`userMetadata`), with the table properties that commit decides (column mapping, deletion
vectors, change data feed), and what a failed read says about the batch's files."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.base import files as fsmod
from mirrorspec.base.console import Console
from mirrorspec.base.faults import crash_point
from mirrorspec.landing import layout as landing
from mirrorspec.openmirroring import mirroring
from mirrorspec.progress.mirror import MirrorRecord, TableState, read_state, write_state_copy
from mirrorspec.progress.snapshot import SnapshotFacts
from mirrorspec.spark.mirror import batch as reader
from mirrorspec.spark.mirror import fold, pruning, staged_source
from mirrorspec.spark.mirror.targets import MirrorOptions, MirrorTarget, TableOutcome
from mirrorspec.spark.platform import delta, failures
from mirrorspec.spark.platform.session import session_conf

# Characters Delta refuses in column names unless the table maps columns by name.
_DELTA_NAME_CHARS = re.compile(r"[ ,;{}()\n\t=]")

_short = failures.short


class Conflict(Exception):
    """Another writer committed first: re-read the table's state and try again."""


class UnreadableFile(Exception):
    """The commit failed reading one of the batch's files (a codec Spark lacks, a corrupt
    page the row checks didn't touch): `bad` names it; the files before it can be applied."""

    def __init__(self, bad: tuple):
        super().__init__(bad[2])
        self.bad = bad


def recorded(state: TableState, table: str) -> MirrorRecord:
    """The table's latest engine record, or an empty one before its first commit."""
    return state.record or MirrorRecord(table=table, mode="", files=[])


@dataclass(frozen=True)
class CheckedBatch:
    """What one attempt of a table run read and checked, ready to commit."""

    changes: DataFrame          # the change rows of the pending files read (`batch.read_changes`)
    cutoff: int                 # the files in order before it are applied
    applied: list[landing.LandingFile]  # those files
    stats: dict[int, Any]       # per file order: its rows and keyed rows (`TableRun._validate`)
    union: list[T.StructField]  # the columns of the table with the batch's
    metadata: mirroring.TableMetadata
    state: TableState           # the table's progress before this commit
    folder_id: str              # the landing folder's identity
    pending: landing.Pending    # the folder's files as picked for this pass


class DeltaCommit:
    """The commit half of `table_run.TableRun` (a mixin): it reads the run's target, options,
    console, filesystems, per-table session and the table's latest facts, and fills in the
    run's outcome."""

    spark: Any
    target: MirrorTarget
    options: MirrorOptions
    console: Console
    landing_zone: str
    lfs: Any
    wfs: Any
    outcome: TableOutcome
    app_id: str
    _late: set[str]
    _committed: int | None
    _facts: SnapshotFacts | None
    _table_columns: set[str]

    def _session(self) -> Any:
        raise NotImplementedError  # the run's per-table session (`TableRun._session`)

    def _unreadable_file(self, changes, files) -> tuple | None:
        """The first of the batch's `files` Spark fails to read in full on its own (every
        column, so no data page is skipped), as a `BadFile` with that read's own error; None
        when each reads fine, so the failure was not the files' (a file gone meanwhile was
        moved by another process: re-read the table)."""
        every_column = F.xxhash64(*[reader.col(c) for c in changes.columns])
        for order in range(len(files)):
            try:
                # max, not sum: a sum of 64-bit hashes overflows under ANSI mode (Spark 4's
                # default), which made every good file look unreadable
                (changes.filter(F.col(reader.FILE_ORDER) == order)
                 .agg(F.max(every_column)).collect())
            except Exception as exc:  # noqa: BLE001 - any read error marks this file as the bad one
                self._unless_batch_moved_away(files)
                return (order, None, f"unreadable file: {_short(exc)}", "BadFile")
        return None

    def _unless_batch_moved_away(self, files) -> None:
        """Raise `Conflict` when one of `files` is gone: another `mirror` process applied and
        moved it since this one listed the folder, so the failure says nothing about it."""
        for file in files:
            if not self.lfs.exists(file.path):
                raise Conflict(f"{file.name} was moved away by another process")

    # -- the one commit
    def _commit(self, checked: CheckedBatch) -> None:
        changes, cutoff, applied, stats = (checked.changes, checked.cutoff, checked.applied,
                                           checked.stats)
        union, metadata, state, pending = (checked.union, checked.metadata, checked.state,
                                           checked.pending)
        folder_id = checked.folder_id
        target = self.target
        last = recorded(state, target.unique_id)
        columns = [f.name for f in union]
        keys = list(metadata.key_columns)
        rows_read = sum(int(stats[o]["rows"]) for o in range(cutoff) if o in stats)
        keyed_rows = sum(int(stats[o]["keyed"] or 0) for o in range(cutoff) if o in stats)
        size = sum(f.size for f in applied)
        if metadata.last_update_time_detection:
            txn_version = last.batch + 1
        else:
            txn_version = int(applied[-1].sequence)
        attempt = uuid.uuid4().hex
        record = MirrorRecord(
            table=target.unique_id,
            mode="time" if metadata.last_update_time_detection else "sequence",
            files=[f.name for f in applied],
            # never a late file: no commit applied it, and it is reported every pass
            carry=[f.name for f in pending.applied_present if f.name not in self._late],
            # each file's version as listed: one changed after it was applied is reported
            stats={**{f.name: last.stats.get(f.name) or landing.file_stats(f)
                      for f in pending.applied_present if f.name not in self._late},
                   **{f.name: landing.file_stats(f) for f in applied}},
            sequence=applied[-1].sequence,
            keys=list(metadata.key_columns),
            batch=last.batch + 1,
            watermark=[applied[-1].mtime, applied[-1].name],
            folder_id=folder_id,
            landing_zone=self.landing_zone,
            landing_path=fsmod.normalize(target.landing_path),
            rows=rows_read,
            bytes=size,
            processed_rows=last.processed_rows + rows_read,
            processed_bytes=last.processed_bytes + size,
            attempt=attempt,
        )
        commit = delta.CommitOptions(self.app_id, txn_version, record.user_metadata())
        session = self._session()
        batch = changes.filter(F.col(reader.FILE_ORDER) < cutoff).drop(reader.PROBLEM)
        new_columns = [f for f in union if f.name.lower() not in self._table_columns]
        self.console.info(f"{target.unique_id}: applying {len(applied)} file(s), "
                          f"{rows_read} change row(s)", table=target.unique_id,
                          files=len(applied), rows=rows_read)
        defaults: dict[str, str] = {}  # Delta's defaults for a table this commit creates
        try:
            if any(_DELTA_NAME_CHARS.search(f.name) for f in new_columns):
                defaults.update(self._keep_column_names(session, state.exists))
            defaults.update(self._choose_deletion_vectors(session, state.exists, size))
            defaults.update(self._switch_change_data_feed(session, state.exists))
            if state.exists and keyed_rows and new_columns:
                delta.add_columns(session, target.delta_path, new_columns)
            crash_point("before_commit", target.unique_id)
            if not keyed_rows or not state.exists:
                if keyed_rows:
                    data = fold.rows_for_empty_table(fold.fold_changes(batch, columns, keys),
                                                     columns)
                else:
                    data = batch.select(*[reader.col(c) for c in columns])
                if not state.exists:
                    # rows that went through the fold were shuffled by key hash: never in order
                    in_order = not keyed_rows and pruning.in_key_order(
                        applied, metadata.key_columns, union)
                    data = pruning.initial_layout(data, metadata.key_columns, size, in_order)
                with session_conf(session, defaults):
                    (data.write.format("delta").mode("append")
                     .options(**commit.writer_options())
                     .option("mergeSchema", "true")
                     .save(target.delta_path))
            else:
                conf = commit.session_conf()
                bounds = pruning.key_range(applied, metadata.key_columns, union)
                source = fold.fold_changes(batch, columns, keys)
                known = self._facts.size_bytes if self._facts is not None else None
                staged = staged_source.stage(session, self.wfs, target.delta_path, source,
                                             f"{txn_version:020d}-{attempt}", known)
                if staged is not None:
                    conf.update(staged.conf)
                    source = staged.frame
                conf.update(fold.small_merge_conf(known, size))
                try:
                    with session_conf(session, conf):
                        fold.run_merge(session, target.delta_path, source, columns, keys,
                                       prune=bounds.condition() if bounds else None)
                finally:
                    staged_source.remove(self.wfs, staged)
                staged_source.remove_stale(self.wfs, target.delta_path)
        except Exception as exc:
            self._unless_batch_moved_away(applied)
            if delta.is_conflict(exc):
                raise Conflict(_short(exc)) from None
            bad = self._unreadable_file(batch, applied)
            if bad is not None:
                raise UnreadableFile(bad) from None
            raise
        crash_point("after_commit", target.unique_id)
        after = read_state(self.wfs, target.delta_path, self.app_id)
        if after.record is None or after.record.attempt != attempt:
            raise Conflict(f"txn version {txn_version} of {self.app_id} was committed by "
                            "another writer")
        self._committed = after.version
        write_state_copy(self.wfs, target.delta_path, after)
        metrics = after.metrics
        if after.operation == "MERGE":
            self.outcome.rows_inserted = int(metrics.get("numTargetRowsInserted", 0))
            self.outcome.rows_updated = int(metrics.get("numTargetRowsUpdated", 0))
            self.outcome.rows_deleted = int(metrics.get("numTargetRowsDeleted", 0))
        else:
            self.outcome.rows_inserted = int(metrics.get("numOutputRows", 0))
        self.outcome.files_applied = [f.name for f in applied]
        self.outcome.delta_version = after.version
        self.outcome.processed_rows = record.processed_rows
        self.outcome.processed_bytes = record.processed_bytes
        self.console.info(
            f"{target.unique_id}: committed version {after.version}: "
            f"+{self.outcome.rows_inserted} inserted, {self.outcome.rows_updated} updated, "
            f"{self.outcome.rows_deleted} deleted", table=target.unique_id,
            version=after.version)

    def _keep_column_names(self, session, exists: bool) -> dict[str, str]:
        """Column names with a space or one of `,;{}()=` (which producers of SQL Server tables
        write) are stored through Delta's column mapping, switched on for this table only: the
        session default (returned) for the commit that creates the table, else the property."""
        if not exists:
            return {delta.COLUMN_MAPPING_DEFAULT: "name"}
        if self._facts is None:
            delta.map_column_names(session, self.target.delta_path)
        elif (self._facts.property(delta.COLUMN_MAPPING_PROPERTY) or "").lower() != "name":
            delta.set_property(session, self.target.delta_path, delta.COLUMN_MAPPING_PROPERTY,
                               "name")
        return {}

    def _choose_deletion_vectors(self, session, exists: bool,
                                 batch_bytes: int) -> dict[str, str]:
        """Deletion vectors for this commit (docs/readers.md): the table's `deletion_vectors:`
        switch when it has one, else by size — off while the table (with this batch) is under
        `delta.AUTO_DELETION_VECTORS_BYTES`, where rewriting the few files a batch touches costs
        less than Delta's vector jobs, and switched on for good once it reaches it. Set as the
        session default when this commit creates the table, else as the table property when it
        differs (existing vectors stay until `mirrorspec maintain` purges them). Returns the
        session default for the commit that creates the table."""
        forced = self.target.deletion_vectors
        path = self.target.delta_path
        facts = self._facts if exists else None
        current = (facts.property(delta.DELETION_VECTORS_PROPERTY) or "").lower() \
            if facts is not None else None
        if forced is None:
            if current == "true":
                return {}  # on already: automatic mode never switches vectors off
            table_bytes = 0
            if exists:
                table_bytes = facts.size_bytes if facts is not None and \
                    facts.size_bytes is not None else delta.size_in_bytes(session, path)
            enabled = delta.auto_deletion_vectors(table_bytes + batch_bytes)
            if exists and not enabled:
                return {}
        else:
            enabled = forced
        value = "true" if enabled else "false"
        if not exists:
            return {delta.DELETION_VECTORS_DEFAULT: value}
        if facts is None:
            delta.set_deletion_vectors(session, path, enabled)
        elif current != value:
            delta.set_property(session, path, delta.DELETION_VECTORS_PROPERTY, value)
        return {}

    def _switch_change_data_feed(self, session, exists: bool) -> dict[str, str]:
        """Delta's change data feed as the table's switch says (`delta.switch_change_data_feed`):
        the plan's, else the project's or `--change-data-feed`'s; none leaves the table as is."""
        wanted = self.target.change_data_feed
        if wanted is None:
            wanted = dict(self.options.feeds).get(self.target.unique_id,
                                                  self.options.change_data_feed)
        current = None
        if exists and wanted is not None:
            current = self._facts.property(delta.CHANGE_DATA_FEED_PROPERTY) \
                if self._facts is not None else \
                delta.table_property(session, self.target.delta_path,
                                     delta.CHANGE_DATA_FEED_PROPERTY)
        defaults = delta.switch_change_data_feed(session, self.target.delta_path, wanted,
                                                 exists, current)
        if exists and wanted is not None and (current or "false").lower() != str(wanted).lower():
            self.console.info(f"{self.target.unique_id}: " + (
                "change data feed switched on: it starts with this pass's commit" if wanted else
                "change data feed switched off: this pass's commit and later ones carry none"),
                table=self.target.unique_id)
        return defaults

