"""Operating on mirrored tables with Spark: `maintain` (purge deletion vectors, OPTIMIZE,
VACUUM), `reconcile` (a table against a trusted snapshot of its source) and `replay` (a table
against its rebuild from the landing files it applied) — for the commands of those names and
`Project.maintain`, `.reconcile`, `.replay`.

Each checks its arguments and local paths before Spark starts (URIs right after, through the
session: `context.sessions.local_then_session`), says its phases on the console (the stage-task
bar while Spark works) and returns what it found; `*_failure` is the verdict the command line
exits 1 on. Spark is imported only inside the calls.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from mirrorspec.base.errors import FailedRun, MirrorspecError, UsageError
from mirrorspec.context.threads import DEFAULT_THREADS

if TYPE_CHECKING:
    from mirrorspec.artifacts.plan import Plan, TablePlan
    from mirrorspec.artifacts.reconciliation import Reconciliation, Replay
    from mirrorspec.base.files import Files
    from mirrorspec.context.project import ProjectContext


def spelled(name: str, value: Any, api: bool) -> str:
    """An argument as its door spells it in a message: `--show -1` or `show=-1`."""
    return f"{name}={value!r}" if api else f"--{name.replace('_', '-')} {value}"


def _live_progress(console: Any, steps: int, spark: Any = None) -> Any:
    """Phase lines and the stage-task bar (timed lines in a log) once Spark runs (`spark` now,
    or `attach` + `start` later)."""
    from mirrorspec.spark.platform.live import LiveProgress

    progress = LiveProgress(console, steps, spark, rates=False, steps=True)
    if spark is not None:
        progress.start()
    return progress


# --- maintain ---------------------------------------------------------------------------------

@dataclass
class TableMaintained:
    """One table's maintenance: the steps done ("purged 2 file(s)", …) or the error."""

    unique_id: str
    done: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class MaintainResult:
    """What `maintain` did, per table (tables without a Delta table yet are not listed)."""

    tables: list[TableMaintained] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        """The unique ids of the tables whose maintenance failed."""
        return [t.unique_id for t in self.tables if t.error is not None]

    def raise_if_failed(self) -> "MaintainResult":
        """FailedRun naming the tables that failed; else self."""
        if self.failed:
            raise FailedRun(f"{len(self.failed)} table(s) failed: {', '.join(self.failed)}",
                            hint="see the errors above; the other tables were maintained")
        return self


def maintain(project: "ProjectContext", tables: Sequence[str] = (), select: Sequence[str] = (),
             exclude: Sequence[str] = (), state_path: str | None = None, purge: bool = True,
             optimize: bool = True, vacuum: bool = True, retain_hours: float | None = None,
             allow_short_retention: bool = False,
             threads: int = DEFAULT_THREADS) -> MaintainResult:
    """Apply each chosen table's `deletion_vectors` switch, then purge, OPTIMIZE and VACUUM as
    asked, `threads` tables at once. The tables: `tables` (names) and `select`/`exclude`; all
    of the project's by default. A VACUUM retention below a table's
    `delta.deletedFileRetentionDuration` is refused before Spark unless
    `allow_short_retention`. One table's failure doesn't stop the others."""
    from mirrorspec.operate.retention import check_retention
    from mirrorspec.readers.delta import open_table
    from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError

    console = project.console
    plan = project.load().plan
    present = []
    for table in _chosen(plan, tuple(tables), tuple(select), tuple(exclude), state_path,
                         console):
        try:
            open_table(table.delta_path, table.unique_id)
        except InspectError:
            console.warning(f"{table.unique_id}: no Delta table yet, nothing to maintain",
                            table=table.unique_id)
            continue
        except DeltaRsUnsupported:
            pass  # Spark will read it
        if vacuum and retain_hours is not None:
            check_retention(table.unique_id, retain_hours, _retention_hours(table.delta_path),
                            allow_short_retention)
        present.append(table)
    if not present:
        return MaintainResult()
    from mirrorspec.spark.ops.maintain import MaintainSteps

    steps = MaintainSteps(purge, optimize, vacuum, retain_hours, allow_short_retention)
    return _maintain_tables(plan, present, steps, threads, console, project.warm_server)


def _maintain_tables(plan: "Plan", present: list["TablePlan"], steps: Any, threads: int,
                     console: Any, warm: bool) -> MaintainResult:
    from concurrent.futures import as_completed

    from mirrorspec.base.interrupts import worker_pool
    from mirrorspec.readers.storage import plan_storage_options
    from mirrorspec.spark.ops.inspect import safe_message
    from mirrorspec.spark.ops.maintain import maintain_table
    from mirrorspec.spark.platform.live import LiveProgress
    from mirrorspec.spark.platform.session import start_session

    spark = start_session(plan, console, warm=warm)  # the warm server when one runs
    storage = plan_storage_options(plan)
    result = MaintainResult()

    def one(table: "TablePlan"):
        progress.started(table.unique_id)
        return maintain_table(spark, table.unique_id, table.delta_path, table.deletion_vectors,
                              steps, progress)

    # Tables in parallel (each in its own session): on small tables Delta's commands wait on the
    # driver more than they compute, so the tables' waits overlap. Each step says when it
    # starts and ends; the bar (or a line every 10 s in a log) counts tables and stage tasks.
    with LiveProgress(console, len(present), spark, rates=False) as progress, \
            worker_pool(min(threads, len(present)), "mirrorspec-maintain") as pool:
        jobs = {pool.submit(one, table): table for table in present}
        for done in as_completed(jobs):
            table = jobs[done]
            try:
                outcome = done.result()
            except Exception as exc:  # noqa: BLE001 - one table's failure doesn't stop the others
                message = safe_message(exc).strip().splitlines()[0]
                result.tables.append(TableMaintained(table.unique_id, error=message))
                progress.finish(table.unique_id, failed=True)
                console.error(f"{table.unique_id}: {message}", table=table.unique_id)
                continue
            progress.finish(table.unique_id)
            result.tables.append(TableMaintained(table.unique_id, list(outcome.done)))
            console.result(f"{table.unique_id}: " + ("; ".join(outcome.done) or "nothing to do"),
                           table=table.unique_id, done=outcome.done)
            _say_readers(console, table, storage)
    return result


def _chosen(plan: "Plan", names: tuple[str, ...], select: tuple[str, ...],
            exclude: tuple[str, ...], state_path: str | None, console: Any) -> list["TablePlan"]:
    from mirrorspec.project.selection import resolve_table, select_with_warnings

    if names and not (select or exclude):
        return list({t.unique_id: t for t in (resolve_table(plan, n) for n in names)}.values())
    tables = select_with_warnings(plan, select, exclude, state_path=state_path, console=console)
    named = [resolve_table(plan, n) for n in names]
    return list({t.unique_id: t for t in named + tables}.values())


def _retention_hours(delta_path: str) -> float:
    """The table's delta.deletedFileRetentionDuration in hours, read without Spark."""
    from mirrorspec.operate.retention import RETENTION_PROPERTY, interval_hours
    from mirrorspec.readers.delta import table_uri

    try:
        from deltalake import DeltaTable

        configuration = DeltaTable(table_uri(delta_path)).metadata().configuration
    except Exception:  # noqa: BLE001 - unreadable here: Delta's own check still applies
        configuration = {}
    return interval_hours(configuration.get(RETENTION_PROPERTY))


def _say_readers(console: Any, table: "TablePlan", storage: dict[str, str]) -> None:
    """Which readers open the table now, and why the others refuse it (readers/compat.py)."""
    from mirrorspec.readers.compat import summary, verdicts
    from mirrorspec.readers.delta import open_table
    from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError

    try:
        found = verdicts(open_table(table.delta_path, table.unique_id, storage_options=storage))
    except (DeltaRsUnsupported, InspectError) as exc:
        console.info(f"{table.unique_id}: readers not checked (delta-rs can't open it: {exc})",
                     table=table.unique_id)
        return
    opening, refusing = summary(found)
    console.result(f"{table.unique_id}: {opening}", table=table.unique_id,
                   readers={v.reader: v.opens for v in found})
    for line in refusing:
        hint = ("; set `deletion_vectors: false` on the table and run `mirrorspec maintain` "
                "again, or use `mirrorspec export`" if "deletionVectors" in line else
                "; use `mirrorspec export` for it (docs/readers.md)")
        console.warning(f"{table.unique_id}: {line}{hint}", table=table.unique_id)


# --- reconcile --------------------------------------------------------------------------------

def check_as_of(version: int | None, timestamp: str | None, api: bool = False) -> None:
    """`version` or `timestamp`, not both; a version is 0 or more."""
    if version is not None and timestamp is not None:
        raise MirrorspecError("pass version= or timestamp=, not both" if api else
                              "pass --version or --timestamp, not both")
    if version is not None and version < 0:
        raise UsageError(f"{spelled('version', version, api)}: give a Delta version (0 or more)")


def check_output(output: str | None, api: bool = False) -> None:
    """A file to write the differences to: its folder must exist, said before Spark starts,
    not after the comparison."""
    folder = os.path.dirname(os.path.abspath(output)) if output else None
    if folder and not os.path.isdir(folder):
        raise UsageError(f"{spelled('output', output, api)}: the folder {folder} does not exist")


def reconcile(load_plan: Callable[[], "Plan | None"], table: str, source: str, *,
              warehouse: str | None = None,
              key: str | None = None, version: int | None = None, timestamp: str | None = None,
              dbtable: str | None = None, user_secret: str | None = None,
              password_secret: str | None = None, source_format: str | None = None,
              master: str | None = None, conf: Mapping[str, str] | None = None,
              console: Any, warm_server: bool = True, api: bool = False) -> "Reconciliation":
    """Compare the mirrored `table` (a name in the plan `load_plan()` gives, schema.table in
    `warehouse`, or a Delta folder) with `source` (a Delta/Parquet/CSV path or a jdbc: URL) by
    `key` (comma-separated; default: the key columns the engine recorded), as of `version` or
    `timestamp`. The plan is loaded after the snapshot's local path is checked. `warm_server`:
    Spark through the warm server when one runs and the snapshot is local. `api`: the
    messages name arguments, not flags."""
    check_as_of(version, timestamp, api)
    extra_conf = dict(conf or {})
    local = source[len("file:"):] if source.startswith("file:") else source
    if not source.startswith("jdbc:") and "://" not in source and not os.path.exists(local):
        raise UsageError(f"{spelled('against', source, api)}: the source snapshot does not "
                         "exist", hint="pass a Delta/Parquet/CSV path or a jdbc: URL")
    plan = load_plan()
    # a jdbc: source needs its driver's jar set (fetched once: python -m mirrorspec.spark.platform.jars)
    if source.startswith("jdbc:postgresql:"):
        extra_conf.setdefault("mirrorspec.extra.jars", "postgres")
    # the warm server reaches local snapshots only (a URI or a JDBC driver needs Spark here)
    local_source = not source.startswith("jdbc:") and "://" not in source
    warm = warm_server and local_source
    if local_source:  # a relative path means this folder, not the Spark server's
        from mirrorspec.base.files import normalize

        source = normalize(source)
    from mirrorspec.context.sessions import local_then_session, start_spark

    (unique_id, path, keys), spark = local_then_session(
        lambda files: _locate_reconciled(table, warehouse, key, source, plan, files, api),
        lambda: start_spark(plan, master, extra_conf, console, warm=warm))
    from mirrorspec.security.jdbc_urls import redact
    from mirrorspec.spark.ops import reconcile as rec

    spark = spark or start_spark(plan, master, extra_conf, console, warm=warm)
    # phase lines and the stage-task bar (or timed lines in a log) while Spark works
    progress = _live_progress(console, 3, spark)
    try:
        reading = progress.begin(unique_id, "read mirror", "reading the mirror")
        mirror = rec.read_mirror(spark, path, version, timestamp)
        reading.done(f"read the mirror: {len(mirror.columns)} column(s)",
                     columns=len(mirror.columns))
        reading = progress.begin(unique_id, "read source", "reading the source")
        snapshot = rec.read_source(spark, source, dbtable, user_secret, password_secret,
                                   source_format)
        reading.done(f"read the source: {len(snapshot.columns)} column(s)",
                     columns=len(snapshot.columns))
        name = redact(source) + (f" ({dbtable})" if dbtable else "")
        return rec.reconcile(spark, mirror, snapshot, keys, unique_id, name, version, progress)
    finally:
        progress.stop()


def _locate_reconciled(table: str, warehouse: str | None, key: str | None, source: str,
                       plan: "Plan | None", files: "Files",
                       api: bool) -> tuple[str, str, list[str]]:
    """(unique id, Delta path, key columns) of TABLE, and a URI snapshot checked to exist, each
    path through `files` (local before Spark starts, URIs through the session)."""
    from mirrorspec.base.files import is_remote
    from mirrorspec.context.tables import locate_table
    from mirrorspec.progress.mirror import table_keys

    found = locate_table(table, warehouse, plan, files)
    if not source.startswith("jdbc:") and is_remote(source) and not files.exists(source):
        raise UsageError(f"{spelled('against', source, api)}: the source snapshot does not "
                         "exist", hint="pass a Delta/Parquet/CSV path or a jdbc: URL")
    return found.unique_id, found.path, table_keys(found.path, key, files.fs(found.path))


def reconcile_failure(result: "Reconciliation", strict_columns: bool = False
                      ) -> FailedRun | None:
    """The FailedRun of a table that differs from its source (or, with `strict_columns`, has
    columns on one side only); else None."""
    one_sided = result.only_in_mirror or result.only_in_source
    if not result.equal:
        return FailedRun(f"{result.table} differs from {result.source}")
    if strict_columns and one_sided:
        return FailedRun(f"{result.table}: columns on one side only (--strict-columns)")
    return None


# --- replay -----------------------------------------------------------------------------------

def check_scratch(scratch: str | None, api: bool = False) -> None:
    """A folder to rebuild in must be empty (or not there yet)."""
    if scratch and os.path.isdir(scratch) and os.listdir(scratch):
        raise MirrorspecError(f"{spelled('scratch', scratch, api)} is not empty")


def replay(plan: "Plan | None", table: str, *, warehouse: str | None = None,
           landing_path: str | None = None, key: str | None = None,
           scratch: str | None = None, master: str | None = None,
           conf: Mapping[str, str] | None = None, console: Any, warm_server: bool = True,
           api: bool = False) -> "Replay":
    """Rebuild `table` (a name in `plan`, schema.table in `warehouse`, or a Delta folder) from
    the landing files it applied (in `landing_path` when they moved) and reconcile it with the
    live table by `key`. The rebuild goes to `scratch` (kept) or a temporary folder
    (removed)."""
    from mirrorspec.artifacts.reconciliation import Replay
    from mirrorspec.context.sessions import local_then_session, start_spark

    check_scratch(scratch, api)
    extra_conf = dict(conf or {})
    progress = _live_progress(console, 5)  # history, staging, replaying, reading, counting
    try:
        reading = progress.begin(table, "history", "reading its history")
        (located, history, pending, keys, lfs), spark = local_then_session(
            lambda files: _locate_replayed(table, warehouse, landing_path, key, plan, files,
                                           api),
            lambda: start_spark(plan, master, extra_conf, console, warm=warm_server))
        unique_id, folder, found = located.unique_id, str(history.landing_path), history.paths
        reading.done(f"read its history: {len(found)} applied file(s)", files=len(found))
        if pending:
            console.info(f"{unique_id}: {len(pending)} pending file(s) not replayed (not "
                         f"applied yet): {', '.join(pending[:5])}")
        # absolute: a relative path means this folder, not the warm Spark server's
        work = (os.path.abspath(scratch) if scratch
                else tempfile.mkdtemp(prefix="mirrorspec-replay-"))
        try:
            if scratch:
                os.makedirs(scratch, exist_ok=True)
                check_scratch(scratch, api)
            result = _rebuild_and_compare(
                located, folder, found, history.mode, lfs, keys, work, progress,
                lambda: spark or start_spark(plan, master, extra_conf, console,
                                             warm=warm_server),
                console)
        finally:
            if not scratch:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        progress.stop()
    return Replay(result, history.files, pending)


def _rebuild_and_compare(located: Any, folder: str, found: list[str], mode: Any, lfs: Any,
                         keys: list[str], work: str, progress: Any, session: Any,
                         console: Any) -> "Reconciliation":
    """Stage the applied files in `work`, mirror them into a new warehouse there, and
    reconcile the live table with the rebuild."""
    from mirrorspec.progress.mirror import resolve_table
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone
    from mirrorspec.spark.ops import reconcile as rec
    from mirrorspec.spark.ops import replay as rp

    unique_id = located.unique_id
    parent = os.path.basename(os.path.dirname(os.path.normpath(folder)))
    schema = parent[:-len(".schema")] if parent.endswith(".schema") else None
    name = os.path.basename(os.path.normpath(folder))
    staging = progress.begin(unique_id, "stage", f"staging {len(found)} file(s)")
    landing = rp.stage(folder, found, work, schema, name, mode, lfs)
    staging.done(f"staged {len(found)} file(s) in {work}", files=len(found))
    rebuilt_warehouse = os.path.join(work, "warehouse")
    spark = session()
    progress.attach(spark)
    progress.start()
    replaying = progress.begin(unique_id, "replay", f"replaying {len(found)} file(s) into "
                                                    f"{rebuilt_warehouse}")
    run = mirror_landing_zone(spark, landing, rebuilt_warehouse,
                              MirrorOptions(threads=1, move_processed=False), console)
    failed = [t for t in run.tables if t.status == "Failed"]
    if failed:
        raise MirrorspecError(f"{unique_id}: replay stopped: "
                              f"{failed[0].error.get('message')}")
    rows = sum(t.processed_rows for t in run.tables)
    replaying.done(f"replayed {len(found)} file(s), {rows} change row(s)",
                   files=len(found), rows=rows)
    _rebuilt_id, rebuilt_path = resolve_table(unique_id, rebuilt_warehouse)
    reading = progress.begin(unique_id, "read", "reading the live table and the replay")
    live, rebuilt = rec.read_mirror(spark, located.path), rec.read_mirror(spark, rebuilt_path)
    reading.done(f"read the live table and the replay: {len(live.columns)} and "
                 f"{len(rebuilt.columns)} column(s)", columns=len(live.columns))
    return rec.reconcile(spark, live, rebuilt, keys, unique_id,
                         f"replay of {len(found)} file(s)", progress=progress)


def _locate_replayed(table: str, warehouse: str | None, landing_path: str | None,
                     key: str | None, plan: "Plan | None", files: "Files", api: bool = False):
    """The table, its applied-file history, its pending files, its key columns and the
    filesystem of its landing folder, each path checked through `files` (local before Spark
    starts, URIs through the session)."""
    from mirrorspec.context.tables import locate_table
    from mirrorspec.progress.mirror import table_keys
    from mirrorspec.spark.ops import replay as rp

    found = locate_table(table, warehouse, plan, files)
    history = rp.read_history(found.path, landing_path, files)
    recorded = history.landing_path
    if not landing_path and found.landing_path and not (
            recorded and files.fs(recorded).is_dir(recorded)):
        history = rp.read_history(found.path, found.landing_path, files)  # where it is now
    folder = history.landing_path
    if not folder or not files.fs(folder).is_dir(folder):
        raise MirrorspecError(f"{found.unique_id}: its landing folder {folder} is not there",
                              hint=f"pass {'landing_path=' if api else '--landing-path'} with "
                                   "where the table's files are now")
    if history.missing:
        missing = history.missing
        shown_names = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more"
                                                if len(missing) > 5 else "")
        raise MirrorspecError(
            f"{found.unique_id}: history incomplete: {len(missing)} of "
            f"{len(history.paths) + len(missing)} applied file(s) are gone (purged from "
            f"{folder}/_ProcessedFiles): {shown_names}",
            hint="replay needs every applied file; raise mirror --retention-days to keep them")
    lfs = files.fs(folder)
    pending = rp.pending_files(folder, history.files, lfs)
    return found, history, pending, table_keys(found.path, key, files.fs(found.path)), lfs


def replay_failure(result: "Replay") -> FailedRun | None:
    """The FailedRun of a table that differs from the replay of its own landing files."""
    if result.equal:
        return None
    return FailedRun(f"{result.reconciliation.table} differs from the replay of its own landing "
                     "files (changed behind the mirror's back, or an engine bug)",
                     hint="'missing' rows are in the replay but not in the live table; "
                          "'extra' rows only in the live table")
