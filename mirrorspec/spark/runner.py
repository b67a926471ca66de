"""`mirrorspec run`: execute a compiled plan — publish feeds into the landing zone, mirror it.

Per selected table, in a thread pool (`threads`): a feed table (steps hold PublishFeed) first
mirrors what is already pending in its landing folder (the publisher completes partial rows from
the mirrored table, so it must be current), then publishes the new feed files, then mirrors them;
a landing_zone table is mirrored. One table's failure never stops another. The engine
(`mirrorspec.spark.engine`) and the publisher (`mirrorspec.spark.publisher`) do the work; this
module orders it, reports progress, and writes `target/run_results.json` and the monitoring JSON.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

from mirrorspec import mirroring
from mirrorspec.compile.plan import Plan, TablePlan, resolve_secrets
from mirrorspec.console import Console, NullConsole
from mirrorspec.errors import LandingZoneError, MirrorspecError
from mirrorspec.run_results import RunResults, StepTiming, TableRunResult, utc_now
from mirrorspec.selection import select_with_warnings
from mirrorspec.spark.fs import Files, outside_root

STEP_PUBLISH = "PublishFeed"
STEP_MIRROR = "MirrorTable"


def start_session(plan: Plan, console: Console | None = None):
    """The SparkSession the plan asks for (secrets in master/remote/conf resolved now);
    `console` hears "starting Spark…" at once when the JVM is started here."""
    from mirrorspec.spark.session import build_session

    spec = plan.spark
    return build_session(resolve_secrets(spec.master), resolve_secrets(dict(spec.conf)),
                         resolve_secrets(spec.remote) if spec.remote else None,
                         console=console)


def is_feed(table: TablePlan) -> bool:
    """True when the runner publishes this table's source feed into the landing zone."""
    return any(step.step == STEP_PUBLISH for step in table.steps)


def mirrors(table: TablePlan) -> bool:
    return any(step.step == STEP_MIRROR for step in table.steps) or not table.steps


@dataclass
class _TableJob:
    table: TablePlan
    result: TableRunResult
    outcome: Any = None  # the engine's last TableOutcome, for the monitoring JSON
    started: float = field(default_factory=time.monotonic)


def run_plan(plan: Plan, select: Sequence[str] = (), exclude: Sequence[str] = (), threads: int = 4,
             full_refresh: bool = False, publish_only: bool = False, state_path=None,
             console: Console | None = None, spark=None, target_dir=None,
             args: dict[str, Any] | None = None, command: str = "run",
             warmer=None) -> RunResults:
    """Publish and mirror the selected tables of `plan`; see the module docstring.

    `warmer` (a `warm.SnapshotWarmer`, `run --watch`) gets the tables that committed, so their
    next snapshot is built while the next pass waits.

    Writes `<target_dir>/run_results.json` when `target_dir` is given, and the monitoring JSON
    (WAREHOUSE/replicator.json, tables.json) for the mirrored tables. Never raises for a table
    failure: check `RunResults.failed`.
    """
    console = console or NullConsole()
    started = time.monotonic()
    results = RunResults(command=command, args=dict(args or {}))
    tables = select_with_warnings(plan, select, exclude, state_path=state_path, console=console)
    jobs = [_TableJob(t, TableRunResult(t.unique_id)) for t in tables]
    if jobs:
        spark = spark or start_session(plan, console)
        files = LandingFiles(spark)
        _write_partner_events(plan, files, console)
        for job in jobs:
            _prepare(plan, job, files, full_refresh, console)
        progress = RunProgress(console, len(jobs))
        with progress:
            with ThreadPoolExecutor(max_workers=max(1, threads),
                                    thread_name_prefix="mirrorspec-table") as pool:
                futures = [pool.submit(_run_table, spark, plan, job, files, publish_only,
                                       console, progress) for job in jobs]
                for future in futures:
                    future.result()
        if not publish_only:
            _write_status(plan, jobs, files)
        if warmer is not None:
            warmer.after_pass(spark, [job.outcome.delta_path for job in jobs
                                      if job.outcome is not None and job.outcome.files_applied])
    results.results = [job.result for job in jobs]
    results.elapsed_time = time.monotonic() - started
    if target_dir is not None:
        results.write(target_dir)
    return results


def _write_status(plan: Plan, jobs: list[_TableJob], files: "LandingFiles") -> None:
    """The monitoring JSON: the engine's outcomes, and `Failed` for a table that failed before
    or outside the engine (its `_metadata.json`, its publish), keeping its cumulative metrics."""
    from mirrorspec.status import read_status, write_status

    filesystem = files.fs(plan.warehouse)
    previous = {(e.get("sourceSchemaName"), e.get("sourceTableName")): e
                for e in read_status(plan.warehouse, filesystem).get("tables", [])}
    outcomes: list[Any] = []
    for job in jobs:
        outcome = job.outcome
        if job.result.failed and (outcome is None or outcome.status != "Failed"):
            table = job.table
            metrics = (previous.get((table.warehouse_schema, table.name)) or {}).get("metrics")
            metrics = metrics or {}
            outcome = {"schema": table.warehouse_schema, "name": table.name, "status": "Failed",
                       "processed_rows": metrics.get("processedRows", 0),
                       "processed_bytes": metrics.get("processedBytes", 0),
                       "seconds": job.result.execution_time,
                       "error": {"errorCode": job.result.error_code or "RunFailed",
                                 "message": job.result.error}}
        if outcome is not None:
            outcomes.append(outcome)
    if outcomes:
        write_status(plan.warehouse, outcomes, files=filesystem)


# --- preparing the landing zone ----------------------------------------------------------------

def _write_partner_events(plan: Plan, lf: "LandingFiles", console: Console) -> None:
    if not plan.partner_events:
        return
    path = lf.join(plan.landing_zone, mirroring.PARTNER_EVENTS_FILE)
    text = mirroring.dumps_json(plan.partner_events)
    if lf.read_text(path) != text:
        lf.write_text(path, text)
        console.info(f"wrote {path}", path=path)


def _prepare(plan: Plan, job: _TableJob, files: "LandingFiles", full_refresh: bool,
             console: Console) -> None:
    """Full refresh (when asked), then the table's `_metadata.json`; failures mark the table."""
    try:
        if full_refresh:
            _full_refresh(plan, job.table, files, console)
        deploy_metadata(job.table, files, console)
    except MirrorspecError as exc:
        job.result.fail(exc.render(), getattr(exc, "code", None))
    except OSError as exc:
        job.result.fail(f"{job.table.unique_id}: {exc}", "IOError")


def deploy_metadata(table: TablePlan, lf: "LandingFiles | None" = None,
                    console: Console | None = None) -> bool:
    """Write the table's `_metadata.json` when absent (or, for a folder we publish, when it
    differs from the project's); True when written.

    A present file whose keyColumns differ from the plan's is an error: Fabric does not allow
    keyColumns to change once set, so the folder has to be recreated. (A file without keys in
    a folder that never held data is simply replaced.)
    """
    lf = lf or LandingFiles()
    path = lf.join(table.landing_path, mirroring.METADATA_FILE)
    existing = lf.read_text(path)
    wanted = list(table.key_columns or table.metadata.get("keyColumns") or [])
    present = None if existing is None else mirroring.parse_metadata_text(existing, path)
    metadata = table.metadata
    if not wanted and table.source.kafka and present is not None and present.key_columns:
        # keys a Kafka feed's own metadata gave at run time (compile never reads topics)
        wanted = list(present.key_columns)
        metadata = {"keyColumns": wanted, **table.metadata}
    if present is None or (list(present.key_columns) != wanted and not present.key_columns
                           and not lf.has_data(table.landing_path)):
        lf.write_text(path, mirroring.dumps_json(metadata))
        if console is not None:
            console.info(f"{table.unique_id}: wrote {path}", table=table.unique_id, path=path)
        return True
    if list(present.key_columns) != wanted:
        how = (f"`mirrorspec run --full-refresh --select {table.unique_id}` recreates it from the "
               "source" if is_feed(table) else
               "delete the folder and have its publisher write it again with the new keys")
        raise LandingZoneError(
            f"keyColumns {list(present.key_columns)} in the landing zone differ from the "
            f"project's {wanted}; keyColumns can't change once set: recreate the table folder",
            file=path, code="KeyColumnsChanged", hint=how)
    if present == mirroring.parse_metadata(metadata, path):
        return False
    if is_feed(table):
        # We publish this folder, so the project is the truth for every other property
        # (isUpsertDefaultRowMarker, SchemaDefinition, delimited properties, …).
        lf.write_text(path, mirroring.dumps_json(metadata))
        if console is not None:
            console.info(f"{table.unique_id}: updated {path}", table=table.unique_id, path=path)
        return True
    if console is not None:
        console.warning(f"{table.unique_id}: {path} differs from the project's _metadata.json "
                        "(another publisher owns this folder; left as it is)",
                        table=table.unique_id, path=path)
    return False


def _full_refresh(plan: Plan, table: TablePlan, lf: "LandingFiles", console: Console) -> None:
    """Drop the Delta table; for a feed also its landing folder and publisher state, so the
    feed is published again from its first file.

    A landing_zone table keeps its folder (another publisher owns it): the files in
    `_ProcessedFiles/` move back in place and the engine applies every file still there from the
    start. Files purged after the retention are gone: a 20-digit sequence that no longer starts
    at 1 can't be rebuilt, so the table fails and its Delta table is left as it is; under
    LastUpdateTimeFileDetection nobody can tell what was purged, so it is warned about.
    """
    if is_feed(table):
        lf.delete(table.delta_path)
        lf.delete(table.landing_path)
        for state_file in publisher_state_files(plan, table):
            lf.delete(state_file)
        if table.source.kafka:  # messages fetched but not published yet start over too
            from mirrorspec.spark.kafka_source import staging_folder
            lf.delete(staging_folder(plan, table))
        console.info(f"{table.unique_id}: full refresh: dropped the Delta table, the landing "
                     "folder and the publisher state", table=table.unique_id)
        return
    metadata_path = lf.join(table.landing_path, mirroring.METADATA_FILE)
    text = lf.read_text(metadata_path)
    metadata = (mirroring.parse_metadata_text(text, metadata_path) if text is not None
                else mirroring.parse_metadata(table.metadata, metadata_path))
    processed = lf.join(table.landing_path, mirroring.PROCESSED_FOLDER)
    names = lf.data_files(table.landing_path) + lf.data_files(processed)
    sequences = [n for n in map(mirroring.parse_sequence, names) if n is not None]
    if not metadata.last_update_time_detection and sequences and min(sequences) > 1:
        raise LandingZoneError(
            f"can't rebuild {table.unique_id} from its landing folder: it starts at file "
            f"{min(sequences):020d}, the earlier files were purged from "
            f"{mirroring.PROCESSED_FOLDER}; the Delta table was left as it is",
            file=table.landing_path, code="FullRefreshImpossible",
            hint="have the publisher recreate the folder with a full load (initial data first)")
    lf.delete(table.delta_path)
    restored = lf.restore_processed(table.landing_path)
    console.info(f"{table.unique_id}: full refresh: dropped the Delta table; {restored} processed "
                 "file(s) put back to be applied again", table=table.unique_id, restored=restored)
    if metadata.last_update_time_detection:
        console.warning(
            f"{table.unique_id}: rebuilt from the files still in the landing folder; files "
            f"purged from {mirroring.PROCESSED_FOLDER} after the retention are not in it",
            table=table.unique_id)


def publisher_state_files(plan: Plan, table: TablePlan) -> list[str]:
    """Where the publisher keeps what it published for `table`."""
    from mirrorspec.spark import publisher

    return [publisher.state_file(plan, table)]


# --- landing-zone file operations ------------------------------------------------------------------

class LandingFiles(Files):
    """The filesystem layer (`spark.fs.Files`) plus what the runner does to landing folders."""

    def data_files(self, folder: str) -> list[str]:
        return sorted(e.name for e in self.fs(folder).list(folder)
                      if not e.is_dir and not mirroring.is_reserved_name(e.name))

    def has_data(self, folder: str) -> bool:
        """Data files in the folder or in its `_ProcessedFiles/`."""
        processed = self.join(folder, mirroring.PROCESSED_FOLDER)
        return bool(self.data_files(folder) or self.data_files(processed))

    def restore_processed(self, folder: str) -> int:
        """Move `_ProcessedFiles/*` back into the table folder (a name already there wins),
        keeping modification times: LastUpdateTimeFileDetection orders by them."""
        processed = self.join(folder, mirroring.PROCESSED_FOLDER)
        filesystem = self.fs(folder)
        real = outside_root(processed, folder)
        if real is not None:
            raise LandingZoneError(
                f"a symlink leads to {real}, outside the table folder; nothing is moved back "
                "through it", file=processed, code="LinkOutsideRoot",
                hint="replace the link with the folder itself")
        present = {e.name for e in filesystem.list(folder)}
        moved = 0
        for entry in sorted(filesystem.list(processed), key=lambda e: e.name):
            if entry.is_dir or entry.name in present:
                continue
            filesystem.rename(entry.path, self.join(folder, entry.name), mtime=entry.mtime)
            moved += 1
        return moved


# --- one table -----------------------------------------------------------------------------------

def _run_table(spark, plan: Plan, job: _TableJob, files: LandingFiles, publish_only: bool,
               console: Console, progress: "RunProgress") -> None:
    table, result = job.table, job.result
    if result.failed:  # preparing it failed
        progress.finished(result)
        return
    progress.started(table.unique_id)
    job.started = time.monotonic()
    try:
        feed = is_feed(table)
        mirror = mirrors(table) and not publish_only
        if feed and mirror and files.data_files(table.landing_path):
            _mirror(spark, plan, job, console, "mirror (catch up)")
        if feed and not result.failed:
            _publish(spark, plan, job, console)
        if mirror and not result.failed:
            _mirror(spark, plan, job, console, "mirror")
    except MirrorspecError as exc:
        result.fail(exc.render(), getattr(exc, "code", None))
    except Exception as exc:  # noqa: BLE001 - one table's crash must not stop the others
        result.fail(f"{type(exc).__name__}: {exc}", "InternalError")
    result.execution_time = time.monotonic() - job.started
    progress.finished(result)


def _timed(job: _TableJob, name: str):
    class _Timer:
        def __enter__(self):
            self.t0, self.at = time.monotonic(), utc_now()
            return self

        def __exit__(self, *exc):
            job.result.timing.append(StepTiming(name, self.at, utc_now(),
                                                time.monotonic() - self.t0))
            return False
    return _Timer()


def _publish(spark, plan: Plan, job: _TableJob, console: Console) -> None:
    from mirrorspec.spark.publisher import publish_table

    with _timed(job, "publish"):
        published = publish_table(spark, job.table, plan, console)
    result = job.result
    result.files_published.extend(published.files_written)
    result.rows_published += int(published.rows or 0)
    result.held_back.extend(published.held_back or [])
    if published.status == "Failed":
        error = published.error or {}
        result.fail(_error_text(error) or "publishing failed", error.get("errorCode"))


def _mirror(spark, plan: Plan, job: _TableJob, console: Console, step: str) -> None:
    from mirrorspec.spark.engine import MirrorOptions, mirror_tables

    table, result = job.table, job.result
    with _timed(job, step):
        mirrored = mirror_tables(spark, [mirror_target(table)], plan.warehouse,
                                 MirrorOptions(threads=1), console,
                                 landing_zone=plan.landing_zone)
    outcome = mirrored.tables[0]
    job.outcome = outcome
    result.mirror_status = outcome.status
    result.files_applied.extend(outcome.files_applied)
    result.rows_inserted += int(outcome.rows_inserted or 0)
    result.rows_updated += int(outcome.rows_updated or 0)
    result.rows_deleted += int(outcome.rows_deleted or 0)
    result.delta_version = outcome.delta_version
    result.awaiting = outcome.awaiting
    result.warnings.extend(w for w in outcome.warnings if w not in result.warnings)
    if outcome.status == "Failed":
        error = outcome.error or {}
        result.fail(_error_text(error) or "mirroring failed", error.get("errorCode"))
    elif outcome.status == "Waiting" and result.status == "success":
        result.status = "waiting"
    elif outcome.status == "NotStarted" and result.status == "success":
        result.status = "not_started"


def mirror_target(table: TablePlan):
    """The engine's MirrorTarget for a planned table."""
    from mirrorspec.spark.engine import MirrorTarget

    return MirrorTarget(table.unique_id, table.schema, table.name, table.landing_path,
                        table.delta_path, table.deletion_vectors)


def _error_text(error: dict) -> str:
    message = str(error.get("message") or "")
    file = error.get("file")
    if file and str(file) not in message:
        where = f"{file}" + (f", row {error['row']}" if error.get("row") is not None else "")
        message = f"{where}: {message}" if message else where
    return message


# --- progress ------------------------------------------------------------------------------------

class RunProgress:
    """Tables done / running / failed and rows/s: a rich progress bar for people, events for JSON.

    One line per finished table in both modes (dbt style), so logs keep the story.
    """

    def __init__(self, console: Console, total: int):
        self.console = console
        self.total = total
        self.done = 0
        self.failed = 0
        self.running: set[str] = set()
        self.rows = 0
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self._progress = None
        self._task = None
        self._progress = console.progress()

    def __enter__(self):
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(self._description(), total=self.total)
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False

    def rows_per_second(self) -> float:
        elapsed = time.monotonic() - self.t0
        return self.rows / elapsed if elapsed > 0 else 0.0

    def _description(self) -> str:
        return (f"{self.done} done, {len(self.running)} running, {self.failed} failed, "
                f"{self.rows_per_second():,.0f} rows/s")

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done, description=self._description())

    def started(self, unique_id: str) -> None:
        with self.lock:
            self.running.add(unique_id)
            self._refresh()
        if self.console.log_format == "json":
            self.console.event("table_started", f"START {unique_id}", table=unique_id,
                               running=len(self.running), done=self.done, failed=self.failed,
                               total=self.total)

    def finished(self, result: TableRunResult) -> None:
        with self.lock:
            self.running.discard(result.unique_id)
            self.done += 1
            self.failed += int(result.failed)
            self.rows += result.rows_changed + result.rows_published
            index = self.done
            rate = self.rows_per_second()
            self._refresh()
        label = {"success": "OK", "error": "ERROR", "waiting": "WAITING",
                 "not_started": "NOT STARTED", "skipped": "SKIP"
                 }.get(result.status, result.status.upper())
        text = (f"{index} of {self.total} {label} {result.unique_id}: "
                f"{len(result.files_published)} file(s) published, "
                f"{len(result.files_applied)} applied, +{result.rows_inserted} "
                f"~{result.rows_updated} -{result.rows_deleted} rows "
                f"in {result.execution_time:.1f}s")
        if result.status == "waiting" and result.awaiting:
            text += f" (awaiting {result.awaiting})"
        if result.error:
            text += f"\n    {result.error}"
        kind = {"error": "error", "waiting": "warning", "not_started": "info"
                }.get(result.status, "success")
        self.console.event(kind if self.console.log_format == "text" else "table_finished", text,
                           table=result.unique_id, status=result.status, done=self.done,
                           running=len(self.running), failed=self.failed, total=self.total,
                           rows_per_second=round(rate, 1), error=result.error)


def summary_rows(results: RunResults) -> list[list[Any]]:
    """Rows of the end-of-run summary table."""
    rows = []
    for r in results.results:
        rows.append([r.unique_id, r.status, r.mirror_status or "", len(r.files_published),
                     len(r.files_applied), r.rows_inserted, r.rows_updated, r.rows_deleted,
                     f"{r.execution_time:.1f}s"])
    return rows


SUMMARY_COLUMNS = ("table", "status", "mirror status", "published", "applied", "inserted",
                   "updated", "deleted", "time")
