"""The mirroring engine's pass: apply a landing zone to Delta tables, exactly once, as Fabric
does. Discover the tables, drop those whose folder was deleted, run each table
(`table_run.TableRun`, its commit in `commit`) on a pool of threads, and write the monitoring
JSON. The names callers use are importable from here (`MirrorOptions`, `MirrorTarget`,
`TableOutcome` live in `targets`; `NOT_FILE_CODES`, `error_code_of`, `plain_type` in
`table_run`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import threading
from dataclasses import dataclass, replace

from mirrorspec.artifacts.run_results import STATUS_OF_MIRROR
from mirrorspec.base import files as fsmod
from mirrorspec.base.console import Console, NullConsole
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base.interrupts import worker_pool
from mirrorspec.landing import layout as landing
from mirrorspec.openmirroring import mirroring
from mirrorspec.progress.mirror import read_state
from mirrorspec.spark.mirror.table_run import (NOT_FILE_CODES, NOT_THE_FILE, TableRun,
                                              error_code_of, plain_type, table_sessions,
                                              warn_once)
from mirrorspec.spark.mirror.targets import MirrorOptions, MirrorTarget, TableOutcome
from mirrorspec.spark.platform import delta, failures, hadoop_fs
from mirrorspec.spark.platform.live import LiveProgress, table_line

__all__ = ["MirrorOptions", "MirrorResult", "MirrorTarget", "NOT_FILE_CODES", "NOT_THE_FILE",
           "TableOutcome", "discover_targets", "drop_deleted_tables", "error_code_of",
           "mirror_landing_zone", "mirror_tables", "plain_type", "selected", "table_sessions",
           "warn_once", "write_monitoring"]

_log = logging.getLogger(__name__)


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
        outcome = TableRun(spark, target, options, tables, landing_zone).run()
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

