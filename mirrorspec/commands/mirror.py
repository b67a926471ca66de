"""`mirrorspec mirror`: apply a landing zone to Delta tables, once or watching.

Parse, call, render: the job itself (where, threads, Spark, one pass or the --watch loop) is
mirrorspec/context/mirror.py's; this module finds the optional project and prints the summary
and the closing error."""

from __future__ import annotations

import click

from mirrorspec.commands.params import (absolute_location, get_console, lineage_options,
                                        metrics_host, metrics_port, optional_plan, parse_conf,
                                        plan_options, spark_conf, spark_master, start_lineage,
                                        watch_options)
from mirrorspec.base.errors import FailedRun, ProjectError
from mirrorspec.openmirroring.mirroring import PROCESSED_RETENTION_DAYS


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
    from mirrorspec.context.mirror import prepare_mirror

    job = prepare_mirror(landing_zone, warehouse, plan, select=select, threads=threads,
                         strict=strict, retention_days=retention_days,
                         settle_seconds=settle_seconds, change_data_feed=change_data_feed)
    spark = job.session(master, extra_conf, console)
    try:
        if watch is None:
            result = job.once(spark, console, lineage)
        else:
            from mirrorspec.context.watch import WatchOptions, stop_on_signals

            stop = stop_on_signals(console, "the tables in progress commit")
            result = job.watch(spark, console, WatchOptions(
                watch, heartbeat_every, heartbeat_file, metrics_port, metrics_host), stop,
                lineage)
    finally:
        if lineage is not None:
            lineage.close()
    _summary(console, result)
    if result.failed:
        raise FailedRun(*failure_summary(result.tables, result.status_error))


COMMANDS = [mirror]
