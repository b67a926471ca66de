"""`mirrorspec mirror`: apply a landing zone to Delta tables, once or watching."""

from __future__ import annotations

import signal
import threading
import time

import click

from mirrorspec.commands.params import (absolute_location, get_console, lineage_options,
                                        metrics_host, metrics_port, optional_plan, parse_conf,
                                        plan_options, resolve_table_threads, spark_conf,
                                        spark_master, start_lineage, start_spark, watch_options)
from mirrorspec.base.errors import FailedRun, ProjectError
from mirrorspec.openmirroring.mirroring import PROCESSED_RETENTION_DAYS


def _watch(spark, landing_zone: str, warehouse: str, options, console, interval: float,
           stop: threading.Event, port: int | None = None, lineage=None,
           host: str = "127.0.0.1", heartbeat=None):
    """Pass after pass until `stop`: a failed table backs off (retried at once when its folder
    changes), each message is printed once while nothing about its table changes, and a pass
    line appears only when a pass applied files or a table's outcome changed."""
    from mirrorspec.spark.platform import hadoop_fs
    from mirrorspec.spark.mirror.engine import mirror_landing_zone
    from mirrorspec.landing.layout import folder_signature
    from mirrorspec.spark.mirror.warm import SnapshotWarmer
    from mirrorspec.operate.metrics import WatchMetrics
    from mirrorspec.operate.watch import Backoff, QuietConsole

    backoff, quiet = Backoff(interval), QuietConsole(console)
    metrics = WatchMetrics(port, console, host) if port is not None else None
    lfs = hadoop_fs.filesystem_for(landing_zone, spark)
    warmer = SnapshotWarmer()
    try:
        passes = 0
        while True:
            now = time.monotonic()
            signatures: dict[str, tuple] = {}

            def skip(target, now=now, signatures=signatures) -> bool:
                if target.unique_id not in backoff.failing:
                    return False
                signatures[target.unique_id] = folder_signature(lfs, target.landing_path)
                return not backoff.due(target.unique_id, now, signatures[target.unique_id])

            warmer.before_pass()  # warming waits while files are applied
            result = mirror_landing_zone(
                spark, landing_zone, warehouse, options, quiet, stop=stop, skip=skip,
                progress=True, news=lambda t: quiet.news(t.unique_id, outcome_key(t)))
            passes += 1
            if metrics is not None:
                for t in result.tables:
                    metrics.observe(t.unique_id, t.status, len(t.files_applied), t.rows_inserted,
                                    t.rows_updated, t.rows_deleted, t.landing_path,
                                    t.delta_path)
                metrics.end_pass(time.monotonic() - now)
            _send_lineage(lineage, result)
            # the next pass finds the new versions' state ready (mirrorspec/spark/mirror/warm.py)
            warmer.after_pass(spark, (t.delta_path for t in result.tables if t.files_applied))
            changed = _record_outcomes(result, backoff, quiet, lfs, signatures, now)
            applied = sum(len(t.files_applied) for t in result.tables)
            alive = heartbeat.after_pass(passes, applied, time.time()) if heartbeat else None
            if applied or changed:
                failed = sorted(backoff.failing)
                console.info(f"pass {passes}: {applied} file(s) applied"
                             + (f"; failing (backing off): {', '.join(failed)}" if failed else ""),
                             passes=passes, applied=applied, failed=failed)
            elif alive:
                console.info(alive, passes=passes, heartbeat=heartbeat.path)
            if stop.wait(interval):
                return result
    finally:
        warmer.close()
        if metrics is not None:
            metrics.close()


def _send_lineage(lineage, result) -> None:
    """OpenLineage run events of one pass (mirrorspec/observe/lineage.py)."""
    if lineage is not None:
        from mirrorspec.observe.samples import samples_from_mirror

        lineage.emit_pass(samples_from_mirror(result.tables))


def _record_outcomes(result, backoff, quiet, lfs, signatures, now) -> bool:
    """Feed a pass's outcomes to the backoff and the quiet console; True if one changed."""
    from mirrorspec.landing.layout import folder_signature

    outcomes = {}
    for t in result.tables:
        if t.status == "Failed":
            signature = signatures.get(t.unique_id) or folder_signature(lfs, t.landing_path)
            backoff.record(t.unique_id, True, now, signature)
        else:
            backoff.record(t.unique_id, False, now, None)
        outcomes[t.unique_id] = outcome_key(t)
    return quiet.end_pass(outcomes)


def outcome_key(t) -> tuple:
    """What `--watch` compares pass to pass: (status, error text, files applied)."""
    return t.status, (t.error or {}).get("message"), tuple(t.files_applied)


def failure_summary(tables, status_error: str | None = None) -> tuple[str, str]:
    """The closing error line and its hint: "fix or re-write the named file" only when a file
    is proven bad; engine, storage and conflict failures point at the log file instead."""
    from mirrorspec.spark.mirror.engine import NOT_FILE_CODES

    failed = [t for t in tables if t.status == "Failed"]
    codes = {(t.error or {}).get("errorCode") for t in failed}
    if status_error:
        codes.add("StorageError")
    hints = []
    if codes - set(NOT_FILE_CODES):
        hints.append("fix or re-write the named file and run again")
    if codes & set(NOT_FILE_CODES):
        hints.append("an engine, storage or conflict failure is not the files' fault: run "
                     "again; the log file named in its error has the details")
    what = f"{len(failed)} table(s) failed: {', '.join(t.unique_id for t in failed)}"
    if status_error:
        what = (what + "; " if failed else "") + f"StorageError: {status_error}"
    return what, "see tables.json in the warehouse; " + "; ".join(hints)


def _summary(console, result) -> None:
    rows = []
    for t in result.tables:
        note = (t.error or {}).get("message") or (f"waiting for {t.awaiting}" if t.awaiting
                                                  else "")
        rows.append([t.unique_id, t.status, len(t.files_applied), t.rows_inserted,
                     t.rows_updated, t.rows_deleted, t.processed_rows,
                     "" if t.delta_version is None else t.delta_version, note])
    console.table("mirror", ["table", "status", "files", "inserted", "updated", "deleted",
                             "processed rows", "version", "note"], rows, kind="mirror_summary")


@click.command("mirror")
@click.option("--landing-zone", default=None, callback=absolute_location,
              help="The landing zone folder (path or URI; default: the project's).")
@click.option("--warehouse", default=None, callback=absolute_location,
              help="Where the Delta tables live: WAREHOUSE/<schema>/<table> (default: the "
                   "project's).")
@click.option("--watch", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Keep polling every SECONDS until interrupted (Ctrl-C / SIGTERM).")
@click.option("--select", "-s", multiple=True,
              help="Tables to mirror: schema.table, a name or a glob such as 'sales.*'.")
@click.option("--threads", type=click.IntRange(1, 256), default=None,
              help="Tables processed concurrently (default: the profile output's `threads`, "
                   "else twice the CPU cores, 2 to 8).")
@plan_options
@spark_master
@spark_conf
@metrics_port
@metrics_host
@lineage_options
@click.option("--strict", is_flag=True,
              help="Fail a file whose __rowMarker__ is not its last column, or (Parquet) "
                   "not an integer column.")
@click.option("--retention-days", type=click.FloatRange(min=0), default=PROCESSED_RETENTION_DAYS,
              show_default=True,
              help="Days processed files stay in _ProcessedFiles.")
@click.option("--settle-seconds", type=click.FloatRange(0), default=0, show_default=True,
              metavar="SECONDS",
              help="Apply a file only once it is this old (producers that write in place).")
@click.option("--change-data-feed/--no-change-data-feed", "change_data_feed", default=None,
              help="Switch Delta's change data feed on (or off) for every table, as Fabric's "
                   "mirrored database setting does (default: a project's `change_data_feed`; "
                   "without a project each table stays as it is).")
@watch_options
def mirror(landing_zone: str | None, warehouse: str | None, watch: float | None,
           select: tuple[str, ...], threads: int | None, master: str | None, conf: tuple[str, ...],
           strict: bool, retention_days: float, settle_seconds: float = 0,
           metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
           heartbeat_every: int = 10, heartbeat_file: str | None = None,
           change_data_feed: bool | None = None, **params) -> None:
    """Mirror a landing zone into Delta tables exactly as Fabric open mirroring does.

    --landing-zone and --warehouse, or a project (--project-dir, --target: its landing zone,
    warehouse and Spark settings; given options win). The landing zone is checked before
    Spark starts."""
    from mirrorspec.operate.metrics import check_metrics_option
    from mirrorspec.operate.preflight import require_landing_zone

    check_metrics_option(metrics_port, watch)
    console = get_console()
    lineage = start_lineage(console, params)
    extra_conf = parse_conf(conf)
    try:
        plan = optional_plan(params, needed=not (landing_zone and warehouse))
    except ProjectError as exc:
        if landing_zone and warehouse:
            raise
        raise ProjectError(exc.message, exc.location,
                           hint="give --landing-zone and --warehouse, or a project "
                                "(--project-dir) whose profile names them",
                           problems=exc.problems) from None
    landing_zone = landing_zone or plan.landing_zone
    warehouse = warehouse or plan.warehouse
    require_landing_zone(landing_zone)
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    threads = resolve_table_threads(threads, plan.threads if plan is not None else None)
    # the flag wins over the project's switches, which the plan holds per table
    feeds = () if plan is None or change_data_feed is not None else tuple(
        (t.unique_id, t.change_data_feed) for t in plan.tables)
    options = MirrorOptions(threads=threads, strict=strict, retention_days=retention_days,
                            select=tuple(select), settle_seconds=settle_seconds,
                            change_data_feed=change_data_feed, feeds=feeds)
    from mirrorspec.base.files import is_remote

    # the warm Spark server (Connect) can't reach URIs: only local folders may use it
    spark = start_spark(plan, master, extra_conf, console,
                        warm=not (is_remote(landing_zone) or is_remote(warehouse)))
    stop = threading.Event()
    if watch is not None:
        def request_stop(signum, _frame):
            console.info(f"signal {signum}: stopping after the tables in progress commit")
            stop.set()
        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
    try:
        if watch is None:
            result = mirror_landing_zone(spark, landing_zone, warehouse, options, console,
                                         progress=True)
            _send_lineage(lineage, result)
        else:
            from mirrorspec.operate.heartbeat import Heartbeat

            result = _watch(spark, landing_zone, warehouse, options, console, watch, stop,
                            metrics_port, lineage, metrics_host,
                            Heartbeat(heartbeat_file, heartbeat_every))
    finally:
        if lineage is not None:
            lineage.close()
    _summary(console, result)
    if result.failed:
        raise FailedRun(*failure_summary(result.tables, result.status_error))


COMMANDS = [mirror]
