"""One table in one mirroring pass, exactly once (`TableRun`): list the folder, pick the pending
files (sequence or modification time), read them in one DataFrame, stop at the first bad file,
commit the good ones (`commit.DeltaCommit`), then move the processed files to
`_ProcessedFiles/` (the last one stays). Also each table's own Spark session and the error codes
of failures that are not a landing file's."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
import weakref
from dataclasses import replace

from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.base import files as fsmod
from mirrorspec.base.console import Console
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base.faults import crash_point
from mirrorspec.base.logfile import log_exception
from mirrorspec.landing import checks
from mirrorspec.landing import layout as landing
from mirrorspec.landing import processed
from mirrorspec.openmirroring import mirroring
from mirrorspec.progress.mirror import TableState, read_state, state_copy_path, write_state_copy
from mirrorspec.progress.snapshot import SnapshotFacts, latest_facts
from mirrorspec.spark.mirror import batch as reader
from mirrorspec.spark.mirror import decompressed
from mirrorspec.spark.mirror.commit import (CheckedBatch, Conflict, DeltaCommit, UnreadableFile,
                                           recorded)
from mirrorspec.spark.mirror.targets import MirrorOptions, MirrorTarget, TableOutcome
from mirrorspec.spark.platform import delta, failures, hadoop_fs
from mirrorspec.spark.platform.session import SessionPool, scheduler_pool

# Error codes of failures no landing file is proven to cause (docs/operations.md): the message
# says so and names the log file; `BadFile` and the other file codes mean the file is bad.
NOT_FILE_CODES = ("EngineError", "StorageError", "ConcurrentWriter")
NOT_THE_FILE = "not a problem with the landing files (nothing of this batch was applied)"

_ATTEMPTS = 4


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


class TableRun(DeltaCommit):
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
                       exc.file, *_row_or_line(exc.file, exc.row))
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

    def _fail(self, code: str, message: str, file: str | None, row: int | None,
              line: int | None = None) -> None:
        """Fail the table at `file`: at its data `row` (Parquet, 1-based) or at its `line`
        (a delimited file, as an editor numbers it)."""
        self.outcome.status = "Failed"
        at = f": line {line}" if line else f": row {row}" if row else ""
        where = f"{file}{at}: " if file else ""
        self.outcome.error = {"errorCode": code, "message": where + message, "file": file,
                              "row": row, "line": line}
        self.console.error(f"{self.target.unique_id}: {where}{message}",
                           table=self.target.unique_id, file=file, row=row, line=line, code=code)

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
            except Conflict as exc:
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
        record = recorded(state, target.unique_id)
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
                raise Conflict(f"{file.name} was moved away by another process")
            if not landing.same_version(entry, landing.file_stats(file)):
                self._warn([f"{file.path}: {mirroring.changed_file_problem(applied=False)}"])
                return order, None
        return cutoff, bad

    def _refuse_key_change(self, state: TableState, metadata: mirroring.TableMetadata) -> None:
        """keyColumns can't change once added (Microsoft's open-mirroring landing-zone contract).
        Another producer changing them under a mirrored table stops it before anything is
        applied (lint's rule, `metadata/key-changed`)."""
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
        checked = CheckedBatch(changes, cutoff, applied, stats, union, metadata, state,
                               folder_id, pending)
        try:
            if applied:
                self._commit(checked)
        except UnreadableFile as exc:  # found only when the commit read it: stop there
            bad, applied = exc.bad, applied[:exc.bad[0]]
            if applied:
                self._commit(replace(checked, cutoff=exc.bad[0], applied=applied))
        return bad, applied

    def _unless_moved_away(self, bad, files) -> None:
        """A pending file that vanished since the listing was moved by another `mirror` process
        that applied it: re-read the table instead of failing it."""
        if bad is not None and not self.lfs.exists(files[bad[0]].path):
            raise Conflict(f"{files[bad[0]].name} was moved away by another process")

    def _finish_status(self, bad, pending: landing.Pending, files=None) -> None:
        self._purge()
        if bad is not None:
            order, number, message, code = bad  # a delimited file's number is its line
            self._fail(code, message, files[order].path,
                       *_row_or_line(files[order].path, number))
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
                problem = row["bad"]["problem"]
                code = "BadRowMarker" if "__rowMarker__ '" in problem else "BadFile"
                file = schemas[order].file
                if file.format == "csv":  # named by the line it starts on, as lint names it
                    line = checks.data_row_line(self.lfs, file, metadata.delimited, number)
                    number, problem = (line, problem) if line else \
                        (None, f"{problem} (data row {number})")
                return stats, (order, number, problem, code)
        return stats, None

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


def _row_or_line(file: str | None, number: int | None) -> tuple[int | None, int | None]:
    """(row, line) of a place in `file`: a Parquet file's row; in any other (a delimited file,
    `_metadata.json`) the line an editor shows."""
    if file is None or number is None:
        return None, None
    name = file.rstrip("/").rsplit("/", 1)[-1]
    return (number, None) if mirroring.data_file_format(name) == "parquet" else (None, number)


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

