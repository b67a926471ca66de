"""`mirrorspec mirror`: apply a landing zone to Delta tables, once or watching."""

from __future__ import annotations

import signal
import threading

import click

from mirrorspec.commands.params import get_console
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
@click.option("--landing-zone", required=True, help="The landing zone folder (path or URI).")
@click.option("--warehouse", required=True,
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
    from mirrorspec.spark.engine import MirrorOptions, mirror_landing_zone
    from mirrorspec.spark.session import build_session

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
    passes = 0
    while True:
        result = mirror_landing_zone(spark, landing_zone, warehouse, options, console, stop=stop)
        passes += 1
        if watch is None:
            break
        failed = [t.unique_id for t in result.tables if t.status == "Failed"]
        applied = sum(len(t.files_applied) for t in result.tables)
        console.info(f"pass {passes}: {applied} file(s) applied"
                     + (f", failed: {', '.join(failed)}" if failed else ""),
                     passes=passes, applied=applied, failed=failed)
        if stop.wait(watch):
            break
    _summary(console, result)
    if result.failed:
        failed = [t.unique_id for t in result.tables if t.status == "Failed"]
        raise FailedRun(f"{len(failed)} table(s) failed: {', '.join(failed)}",
                        hint="see tables.json in the warehouse; fix or re-write the named file "
                             "and run again")


COMMANDS = [mirror]
