"""`mirrorspec mirror`: apply a landing zone to Delta tables, once or watching."""

from __future__ import annotations

import signal
import threading
import time

import click

from mirrorspec.commands.params import absolute_location, get_console
from mirrorspec.errors import FailedRun, MirrorspecError
from mirrorspec.mirroring import PROCESSED_RETENTION_DAYS


def _parse_conf(pairs: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise MirrorspecError(f"--conf {pair!r} is not key=value",
                                  hint="e.g. --conf spark.sql.shuffle.partitions=4")
        conf[key.strip()] = value
    return conf


def _watch(spark, landing_zone: str, warehouse: str, options, console, interval: float,
           stop: threading.Event):
    """Pass after pass until `stop`: a failed table backs off (retried at once when its folder
    changes), each message is printed once while nothing about its table changes, and a pass
    line appears only when a pass applied files or a table's outcome changed."""
    from mirrorspec.spark.platform import hadoop_fs
    from mirrorspec.spark.mirror.engine import mirror_landing_zone
    from mirrorspec.landing.layout import folder_signature
    from mirrorspec.spark.mirror.warm import SnapshotWarmer
    from mirrorspec.watch import Backoff, QuietConsole

    backoff, quiet = Backoff(interval), QuietConsole(console)
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

            result = mirror_landing_zone(spark, landing_zone, warehouse, options, quiet,
                                         stop=stop, skip=skip)
            passes += 1
            # the next pass finds the new versions' state ready (mirrorspec/spark/mirror/warm.py)
            warmer.after_pass(spark, (t.delta_path for t in result.tables if t.files_applied))
            changed = _record_outcomes(result, backoff, quiet, lfs, signatures, now)
            applied = sum(len(t.files_applied) for t in result.tables)
            if applied or changed:
                failed = sorted(backoff.failing)
                console.info(f"pass {passes}: {applied} file(s) applied"
                             + (f"; failing (backing off): {', '.join(failed)}" if failed else ""),
                             passes=passes, applied=applied, failed=failed)
            if stop.wait(interval):
                return result
    finally:
        warmer.close()


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
        outcomes[t.unique_id] = (t.status, (t.error or {}).get("message"),
                                 tuple(t.files_applied))
    return quiet.end_pass(outcomes)


def failure_summary(tables) -> tuple[str, str]:
    """The closing error line and its hint: "fix or re-write the named file" only when a file
    is proven bad; engine, storage and conflict failures point at the log file instead."""
    from mirrorspec.spark.mirror.engine import NOT_FILE_CODES

    failed = [t for t in tables if t.status == "Failed"]
    codes = {(t.error or {}).get("errorCode") for t in failed}
    hints = []
    if codes - set(NOT_FILE_CODES):
        hints.append("fix or re-write the named file and run again")
    if codes & set(NOT_FILE_CODES):
        hints.append("an engine, storage or conflict failure is not the files' fault: run "
                     "again; the log file named in its error has the details")
    return (f"{len(failed)} table(s) failed: {', '.join(t.unique_id for t in failed)}",
            "see tables.json in the warehouse; " + "; ".join(hints))


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
@click.option("--landing-zone", required=True, callback=absolute_location,
              help="The landing zone folder (path or URI).")
@click.option("--warehouse", required=True, callback=absolute_location,
              help="Where the Delta tables live: WAREHOUSE/<schema>/<table>.")
@click.option("--watch", type=float, default=None, metavar="SECONDS",
              help="Keep polling every SECONDS until interrupted (Ctrl-C / SIGTERM).")
@click.option("--select", "-s", multiple=True,
              help="Tables to mirror: schema.table, a name or a glob such as 'sales.*'.")
@click.option("--threads", type=click.IntRange(1, 256), default=2, show_default=True,
              help="Tables processed concurrently.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="Spark conf.")
@click.option("--strict", is_flag=True,
              help="Fail a file whose __rowMarker__ is not its last column.")
@click.option("--retention-days", type=float, default=PROCESSED_RETENTION_DAYS,
              show_default=True,
              help="Days processed files stay in _ProcessedFiles.")
def mirror(landing_zone: str, warehouse: str, watch: float | None, select: tuple[str, ...],
           threads: int, master: str, conf: tuple[str, ...], strict: bool,
           retention_days: float) -> None:
    """Mirror a landing zone into Delta tables exactly as Fabric open mirroring does."""
    console = get_console()
    spark_conf = _parse_conf(conf)
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone
    from mirrorspec.spark.platform.session import build_session

    options = MirrorOptions(threads=threads, strict=strict, retention_days=retention_days,
                            select=tuple(select))
    spark = build_session(master, spark_conf)
    stop = threading.Event()
    if watch is not None:
        def request_stop(signum, _frame):
            console.info(f"signal {signum}: stopping after the tables in progress commit")
            stop.set()
        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
    if watch is None:
        result = mirror_landing_zone(spark, landing_zone, warehouse, options, console)
    else:
        result = _watch(spark, landing_zone, warehouse, options, console, watch, stop)
    _summary(console, result)
    if result.failed:
        raise FailedRun(*failure_summary(result.tables))


COMMANDS = [mirror]
