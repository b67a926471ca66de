"""`mirrorspec run`: execute a compiled plan — publish feeds into the landing zone, mirror it.

Per selected table, in a thread pool (`threads`): a feed table (steps hold PublishFeed) first
mirrors what is already pending in its landing folder (the publisher completes partial rows from
the mirrored table, so it must be current), then publishes the new feed files, then mirrors them;
a landing_zone table is mirrored. One table's failure never stops another. The engine
(`mirrorspec.spark.mirror.engine`) and the publisher (`mirrorspec.spark.publish.publisher`) do the work; this
module orders it, reports progress, and writes `target/run_results.json` and the monitoring JSON.
"""

from __future__ import annotations

import threading
import time
from mirrorspec.base.interrupts import worker_pool
from dataclasses import dataclass, field
from typing import Any, Sequence

from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.base.console import Console, NullConsole
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.artifacts.run_results import (STATUS_OF_MIRROR, RunResults, StepTiming, TableRunResult,
                                     fabric_status, utc_now)
from mirrorspec.project.selection import select_with_warnings
from mirrorspec.landing import deploy
from mirrorspec.landing.processed import LandingFiles
from mirrorspec.spark.platform import hadoop_fs
from mirrorspec.spark.platform.live import LiveProgress, table_line
from mirrorspec.spark.platform.session import start_session



@dataclass
class _TableJob:
    table: TablePlan
    result: TableRunResult
    outcome: Any = None  # the engine's last TableOutcome, for the monitoring JSON
    started: float = field(default_factory=time.monotonic)
    refresh: bool = False  # --full-refresh of a feed: the publisher publishes aside, then swaps


def run_plan(plan: Plan, select: Sequence[str] = (), exclude: Sequence[str] = (), threads: int = 4,
             full_refresh: bool = False, publish_only: bool = False, state_path=None,
             console: Console | None = None, spark=None, target_dir=None,
             args: dict[str, Any] | None = None, command: str = "run",
             warmer=None, fail_fast: bool = False, warm_server: bool = False) -> RunResults:
    """Publish and mirror the selected tables of `plan`; see the module docstring.

    `warmer` (a `warm.SnapshotWarmer`, `run --watch`) gets the tables that committed, so their
    next snapshot is built while the next pass waits. `fail_fast`: once a table fails, the
    tables not started yet end `skipped` (those running finish). `warm_server`: connect to the
    warm Spark server when one runs for the plan's settings (the CLI; a notebook keeps its own
    Spark), instead of starting a JVM.

    Writes `<target_dir>/run_results.json` when `target_dir` is given, and the monitoring JSON
    (WAREHOUSE/replicator.json, tables.json) for the mirrored tables. Never raises for a table
    failure: check `RunResults.failed`.
    """
    console = console or NullConsole()
    started = time.monotonic()
    results = RunResults(command=command, args=dict(args or {}),
                         invocation_id=console.invocation_id)  # as in the JSON log events
    tables = select_with_warnings(plan, select, exclude, state_path=state_path, console=console,
                                  results_dir=target_dir)
    jobs = [_TableJob(t, TableRunResult(t.unique_id)) for t in tables]
    stop = threading.Event() if fail_fast else None
    if warmer is not None:
        warmer.before_pass()  # warming waits while this pass runs
    committed: list[str] = []
    dropped: list[Any] = []
    try:
        if jobs:
            spark = spark or start_session(plan, console, warm=warm_server)
            files = LandingFiles(hadoop_fs.remote_resolver(spark))
            deploy.write_partner_events(plan, files, console)
            for job in jobs:
                _prepare(plan, job, files, full_refresh, console)
            dropped = [] if publish_only else _drop_deleted(spark, plan, select, exclude,
                                                            console)
            progress = RunProgress(console, len(jobs), spark)
            counting = progress.counting(console)
            with progress:
                with worker_pool(max(1, threads), "mirrorspec-table") as pool:
                    futures = [pool.submit(_run_table, spark, plan, job, files, publish_only,
                                           counting, progress, stop) for job in jobs]
                    for future in futures:
                        future.result()
            if not publish_only:
                _write_status(plan, jobs, files, console, dropped)
            committed = [job.outcome.delta_path for job in jobs
                         if job.outcome is not None and job.outcome.files_applied]
    finally:
        if warmer is not None:
            warmer.after_pass(spark, committed)
    results.results = [job.result for job in jobs] + [_dropped_result(o) for o in dropped]
    results.elapsed_time = time.monotonic() - started
    if target_dir is not None:
        try:
            results.write(target_dir)
        except OSError as exc:
            from mirrorspec.spark.platform.failures import as_storage_error

            error = as_storage_error(exc, "run_results.json", "could not write run_results.json")
            if error is None:
                raise
            raise error from None
    return results


def _drop_deleted(spark, plan: Plan, select: Sequence[str], exclude: Sequence[str],
                  console: Console) -> list[Any]:
    """Drop the Delta tables whose landing folder is gone, as `mirror` does (and Fabric): a
    table removed from the project, or renamed, once its folder is deleted. Tables of the plan
    are never dropped (their run recreates the folder); `--select`/`--exclude` patterns
    (names, `schema.table`, globs) choose among the others."""
    from mirrorspec.spark.mirror.engine import (MirrorOptions, discover_targets,
                                                drop_deleted_tables)

    if not hadoop_fs.filesystem_for(plan.landing_zone, spark).is_dir(plan.landing_zone):
        return []
    present = {t.unique_id for t in discover_targets(plan.landing_zone, plan.warehouse, spark)}
    present |= {t.unique_id for t in plan.tables}
    return drop_deleted_tables(spark, plan.landing_zone, plan.warehouse, present,
                               MirrorOptions(select=tuple(select)), console,
                               exclude=tuple(exclude))


def _dropped_result(outcome: Any) -> TableRunResult:
    """The run result of a table `_drop_deleted` dropped."""
    result = TableRunResult(outcome.unique_id)
    result.mirror_status = outcome.status  # Dropped
    return result


def _write_status(plan: Plan, jobs: list[_TableJob], files: LandingFiles,
                  console: Console, dropped: Sequence[Any] = ()) -> None:
    """The monitoring JSON: the engine's outcomes, and `Failed` for a table that failed before
    or outside the engine (its `_metadata.json`, its publish), keeping its cumulative metrics.
    When the write itself fails (disk full), every table's result says so (`StorageError`)."""
    from mirrorspec.spark.mirror.engine import write_monitoring
    from mirrorspec.artifacts.status import read_status

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
            outcome = {"schema": table.warehouse_schema, "name": table.name,
                       "status": fabric_status(job.result),
                       "processed_rows": metrics.get("processedRows", 0),
                       "processed_bytes": metrics.get("processedBytes", 0),
                       "seconds": job.result.execution_time,
                       "error": {"errorCode": job.result.error_code or "RunFailed",
                                 "message": job.result.error}}
        if outcome is not None:
            outcomes.append(outcome)
    outcomes.extend(dropped)
    if not outcomes:
        return
    error = write_monitoring(filesystem, plan.warehouse, outcomes, console)
    if error is not None:
        for job in jobs:
            job.result.fail(f"StorageError: {error}", "StorageError")


# --- preparing the landing zone ----------------------------------------------------------------

def _prepare(plan: Plan, job: _TableJob, files: LandingFiles, full_refresh: bool,
             console: Console) -> None:
    """Full refresh (when asked), then the table's `_metadata.json`; failures mark the table.
    A feed table's full refresh waits for its publish step (`spark.publish.refresh`), which
    checks the feed before anything is dropped and writes the new `_metadata.json` itself."""
    table = job.table
    try:
        if full_refresh and table.publishes:
            job.refresh = True
            return
        if full_refresh:
            deploy.full_refresh(plan, table, files, console)
        deploy.deploy_metadata(table, files, console)
    except MirrorspecError as exc:
        job.result.fail(exc.render(), getattr(exc, "code", None))
    except OSError as exc:
        job.result.fail(*_unexpected(job.table.unique_id, exc))


# --- one table -----------------------------------------------------------------------------------

def _run_table(spark, plan: Plan, job: _TableJob, files: LandingFiles, publish_only: bool,
               console: Console, progress: "RunProgress",
               stop: threading.Event | None = None) -> None:
    table, result = job.table, job.result
    if stop is not None and stop.is_set() and not result.failed:
        result.status, result.skip_reason = "skipped", "--fail-fast: an earlier table failed"
    if result.failed or result.status == "skipped":  # preparing it failed, or --fail-fast
        _stop_if_failed(result, stop)
        progress.finished(result)
        return
    progress.started(table.unique_id)
    job.started = time.monotonic()
    try:
        feed = table.publishes
        mirror = table.mirrors and not publish_only
        if feed and mirror and not job.refresh and files.data_files(table.landing_path):
            _mirror(spark, plan, job, console, "mirror (catch up)")
        if feed and not result.failed:
            _publish(spark, plan, job, console)
        if mirror and not result.failed:
            _mirror(spark, plan, job, console, "mirror")
    except MirrorspecError as exc:
        result.fail(exc.render(), getattr(exc, "code", None))
    except Exception as exc:  # noqa: BLE001 - one table's crash must not stop the others
        result.fail(*_unexpected(table.unique_id, exc))
    if result.failed and result.mirror_status not in (None, "Failed"):
        result.mirror_status = "Failed"  # what tables.json says of it (see _write_status)
    result.execution_time = time.monotonic() - job.started
    _stop_if_failed(result, stop)
    progress.finished(result)


def _unexpected(unique_id: str, exc: BaseException) -> tuple[str, str]:
    """(message, code) of a failure nothing classified: `StorageError` for an I/O failure,
    else `InternalError`; one line either way, the trace (Java's too) in the log file."""
    from mirrorspec.base.logfile import log_exception
    from mirrorspec.spark.platform.failures import as_storage_error, short

    error = as_storage_error(exc, unique_id, "I/O error")
    if error is not None:
        return error.render(), error.code
    log = log_exception(f"{unique_id}: InternalError", exc)
    return f"{type(exc).__name__}: {short(exc)}; details in {log}", "InternalError"


def _stop_if_failed(result: TableRunResult, stop: threading.Event | None) -> None:
    if stop is not None and result.failed:
        stop.set()


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
    from mirrorspec.spark.publish.publisher import publish_table
    from mirrorspec.spark.publish.refresh import refresh_table

    with _timed(job, "publish"):
        publish = refresh_table if job.refresh else publish_table
        published = publish(spark, job.table, plan, console)
    result = job.result
    result.files_published.extend(published.files_written)
    result.rows_published += int(published.rows or 0)
    result.held_back.extend(published.held_back or [])
    if published.status == "Busy":
        from mirrorspec.spark.publish.publisher import busy_message

        result.warnings.append(busy_message(job.table.unique_id))
    for kind, count in (published.skipped or {}).items():
        result.messages_skipped[kind] = result.messages_skipped.get(kind, 0) + count
    if published.status == "Failed":
        error = published.error or {}
        result.fail(_error_text(error) or "publishing failed", error.get("errorCode"))


def _mirror(spark, plan: Plan, job: _TableJob, console: Console, step: str) -> None:
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_tables

    table, result = job.table, job.result
    with _timed(job, step):
        mirrored = mirror_tables(spark, [mirror_target(table)], plan.warehouse,
                                 MirrorOptions(threads=1), console,
                                 landing_zone=plan.landing_zone)
    outcome = mirrored.tables[0]
    job.outcome = outcome
    apply_outcome(result, outcome)


def apply_outcome(result: TableRunResult, outcome: Any) -> None:
    """Add an engine TableOutcome to the table's run result (status, files, rows, error)."""
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
    elif outcome.status in ("Waiting", "NotStarted") and result.status == "success":
        result.status = STATUS_OF_MIRROR[outcome.status]


def mirror_target(table: TablePlan):
    """The engine's MirrorTarget for a planned table."""
    from mirrorspec.spark.mirror.engine import MirrorTarget

    return MirrorTarget(table.unique_id, table.schema, table.name, table.landing_path,
                        table.delta_path, table.deletion_vectors, table.settle_seconds,
                        table.change_data_feed)


def _error_text(error: dict) -> str:
    message = str(error.get("message") or "")
    file = error.get("file")
    if file and str(file) not in message:
        where = f"{file}" + (f", row {error['row']}" if error.get("row") is not None else "")
        message = f"{where}: {message}" if message else where
    return message


# --- progress ------------------------------------------------------------------------------------

class RunProgress(LiveProgress):
    """Tables done / running / failed, stage tasks and rows/s (`live.LiveProgress`), with run's
    line per finished table: files published and applied, rows, seconds, the error.

    Rows count as soon as the publisher or the engine announces them (`counting(console)`
    wraps the console the tables report through), so rows/s moves during a long MERGE, not
    only when a table finishes."""

    def finished(self, result: TableRunResult) -> None:
        index, rate = self.finish(result.unique_id, result.failed,
                                  result.rows_changed + result.rows_published)
        text = table_line(index, self.total, result.status, result.unique_id,
                          f"{len(result.files_published)} file(s) published, "
                          f"{len(result.files_applied)} applied, +{result.rows_inserted} "
                          f"~{result.rows_updated} -{result.rows_deleted} rows",
                          result.execution_time)
        if result.status == "waiting" and result.awaiting:
            text += f" (awaiting {result.awaiting})"
        if result.skip_reason:
            text += f" ({result.skip_reason})"
        if result.error:
            text += f"\n    {result.error}"
        self.table_finished(text, result.status, result.unique_id,
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
