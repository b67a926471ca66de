"""The mirroring engine: apply a landing zone to Delta tables, exactly once, as Fabric does.

Per table and run: list the folder, pick the pending files (sequence or modification time), read
them in one DataFrame, stop at the first bad file, fold the good ones into ONE Delta commit (a
MERGE, or an append for insert-only batches) that also carries the progress (`txn` action plus
`userMetadata`), then move the processed files to `_ProcessedFiles/` (the last one stays).
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import re
import threading
import time
import uuid
import weakref
from mirrorspec.base.interrupts import worker_pool
from dataclasses import dataclass, field, replace

from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.console import Console, NullConsole
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base.faults import crash_point
from mirrorspec.base.logfile import log_exception
from mirrorspec.spark.mirror import decompressed, fold, pruning, batch as reader, staged_source
from mirrorspec.spark.platform import failures
from mirrorspec.landing import layout as landing
from mirrorspec.landing import processed
from mirrorspec.base import files as fsmod
from mirrorspec.spark.platform import delta, hadoop_fs
from mirrorspec.spark.platform.live import LiveProgress, table_line
from mirrorspec.artifacts.run_results import STATUS_OF_MIRROR
from mirrorspec.progress.mirror import (MirrorRecord, TableState, read_state, state_copy_path,
                                       write_state_copy)
from mirrorspec.progress.snapshot import SnapshotFacts, latest_facts
from mirrorspec.spark.platform.session import SessionPool, scheduler_pool, session_conf

_log = logging.getLogger(__name__)

# Error codes of failures no landing file is proven to cause (docs/operations.md): the message
# says so and names the log file; `BadFile` and the other file codes mean the file is bad.
NOT_FILE_CODES = ("EngineError", "StorageError", "ConcurrentWriter")
NOT_THE_FILE = "not a problem with the landing files (nothing of this batch was applied)"

_ATTEMPTS = 4
# Characters Delta refuses in column names unless the table maps columns by name.
_DELTA_NAME_CHARS = re.compile(r"[ ,;{}()\n\t=]")


@dataclass(frozen=True)
class MirrorOptions:
    """How a pass runs."""

    threads: int = 2                 # tables processed concurrently
    strict: bool = False             # fail a __rowMarker__ not last / not an integer column
    retention_days: float = mirroring.PROCESSED_RETENTION_DAYS  # _ProcessedFiles purge
    select: tuple[str, ...] = ()     # unique ids / globs like "sales.*" / names; empty = all
    move_processed: bool = True
    settle_seconds: float = 0.0      # a file younger than this waits (producers writing in place)
    # Delta's change data feed of every table (`mirror --change-data-feed`); None: as it is
    change_data_feed: bool | None = None
    feeds: tuple[tuple[str, bool], ...] = ()  # a project's per-table switches (unique id, on)


@dataclass(frozen=True)
class MirrorTarget:
    """A landing-zone table and the Delta table it is mirrored into."""

    unique_id: str          # "<warehouse schema>.<table>"
    schema: str | None      # landing schema folder name without ".schema", None at root
    name: str
    landing_path: str       # the table's landing folder (path or URI)
    delta_path: str         # WAREHOUSE/<schema or dbo>/<table>
    deletion_vectors: bool | None = None  # the plan's switch; None: the session's default
    settle_seconds: float | None = None   # the plan's; None: MirrorOptions.settle_seconds
    change_data_feed: bool | None = None  # the plan's; None: MirrorOptions' switches


@dataclass
class TableOutcome:
    """What a pass did to one table."""

    unique_id: str
    schema: str | None
    name: str
    status: str = "Replicating"   # Replicating, NotStarted, Failed, Dropped, Waiting
    files_applied: list[str] = field(default_factory=list)
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    processed_rows: int = 0       # cumulative across runs
    processed_bytes: int = 0      # cumulative
    error: dict | None = None     # {"errorCode", "message", "file", "row"}
    awaiting: str | None = None   # gap: the 20-digit name awaited
    delta_version: int | None = None
    seconds: float = 0.0
    landing_path: str = ""        # the table's landing folder
    delta_path: str = ""          # the Delta table's folder
    warnings: list[str] = field(default_factory=list)  # what was ignored, once each


@dataclass
class MirrorResult:
    """Outcomes of a pass, one per table."""

    tables: list[TableOutcome]
    status_error: str | None = None  # writing the monitoring JSON failed (a StorageError)

    @property
    def failed(self) -> bool:
        return self.status_error is not None or any(t.status == "Failed" for t in self.tables)


# --- discovery --------------------------------------------------------------------------------

def discover_targets(landing_zone: str, warehouse: str, spark=None) -> list[MirrorTarget]:
    """The tables of a landing zone, each with the Delta path it is mirrored into."""
    landing_zone, warehouse = fsmod.normalize(landing_zone), fsmod.normalize(warehouse)
    filesystem = hadoop_fs.filesystem_for(landing_zone, spark)
    return [_target(t.schema, t.name, t.path, warehouse)
            for t in landing.discover(filesystem, landing_zone)]


def _target(schema: str | None, name: str, landing_path: str, warehouse: str) -> MirrorTarget:
    wschema = mirroring.warehouse_schema(schema)
    return MirrorTarget(f"{wschema}.{name}", schema, name, landing_path,
                        fsmod.join(warehouse, wschema, name))


def _absolute(target: MirrorTarget) -> MirrorTarget:
    """The target with both paths in their one absolute form (see `fs.normalize`)."""
    return replace(target, landing_path=fsmod.normalize(target.landing_path),
                   delta_path=fsmod.normalize(target.delta_path))


def selected(target: MirrorTarget, patterns: tuple[str, ...]) -> bool:
    """Whether a table matches `--select` (unique ids, names or globs; empty selects all)."""
    if not patterns:
        return True
    names = [target.unique_id.lower(), target.name.lower()]
    if target.schema:
        names.append(f"{target.schema}.{target.name}".lower())
    return any(fnmatch.fnmatchcase(n, p.lower()) for p in patterns for n in names)


_SHOWN: "weakref.WeakKeyDictionary[Console, set[str]]" = weakref.WeakKeyDictionary()
_SHOWN_LOCK = threading.Lock()


def warn_once(console: Console, message: str, **fields) -> None:
    """Show a warning about the landing zone once per console (a --watch run shows it once,
    not every pass)."""
    with _SHOWN_LOCK:
        shown = _SHOWN.setdefault(console, set())
        if message in shown:
            return
        shown.add(message)
    console.warning(message, **fields)


# Each table runs in a session of its own, so one table's txn/userMetadata confs never reach
# another's commit running at the same time; finished tables' sessions are reused by the next.
_TABLE_SESSION_CONF = {
    # Delimited files may declare any Java charset (windows-1252, …); Spark 4 only accepts a
    # short list unless this is on.
    "spark.sql.legacy.javaCharsets": "true",
    # Producers (pandas/pyarrow) write TIMESTAMP(NANOS); batch.py converts the longs.
    "spark.sql.legacy.parquet.nanosAsLong": "true",
}
_TABLE_SESSIONS: "weakref.WeakKeyDictionary[object, SessionPool]" = weakref.WeakKeyDictionary()
_TABLE_SESSIONS_LOCK = threading.Lock()


def table_sessions(spark) -> SessionPool:
    """The pool of per-table sessions of `spark` (kept while `spark` is)."""
    with _TABLE_SESSIONS_LOCK:
        pool = _TABLE_SESSIONS.get(spark)
        if pool is None:
            pool = _TABLE_SESSIONS[spark] = SessionPool(spark, _TABLE_SESSION_CONF)
        return pool


# --- one table ----------------------------------------------------------------------------------

class _Conflict(Exception):
    """Another writer committed first: re-read the table's state and try again."""


class _UnreadableFile(Exception):
    """The commit failed reading one of the batch's files (a codec Spark lacks, a corrupt
    page the row checks didn't touch): `bad` names it; the files before it can be applied."""

    def __init__(self, bad: tuple):
        super().__init__(bad[2])
        self.bad = bad


def _recorded(state: TableState, table: str) -> MirrorRecord:
    """The table's latest engine record, or an empty one before its first commit."""
    return state.record or MirrorRecord(table=table, mode="", files=[])


class _TableRun:
    """One table in one pass."""

    def __init__(self, spark, target: MirrorTarget, options: MirrorOptions, console: Console,
                 landing_zone: str | None):
        self.spark = spark
        self.target = target
        self.options = options
        self.console = console
        if landing_zone is None:  # the folder's parent (and the schema folder's parent)
            depth = 2 if target.schema else 1
            landing_zone = target.landing_path.rstrip("/").rsplit("/", depth)[0]
        self.landing_zone = fsmod.normalize(landing_zone)
        self.lfs = hadoop_fs.filesystem_for(target.landing_path, spark)
        self.wfs = hadoop_fs.filesystem_for(target.delta_path, spark)
        self.outcome = TableOutcome(target.unique_id, target.schema, target.name,
                                    landing_path=target.landing_path,
                                    delta_path=target.delta_path)
        self.app_id = mirroring.mirror_id(target.schema, target.name)
        self._held: set[str] = set()  # names never applied as they are: left in place
        self._late: set[str] = set()  # of which: placed at or before the applied sequence
        self._committed: int | None = None  # the Delta version this pass committed
        self._facts: SnapshotFacts | None = None  # the table's latest version, from its log

    # -- entry point
    def run(self) -> TableOutcome:
        started = time.monotonic()
        try:
            # one FAIR pool per worker thread: tables running at once share the cores
            with scheduler_pool(self.spark, threading.current_thread().name):
                self._run()
        except LandingZoneError as exc:
            self._fail(exc.code, exc.message + (f" ({exc.hint})" if exc.hint else ""),
                       exc.file, exc.row)
        except Exception as exc:  # noqa: BLE001 - one table's failure never stops another
            self._fail_not_the_file(exc)
        finally:
            if hasattr(self, "_own_session"):
                # a session that saw a failure is not lent to the next table
                table_sessions(self.spark).give_back(self._own_session,
                                                     reuse=self.outcome.status != "Failed")
        self.outcome.seconds = time.monotonic() - started
        return self.outcome

    def _warn(self, warnings) -> None:
        """Show each warning once per table and pass, and keep it for tables.json."""
        for warning in warnings:
            if warning not in self.outcome.warnings:
                self.outcome.warnings.append(warning)
                warn_once(self.console, warning, table=self.target.unique_id)

    def _fail(self, code: str, message: str, file: str | None, row: int | None) -> None:
        self.outcome.status = "Failed"
        where = (f"{file}" + (f": row {row}" if row else "") + ": ") if file else ""
        self.outcome.error = {"errorCode": code, "message": where + message, "file": file,
                              "row": row}
        self.console.error(f"{self.target.unique_id}: {where}{message}",
                           table=self.target.unique_id, file=file, row=row, code=code)

    def _fail_not_the_file(self, exc: BaseException) -> None:
        """A failure no landing file is proven to cause: its own code, the log file named, and
        the traceback kept there rather than on screen."""
        code = error_code_of(exc, self.target.delta_path)
        log = log_exception(f"{self.target.unique_id}: {code}", exc)
        cause = failures.storage_cause(exc)
        what = f"I/O error: {cause}" if cause else f"Spark/Delta error: {_short(exc)}"
        if self._committed is None:
            done = NOT_THE_FILE
        else:  # the commit holds the batch and its progress: the next pass finishes the rest
            done = (f"not a problem with the landing files; the batch was committed (Delta "
                    f"version {self._committed}) and the next pass finishes what followed it")
        self._fail(code, f"{what}; {done}; details in {log}", None, None)

    def _refuse_links_outside(self) -> None:
        """Nothing is read, moved, written or deleted outside the landing zone and warehouse
        roots through a symlink: the table folder, its entries (`_metadata.json`, data files,
        `_ProcessedFiles`) and the Delta folder must all resolve inside them."""
        target = self.target
        warehouse = target.delta_path.rstrip("/").rsplit("/", 2)[0]
        checks = [(target.landing_path, self.landing_zone, "landing zone"),
                  (target.delta_path, warehouse, "warehouse")]
        if not fsmod.is_remote(target.landing_path) and \
                fsmod.outside_root(target.landing_path, self.landing_zone) is None:
            checks += [(e.path, self.landing_zone, "landing zone")
                       for e in self.lfs.list(target.landing_path)]
        for path, root, what in checks:
            real = fsmod.outside_root(path, root)
            if real is not None:
                raise LandingZoneError(
                    f"a symlink leads to {real}, outside the {what} {root}; mirrorspec never "
                    "reads, moves, writes or deletes through such a link", file=path,
                    code="LinkOutsideRoot",
                    hint="replace the link with the folder or file itself; other tables go on")

    def _run(self) -> None:
        self._refuse_links_outside()
        metadata = landing.read_metadata(self.lfs, self.target.landing_path)
        self._warn(metadata.warnings)
        if not metadata.present:
            self._warn([f"{self.target.landing_path}: no _metadata.json; the table is "
                        "insert-only and keyless"])
        for attempt in range(_ATTEMPTS):
            try:
                self._attempt(metadata)
                return
            except _Conflict as exc:
                if attempt == _ATTEMPTS - 1:
                    raise LandingZoneError(
                        f"gave up after {_ATTEMPTS} conflicting commits by another writer "
                        f"({exc}); {NOT_THE_FILE}", code="ConcurrentWriter",
                        hint="run again; nothing was applied twice") from exc
                self.console.info(f"{self.target.unique_id}: another writer committed first; "
                                  "re-reading the table", table=self.target.unique_id)

    # -- one try: read state, pick files, commit, move
    def _attempt(self, metadata: mirroring.TableMetadata) -> None:
        target = self.target
        state = read_state(self.wfs, target.delta_path, self.app_id)
        if state.record is not None and not state.from_copy and not self.wfs.exists(
                state_copy_path(target.delta_path, state.record.txn_version)):
            write_state_copy(self.wfs, target.delta_path, state)  # a crash came before it
        listing = landing.list_folder(self.lfs, target.landing_path, metadata)
        crash_point("after_listing", target.unique_id)
        state = self._handle_recreated(state, listing, metadata)
        self._refuse_key_change(state, metadata)
        folder_id = listing.folder_id or self._write_folder_id()
        record = _recorded(state, target.unique_id)
        self.outcome.processed_rows = record.processed_rows
        self.outcome.processed_bytes = record.processed_bytes
        self.outcome.delta_version = state.version
        if metadata.last_update_time_detection:
            pending = landing.pending_by_time(listing, record.done)
            last_applied = record.files[-1] if record.files else None
            sequence = None
        else:
            sequence = int(record.sequence or 0)
            pending = landing.pending_by_sequence(listing, sequence)
            last_applied = (pending.applied_present[-1].name if pending.applied_present
                            else None)
        self.outcome.awaiting = pending.awaiting
        self._warn(listing.warnings)  # after picking: that adds the names outside the sequence
        # placed late or changed after it was applied: never applied as it is, left in place
        misplaced = landing.not_applied_as_placed(pending.applied_present, sequence,
                                                state.record)
        self._warn([f"{f.path}: {problem}" for f, _kind, problem in misplaced])
        self._held = {f.name for f, _kind, _problem in misplaced}
        self._late = {f.name for f, kind, _problem in misplaced if kind == "late"}
        self._wait_to_settle(pending)
        if not pending.files:
            self._move([f for f in pending.applied_present if f.name != last_applied])
            self._finish_status(None, pending)
            if not state.exists and self.outcome.status == "Replicating":
                self.outcome.status = "NotStarted"  # Fabric's word: nothing has landed yet
            return
        self.console.info(f"{target.unique_id}: {len(pending.files)} file(s) pending",
                          table=target.unique_id, files=len(pending.files))
        schemas, union, bad = self._check_files(pending.files, metadata, state)
        self._unless_moved_away(bad, pending.files)
        applied: list[landing.LandingFile] = []
        if schemas:
            with decompressed.readable(self.lfs, self.wfs, target.delta_path, schemas):
                bad, applied = self._apply(schemas, union, bad, metadata, state, folder_id,
                                           pending)
            # written to while the commit read it: what it gained is not in the table
            changed = self._changed(applied)
            self._warn([f"{f.path}: {mirroring.changed_file_problem(applied=True)}"
                        for f in changed])
            self._held |= {f.name for f in changed}
        elif bad is not None:
            _cutoff, bad = self._unchanged_prefix(pending.files, 0, bad)
        to_move = list(pending.applied_present) + applied
        keep = applied[-1].name if applied else last_applied
        self._move([f for f in to_move if f.name != keep])
        self._finish_status(bad, pending, pending.files)

    def _wait_to_settle(self, pending: landing.Pending) -> None:
        """Leave for a later pass the first pending file younger than the settle time and every
        file after it (the order of files is the order of changes)."""
        settle = self.target.settle_seconds
        if settle is None:
            settle = self.options.settle_seconds
        cut = landing.unsettled(pending.files, settle, time.time())
        if cut is None:
            return
        self.console.info(f"{self.target.unique_id}: {pending.files[cut].name} is younger than "
                          f"settle_seconds ({settle:g} s); it and {len(pending.files) - cut - 1} "
                          "later file(s) wait for a later pass", table=self.target.unique_id)
        pending.files = pending.files[:cut]

    def _changed(self, files) -> list[landing.LandingFile]:
        """The `files` whose size, time or ETag differ from their listing now (gone: not)."""
        if not files:
            return []
        now = {e.name: e for e in self.lfs.list(self.target.landing_path)}
        return [f for f in files if f.name in now
                and not landing.same_version(now[f.name], landing.file_stats(f))]

    def _unchanged_prefix(self, files, cutoff: int, bad):
        """(cutoff, bad) once the files up to the cutoff (and the bad file) are re-listed: the
        first one whose size, time or ETag changed since the listing (a producer still writing
        it in place) ends the batch there and is retried next pass, reported once; a bad file
        that changed is no longer known to be bad."""
        upto = cutoff + 1 if bad is not None else cutoff
        now = {e.name: e for e in self.lfs.list(self.target.landing_path)}
        for order, file in enumerate(files[:upto]):
            entry = now.get(file.name)
            if entry is None:
                raise _Conflict(f"{file.name} was moved away by another process")
            if not landing.same_version(entry, landing.file_stats(file)):
                self._warn([f"{file.path}: {mirroring.changed_file_problem(applied=False)}"])
                return order, None
        return cutoff, bad

    def _refuse_key_change(self, state: TableState, metadata: mirroring.TableMetadata) -> None:
        """Seed 000: keyColumns can't change once added. Another producer changing them under a
        mirrored table stops it before anything is applied (lint's rule, `metadata/key-changed`)."""
        if not state.exists or state.record is None:
            return
        problem = mirroring.key_change(state.record.keys, metadata.key_columns)
        if problem:
            raise LandingZoneError(
                problem, file=fsmod.join(self.target.landing_path, mirroring.METADATA_FILE),
                code=mirroring.KEY_CHANGED_CODE,
                hint="nothing was applied; put the keyColumns the table was mirrored with back, "
                     "or recreate the table folder with all its data (the Delta table is then "
                     "dropped and rebuilt)")

    def _apply(self, schemas, union, bad, metadata, state, folder_id, pending):
        """Validate the files' rows and commit those before the first bad one: (bad, applied)."""
        # Not persisted: caching the change set for the validation job measured slower than
        # reading the files twice (docs/performance.md).
        changes = reader.read_changes(self._session(), schemas, union, metadata)
        stats, data_bad = self._validate(changes, schemas, metadata)
        self._unless_moved_away(data_bad, pending.files)
        if data_bad is not None:
            bad = data_bad
        cutoff = bad[0] if bad else len(schemas)
        cutoff, bad = self._unchanged_prefix(pending.files, cutoff, bad)
        applied = [s.file for s in schemas[:cutoff]]
        try:
            if applied:
                self._commit(changes, cutoff, applied, stats, union, metadata, state,
                             folder_id, pending)
        except _UnreadableFile as exc:  # found only when the commit read it: stop there
            bad, applied = exc.bad, applied[:exc.bad[0]]
            if applied:
                self._commit(changes, exc.bad[0], applied, stats, union, metadata, state,
                             folder_id, pending)
        return bad, applied

    def _unless_moved_away(self, bad, files) -> None:
        """A pending file that vanished since the listing was moved by another `mirror` process
        that applied it: re-read the table instead of failing it."""
        if bad is not None and not self.lfs.exists(files[bad[0]].path):
            raise _Conflict(f"{files[bad[0]].name} was moved away by another process")

    def _finish_status(self, bad, pending: landing.Pending, files=None) -> None:
        self._purge()
        if bad is not None:
            order, row, message, code = bad
            self._fail(code, message, files[order].path, row)
        elif pending.awaiting:
            self.outcome.status = "Waiting"
            self.console.warning(f"{self.target.unique_id}: waiting for {pending.awaiting} "
                                 "(a gap in the file sequence blocks later files)",
                                 table=self.target.unique_id, awaiting=pending.awaiting)
        else:
            self.outcome.status = "Replicating"

    # -- table identity
    def _handle_recreated(self, state: TableState, listing: landing.FolderListing,
                          metadata: mirroring.TableMetadata) -> TableState:
        if not state.exists or state.record is None:
            return state
        recorded = state.record.folder_id
        reason = None
        if recorded and listing.folder_id != recorded:
            reason = "the table folder was recreated (its identity changed)"
        elif not metadata.last_update_time_detection and state.record.sequence:
            sequences = [f.sequence for f in listing.files if f.sequence is not None]
            if sequences and max(sequences) < int(state.record.sequence):
                reason = "its file sequence restarted below what was applied"
        if reason is None:
            return state
        self.console.warning(f"{self.target.unique_id}: {reason}; dropping the Delta table and "
                             "rebuilding it from the folder's files", table=self.target.unique_id)
        self.wfs.delete(self.target.delta_path)
        delta.forget_delta_logs(self.spark)
        return TableState()

    def _write_folder_id(self) -> str:
        path = fsmod.join(self.target.landing_path, landing.FOLDER_ID_FILE)
        token = uuid.uuid4().hex
        if self.lfs.create_exclusive(path, token + "\n"):
            return token
        return self.lfs.read_bytes(path).decode().strip()  # another process created it first

    # -- files → schemas, stopping at the first bad one
    def _check_files(self, files, metadata, state: TableState):
        union: list[T.StructField] = []
        self._table_columns: set[str] = set()
        self._facts = None
        if state.exists:
            # read once per attempt: the schema, properties and size the commit decides by
            self._facts = latest_facts(self.wfs, self.target.delta_path)
            union = self._table_fields()
            self._table_columns = {f.name.lower() for f in union}
        schemas: list[reader.FileSchema] = []
        for order, file in enumerate(files):
            if file.size == 0:
                return schemas, union, (order, None, "zero-byte file (a file must hold at least "
                                        "its Parquet footer or header row); re-write it under "
                                        "the same name", "BadFile")
            try:
                schema = reader.file_schema(self._session(), self.lfs, file, metadata)
            except LandingZoneError as exc:
                return schemas, union, (order, exc.row, exc.message, exc.code)
            trial = list(union)
            reason = reader.check_schema(schema, trial, metadata.key_columns, self.options.strict)
            if reason:
                code = ("ColumnTypeChanged" if "changed type" in reason else
                        mirroring.NULL_TYPE_CODE if mirroring.NULL_TYPE_TEXT in reason else
                        "BadFile")
                return schemas, union, (order, None, reason, code)
            union = trial
            schemas.append(schema)
        union = [T.StructField(f.name, T.StringType(), True) if isinstance(f.dataType, T.NullType)
                 else f for f in union]
        return schemas, union, None

    def _table_fields(self) -> list[T.StructField]:
        """The table's columns: from its log when that holds the schema (no Spark statement),
        else as Spark reads the table."""
        schema = self._facts.schema if self._facts is not None else None
        if schema is not None:
            with contextlib.suppress(Exception):  # a type this PySpark can't parse: ask Spark
                return list(plain_type(T.StructType.fromJson(schema)).fields)
        return list(self._session().read.format("delta").load(
            self.target.delta_path).schema.fields)

    # -- rows per file, the first bad row of each file, keyed-row counts: one Spark job, unless
    # pyarrow proves local Parquet files clean from their marker and key columns alone
    def _validate(self, changes, schemas, metadata):
        proven = reader.clean_parquet_stats(schemas, metadata)
        if proven is not None:
            return proven, None
        keyed = sorted(int(m) for m in mirroring.KEYED_MARKERS)
        try:
            rows = changes.groupBy(reader.FILE_ORDER).agg(
                F.count(F.lit(1)).alias("rows"),
                F.min(reader.ROW_ORDER).alias("first"),
                F.min(F.when(F.col(reader.PROBLEM).isNotNull(),
                             F.struct(F.col(reader.ROW_ORDER).alias("row"),
                                      F.col(reader.PROBLEM).alias("problem")))).alias("bad"),
                F.sum(F.when(F.col(reader.MARKER).isin(keyed), 1).otherwise(0)).alias("keyed"),
            ).collect()
        except Exception:
            self._unless_batch_moved_away([s.file for s in schemas])
            bad = self._unreadable_file(changes, [s.file for s in schemas])
            if bad is None:
                raise
            return {}, bad
        stats = {int(r[reader.FILE_ORDER]): r for r in rows}
        for order in range(len(schemas)):
            row = stats.get(order)
            if row is not None and row["bad"] is not None:
                number = int(row["bad"]["row"]) - int(row["first"]) + 1
                code = "BadRowMarker" if "__rowMarker__ '" in row["bad"]["problem"] else "BadFile"
                return stats, (order, number, row["bad"]["problem"], code)
        return stats, None

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
        """Raise `_Conflict` when one of `files` is gone: another `mirror` process applied and
        moved it since this one listed the folder, so the failure says nothing about it."""
        for file in files:
            if not self.lfs.exists(file.path):
                raise _Conflict(f"{file.name} was moved away by another process")

    # -- the one commit
    def _commit(self, changes, cutoff, applied, stats, union, metadata, state: TableState,
                folder_id, pending) -> None:
        target = self.target
        last = _recorded(state, target.unique_id)
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
                raise _Conflict(_short(exc)) from None
            bad = self._unreadable_file(batch, applied)
            if bad is not None:
                raise _UnreadableFile(bad) from None
            raise
        crash_point("after_commit", target.unique_id)
        after = read_state(self.wfs, target.delta_path, self.app_id)
        if after.record is None or after.record.attempt != attempt:
            raise _Conflict(f"txn version {txn_version} of {self.app_id} was committed by "
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

    # -- files after the commit (landing/processed.py: the _ProcessedFiles lifecycle)
    def _move(self, files) -> None:
        files = [f for f in files if f.name not in self._held]
        if not self.options.move_processed or not files:
            return
        processed.move_to_processed(self.lfs, self.target.landing_path, files,
                                    self.target.unique_id)

    def _purge(self) -> None:
        if self.options.move_processed:
            processed.purge_processed(self.lfs, self.target.landing_path,
                                      self.options.retention_days)

    def _session(self):
        if not hasattr(self, "_own_session"):
            self._own_session = table_sessions(self.spark).take()
        delta.activate(self._own_session)
        return self._own_session


def error_code_of(exc: BaseException, warehouse_path: str = "") -> str:
    """The error code of a failure that is not a landing file's: `StorageError` for an I/O
    error (disk full, permissions; in Python or in Spark's/Delta's Java code, on the landing
    zone or the warehouse), else `EngineError` (Spark or Delta failed)."""
    return "StorageError" if failures.storage_cause(exc) else "EngineError"


_short = failures.short


def plain_type(data_type: T.DataType) -> T.DataType:
    """`data_type` without field metadata (column mapping ids, comments) at any depth: the
    schema as Spark's read of the table shows it, comparable with a landing file's."""
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, plain_type(f.dataType), f.nullable)
                             for f in data_type.fields])
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(plain_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        return T.MapType(plain_type(data_type.keyType), plain_type(data_type.valueType),
                         data_type.valueContainsNull)
    return data_type


# --- passes -------------------------------------------------------------------------------------

def mirror_tables(spark, targets: list[MirrorTarget], warehouse: str,
                  options: MirrorOptions = MirrorOptions(), console: Console | None = None,
                  landing_zone: str | None = None,
                  stop: threading.Event | None = None, skip=None, progress: bool = False,
                  news=None) -> MirrorResult:
    """Mirror `targets` concurrently (`options.threads`); one table's failure never stops
    another. Tables not started when `stop` is set are left for the next pass, and so are
    those `skip(target)` is true for (`--watch` backing off a failed table).

    `progress`: show the shared progress (`live.LiveProgress`: a bar or timed lines, rows/s)
    and a line per finished table. `news(outcome)` (`--watch`): only tables it says are news
    get their line, and the bar waits until a table has files to apply."""
    console = console or NullConsole()
    chosen = [_absolute(t) for t in targets if selected(t, options.select)]
    if skip is not None:
        chosen = [t for t in chosen if not skip(t)]
    live = LiveProgress(console, len(chosen), spark, wait_for_work=news is not None) \
        if progress and chosen else None
    tables = live.counting(console) if live is not None else console

    def work(target: MirrorTarget) -> TableOutcome | None:
        if stop is not None and stop.is_set():
            return None
        if live is not None:
            live.started(target.unique_id)
        outcome = _TableRun(spark, target, options, tables, landing_zone).run()
        if live is not None:
            _finished(live, outcome, news)
        return outcome

    with live if live is not None else contextlib.nullcontext():
        if options.threads <= 1 or len(chosen) <= 1:
            outcomes = [work(t) for t in chosen]
        else:
            with worker_pool(options.threads, "mirror") as pool:
                outcomes = list(pool.map(work, chosen))
    return MirrorResult([o for o in outcomes if o is not None])


def _finished(live: LiveProgress, outcome: TableOutcome, news=None) -> None:
    """Count a table done and, unless `news` says it is old news, print its line (the error
    itself was printed when it happened)."""
    changed = outcome.rows_inserted + outcome.rows_updated + outcome.rows_deleted
    index, rate = live.finish(outcome.unique_id, outcome.status == "Failed", changed)
    if news is not None and not news(outcome):
        return
    status = STATUS_OF_MIRROR.get(outcome.status, outcome.status.lower())
    text = table_line(index, live.total, status, outcome.unique_id,
                      f"{len(outcome.files_applied)} file(s) applied, +{outcome.rows_inserted} "
                      f"~{outcome.rows_updated} -{outcome.rows_deleted} rows", outcome.seconds)
    if outcome.awaiting and outcome.status == "Waiting":
        text += f" (awaiting {outcome.awaiting})"
    live.table_finished(text, status, outcome.unique_id, files_applied=len(outcome.files_applied),
                        rows_inserted=outcome.rows_inserted, rows_updated=outcome.rows_updated,
                        rows_deleted=outcome.rows_deleted, seconds=round(outcome.seconds, 3),
                        rows_per_second=round(rate, 1),
                        error=(outcome.error or {}).get("message"))


def drop_deleted_tables(spark, landing_zone: str, warehouse: str, present: set[str],
                        options: MirrorOptions, console: Console,
                        exclude: tuple[str, ...] = ()) -> list[TableOutcome]:
    """Drop the Delta tables this landing zone mirrored whose folder is gone (as Fabric does),
    but for those in `present`, those `options.select` doesn't select and those `exclude`
    names. `mirror` and `run` both call it, after listing the landing zone."""
    warehouse = fsmod.normalize(warehouse)
    wfs = hadoop_fs.filesystem_for(warehouse, spark)
    root = fsmod.normalize(landing_zone)
    outcomes = []
    for schema_entry in wfs.list(warehouse):
        if not schema_entry.is_dir or schema_entry.name.startswith(("_", ".")):
            continue
        for table_entry in wfs.list(schema_entry.path):
            if not table_entry.is_dir:
                continue
            unique_id = f"{schema_entry.name}.{table_entry.name}"
            if unique_id in present:
                continue
            schema = None if schema_entry.name == mirroring.DEFAULT_SCHEMA else schema_entry.name
            target = MirrorTarget(unique_id, schema, table_entry.name, "", table_entry.path)
            if not selected(target, options.select) or (exclude and selected(target, exclude)):
                continue
            try:
                state = read_state(wfs, table_entry.path,
                                   mirroring.mirror_id(schema, table_entry.name))
            except LandingZoneError:
                continue  # its progress is unreadable: never drop what we can't prove is ours
            if state.record is None or state.record.landing_zone != root:
                continue  # not mirrored from this landing zone: never ours to drop
            wfs.delete(table_entry.path)
            delta.forget_delta_logs(spark)
            outcome = TableOutcome(unique_id, schema, table_entry.name, status="Dropped")
            console.warning(f"{unique_id}: its landing folder was deleted; Delta table dropped",
                            table=unique_id)
            outcomes.append(outcome)
    return outcomes


def mirror_landing_zone(spark, landing_zone: str, warehouse: str,
                        options: MirrorOptions = MirrorOptions(), console: Console | None = None,
                        stop: threading.Event | None = None, skip=None, progress: bool = False,
                        news=None) -> MirrorResult:
    """One pass: discover tables, drop those whose folder was deleted, mirror the rest, write
    WAREHOUSE/replicator.json and WAREHOUSE/tables.json. `progress`, `news`: as
    `mirror_tables`."""

    console = console or NullConsole()
    landing_zone, warehouse = fsmod.normalize(landing_zone), fsmod.normalize(warehouse)
    lfs = hadoop_fs.filesystem_for(landing_zone, spark)
    if not lfs.is_dir(landing_zone):
        raise LandingZoneError("the landing zone folder does not exist", file=landing_zone,
                               code="LandingZoneNotFound",
                               hint="check --landing-zone; nothing was dropped or applied")
    try:
        events = landing.read_partner_events(lfs, landing_zone)
        if events:
            source = (events.get("sourceInfo") or {}) if isinstance(events.get("sourceInfo"),
                                                                    dict) else {}
            console.info(f"partner: {events.get('partnerName')}, source: "
                         f"{source.get('sourceType')} {source.get('sourceVersion') or ''}".rstrip(),
                         partner=events.get("partnerName"), source=source.get("sourceType"))
    except LandingZoneError as exc:
        console.warning(exc.render())
    targets = discover_targets(landing_zone, warehouse, spark)
    for warning in landing.hidden_folders(lfs, landing_zone):
        warn_once(console, warning)
    console.info(f"{len(targets)} table(s) in {landing_zone}", tables=len(targets))
    dropped = drop_deleted_tables(spark, landing_zone, warehouse,
                                  {t.unique_id for t in targets}, options, console)
    result = mirror_tables(spark, targets, warehouse, options, console,
                           landing_zone=landing_zone, stop=stop, skip=skip, progress=progress,
                           news=news)
    result.tables = dropped + result.tables
    result.status_error = write_monitoring(hadoop_fs.filesystem_for(warehouse, spark), warehouse,
                                           result.tables, console)
    return result


def write_monitoring(wfs, warehouse: str, outcomes, console: Console) -> str | None:
    """Write WAREHOUSE/tables.json and replicator.json through the warehouse's filesystem
    `wfs`; a storage failure (disk full) is reported as a StorageError and returned (the next
    pass that writes them says so), never raised: every table's own outcome stands."""
    from mirrorspec.artifacts.status import CORRECTED_MESSAGE, STALE_UNTIL, WRITE_FAILED, write_status

    try:
        wfs.mkdirs(warehouse)
        written = write_status(warehouse, outcomes, files=wfs)
    except Exception as exc:
        error = failures.as_storage_error(exc, "monitoring JSON", WRITE_FAILED, STALE_UNTIL)
        if error is None:
            raise
        console.error(f"StorageError: {error.message}", code=error.code, path=warehouse)
        return error.message
    if written.get("corrected"):
        console.warning(CORRECTED_MESSAGE, path=warehouse)
    return None
