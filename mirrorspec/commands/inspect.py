"""`mirrorspec status`, `show`, `history`, `changes` and `export`: look at the mirrored tables.

Parse, call the context, render: the tables come from `context/inspection.py`, the rows, the
change data feed and the monitoring JSON from `context/reading.py` (the same calls as
`Project.show`, `.changes`, `.status`). None of them starts a JVM: delta-rs reads the tables;
only what it can't read falls back to Spark (the plan's session settings when a project is
given, else a local session), and the output says so.
"""

from __future__ import annotations

import json
from typing import Any

import click

from mirrorspec.commands.params import (get_console, output_format, plan_options,
                                        project_context, selection_options, warehouse_option)
from mirrorspec.context import inspection, reading
from mirrorspec.context.arguments import exclusive
from mirrorspec.base.errors import FailedRun, MirrorspecError, StaleMirror

STATUS_COLUMNS = ("schema", "table", "status", "processed rows", "processed bytes",
                  "last sync (UTC)", "latency (s)", "error")


def status_rows(tables: list[dict[str, Any]]) -> list[list[Any]]:
    """Rows of the status table from the monitoring JSON's table entries."""
    rows = []
    for entry in tables:
        metrics = entry.get("metrics") or {}
        error = entry.get("error") or {}
        message = ""
        if error:
            message = f"{error.get('errorCode', '')}: {error.get('message', '')}".strip(": ")
        rows.append([entry.get("sourceSchemaName") or "", entry.get("sourceTableName") or "",
                     entry.get("status") or "", metrics.get("processedRows", ""),
                     metrics.get("processedBytes", ""), metrics.get("lastSyncDateTime", "") or "",
                     metrics.get("lastSyncLatencyInSeconds", ""), message])
    return sorted(rows, key=lambda r: (str(r[0]), str(r[1])))


@click.command("status")
@plan_options
@selection_options
@warehouse_option
@click.option("--json", "as_json", is_flag=True, help="Print the monitoring JSON itself.")
@click.option("--stale-after", default=None, metavar="DURATION",
              help="Also exit 3 when a table's last sync or the replicator's last update is "
                   "older than DURATION (90s, 15m, 2h, 1d).")
def status(as_json: bool, stale_after: str | None, **params: Any) -> None:
    """The monitoring JSON (replicator.json, tables.json) as a table.

    Exit codes: 0 healthy, 1 a table is Failed (or an error), 3 stale (--stale-after)."""
    from mirrorspec.operate.health import parse_duration
    from mirrorspec.artifacts.status import STALE_MARKER

    bound = parse_duration(stale_after) if stale_after is not None else None
    console = get_console()
    # --json prints the whole document: no selection is resolved for it
    chosen = {} if as_json else {"select": params.get("select") or (),
                                 "exclude": params.get("exclude") or ()}
    report = reading.status_report(project_context(params, console), params.get("warehouse"),
                                   bound, state_path=params.get("state_path"), console=console,
                                   **chosen)
    health = report.status.health
    if as_json:
        console.raw(json.dumps(report.status.to_dict(), indent=2, ensure_ascii=False,
                               default=str))
        _raise_if_unhealthy(health)
        return
    if report.write_failed:
        console.warning(f"{STALE_MARKER}: the last write of this monitoring JSON failed (disk "
                        "full?), so it may not hold the latest pass; the next pass that can "
                        "write it corrects it")
    replicator = report.status.replicator
    if replicator:
        overall = replicator.get("status", "?")
        console.result(f"replicator: {overall} (last updated "
                       f"{replicator.get('lastUpdated', '?')})", status=overall)
    console.table(f"tables in {report.warehouse}", STATUS_COLUMNS, status_rows(report.tables),
                  kind="status")
    if report.kafka_offsets:
        console.table("Kafka offsets (end offset and lag as of each table's last fetch)",
                      KAFKA_COLUMNS, report.kafka_offsets, kind="kafka_offsets")
    _raise_if_unhealthy(health)


def _raise_if_unhealthy(health) -> None:
    if health.failed:
        raise FailedRun(health.verdict(), hint="see the error column; fix and run again")
    if health.stale:
        raise StaleMirror(health.verdict(),
                          hint="is the replicator (run --watch / mirror --watch) running?")


KAFKA_COLUMNS = ("table", "topic", "partition", "consumed", "end", "lag", "fetched (UTC)")




def _targets(table_name: str | None, params: dict[str, Any],
             console) -> list[inspection.TableTarget]:
    """What TABLE and/or --select/--exclude name: [(display name, delta path, plan, keys)]."""
    return inspection.targets(table_name, project_context(params, console),
                              params.get("warehouse"), params.get("select") or (),
                              params.get("exclude") or (), params.get("state_path"), console)


@click.command("show")
@click.argument("table", required=False)
@plan_options
@selection_options
@warehouse_option
@click.option("--limit", "-n", type=click.IntRange(min=0), default=20, show_default=True,
              help="At most this many rows.")
@click.option("--where", default=None, help="A Spark SQL condition, e.g. \"status = 'open'\".")
@click.option("--version", "version", type=click.IntRange(min=0), default=None,
              help="Time travel: the table as of this Delta version.")
@click.option("--timestamp", default=None,
              help="Time travel: the table as of this time, e.g. 2026-01-31T12:00:00.")
@output_format
def show(table: str | None, limit: int, where: str | None, version: int | None,
         timestamp: str | None, output: str, **params: Any) -> None:
    """Preview rows of a mirrored table (with Delta time travel); TABLE or --select."""
    from mirrorspec.readers.delta import parse_timestamp

    exclusive(version, timestamp, ("--version", "--timestamp"), error=MirrorspecError)
    as_of = parse_timestamp(timestamp) if timestamp is not None else None
    console = get_console()
    for target in _targets(table, params, console):
        read = reading.read_rows(target, limit, where, version, as_of, console)
        if version is not None:
            as_of_text = f" as of version {version}"
        elif timestamp:
            as_of_text = f" as of {timestamp}" + (f" (version {read.version})"
                                                  if read.version is not None else "")
        else:
            as_of_text = ""
        rows = read.rows()
        console.data(f"{target.name}{as_of_text} ({len(rows)} row(s) shown)", read.columns,
                     rows, output, kind="rows", table=target.name, version=read.version)


@click.command("history")
@click.argument("table", required=False)
@plan_options
@selection_options
@warehouse_option
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None,
              help="Only the latest N commits.")
@output_format
def history(table: str | None, limit: int | None, output: str, **params: Any) -> None:
    """The Delta history of a table: per commit, the landing files applied and rows changed;
    TABLE or --select."""
    console = get_console()
    for target in _targets(table, params, console):
        _history_one(console, target, limit, output)


def _history_one(console, target: inspection.TableTarget, limit: int | None,
                 output: str) -> None:
    name = target.name
    entries = reading.read_history(target, limit, console)
    # programs get every applied file; people an abbreviated list
    for_people = output == "text" and console.log_format == "text"
    rows = [[e.version, e.timestamp, e.operation,
             _files(e.files_applied) if for_people else _names(e.files_applied),
             e.rows_inserted, e.rows_updated, e.rows_deleted,
             _feed(e.change_data_feed) if output == "text" else e.change_data_feed]
            for e in entries]
    columns = ("version", "timestamp", "operation", "landing files", "inserted", "updated",
               "deleted", "feed")
    if output == "csv":
        rows = [r[:3] + [" ".join(r[3])] + r[4:] for r in rows]
    if output == "text":
        console.table(f"history of {name}", columns, rows, kind="history")
    else:
        console.data(f"history of {name}", columns, rows, output, kind="history", table=name)


def _feed(carries: bool | None) -> str:
    """The history's `feed` column for people: the version carries a change data feed."""
    return "yes" if carries else ("" if carries is None else "no")


def _names(files: list[str]) -> list[str]:
    return [f.rsplit("/", 1)[-1] for f in files]


def _files(files: list[str]) -> str:
    names = [f.rsplit("/", 1)[-1] for f in files]
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]} … {names[-1]} ({len(names)} files)"


@click.command("changes")
@click.argument("table", required=False)
@plan_options
@selection_options
@warehouse_option
@click.option("--from-version", type=click.IntRange(min=0), default=None,
              help="The first version whose changes are shown (default: where the table's "
                   "latest stretch of versions with a change data feed starts).")
@click.option("--from-timestamp", default=None,
              help="Or the first version committed at or after this time (ISO 8601, UTC).")
@click.option("--to-version", type=click.IntRange(min=0), default=None,
              help="The last version (default: the latest).")
@click.option("--to-timestamp", default=None,
              help="Or the last version committed at or before this time.")
@click.option("--limit", "-n", type=click.IntRange(min=0), default=20, show_default=True,
              help="At most this many change rows (0: none, to see the count).")
@output_format
def changes(table: str | None, from_version: int | None, from_timestamp: str | None,
            to_version: int | None, to_timestamp: str | None, limit: int, output: str,
            **params: Any) -> None:
    """The change data feed of a mirrored table (no JVM): the rows each version inserted,
    updated (pre- and post-image) and deleted, with `_change_type` and `_commit_version`;
    TABLE or --select."""
    from mirrorspec.readers.delta import parse_timestamp

    exclusive(from_version, from_timestamp, ("--from-version", "--from-timestamp"),
              error=MirrorspecError)
    exclusive(to_version, to_timestamp, ("--to-version", "--to-timestamp"),
              error=MirrorspecError)
    start = parse_timestamp(from_timestamp) if from_timestamp is not None else None
    end = parse_timestamp(to_timestamp) if to_timestamp is not None else None
    console = get_console()
    for target in _targets(table, params, console):
        read = reading.read_changes(target, from_version, start, to_version, end, limit,
                                    console)
        first, last, total = read.from_version, read.to_version, read.total
        versions = (f"version {first}" if first == last else f"versions {first}-{last}"
                    if first < last else f"nothing committed after version {last}")
        rows = read.rows()
        console.data(f"changes of {target.name}, {versions} ({len(rows)} of {total} change "
                     "row(s) shown)", read.columns, rows, output, kind="changes",
                     table=target.name, from_version=first, to_version=last, total=total)


@click.command("export")
@click.argument("table")
@plan_options
@warehouse_option
@click.option("--to", "dest", required=True, type=click.Path(dir_okay=False),
              help="The file to write: FILE.parquet or FILE.csv (the suffix says the format); "
                   "never inside a warehouse or landing zone.")
@click.option("--version", "version", type=click.IntRange(min=0), default=None,
              help="The table as of this Delta version (default: the latest).")
@click.option("--force", is_flag=True, help="Replace the --to file when it exists.")
def export(table: str, dest: str, version: int | None, force: bool, **params: Any) -> None:
    """Write a mirrored table to one Parquet or CSV file, deletion vectors applied (no JVM):
    for readers that refuse the table's features (docs/readers.md)."""
    console = get_console()
    done = inspection.export_table(project_context(params, console), table, dest, version,
                                   force, params.get("warehouse"))
    name = done.table
    console.result(f"{name} (version {done.version}): {done.rows} row(s) written to {done.path} "
                   f"({done.format})", table=name, version=done.version, rows=done.rows,
                   path=done.path, format=done.format)


COMMANDS = [status, show, history, changes, export]
