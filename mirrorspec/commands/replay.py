"""`mirrorspec replay`: does a mirrored table equal its own history of landing files?"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import click

from mirrorspec.commands.params import (get_console, live_progress, optional_plan, parse_conf,
                                        plan_options, spark_conf, spark_master)
from mirrorspec.context.sessions import local_then_session, start_spark
from mirrorspec.context.tables import locate_table
from mirrorspec.base.errors import FailedRun, MirrorspecError, UsageError
from mirrorspec.base.files import Files
from mirrorspec.progress.mirror import names_folder, resolve_table, table_keys


def _locate(table: str, warehouse: str | None, landing_path: str | None, key: str | None,
            plan, files: Files):
    """The table, its applied-file history, its pending files, its key columns and the
    filesystem of its landing folder, each path checked through `files` (local before Spark
    starts, URIs through the session: `context.sessions.local_then_session`)."""
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
                              hint="pass --landing-path with where the table's files are now")
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


@click.command("replay")
@click.argument("table")
@click.option("--warehouse", type=click.Path(file_okay=False), default=None,
              help="Where the mirrored tables live (TABLE is then schema.table).")
@click.option("--landing-path", default=None, type=click.Path(file_okay=False),
              help="The table's landing folder, if it moved since it was mirrored.")
@click.option("--key", default=None, help="Key columns to compare by, comma-separated "
              "(default: the table's keyColumns).")
@click.option("--scratch", default=None, type=click.Path(file_okay=False),
              help="Rebuild here (kept) instead of a temporary folder (removed).")
@click.option("--show", "shown", type=int, default=10, show_default=True,
              help="How many differing keys of each kind to print.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write every difference to this JSON file.")
@plan_options
@spark_master
@spark_conf
def replay(table, warehouse, landing_path, key, scratch, shown, output, master, conf,
           **params) -> None:
    """Rebuild TABLE from the landing files it applied and reconcile it with the live table.

    TABLE is a name in the project (--project-dir, --target), schema.table in --warehouse, or
    a Delta folder. Local paths are checked before Spark starts; URIs (s3a://, abfss://) right
    after it, through the profile's Spark settings."""
    from mirrorspec.spark.ops import replay as rp

    console = get_console()
    extra_conf = parse_conf(conf)
    if shown < 0:
        raise UsageError(f"--show {shown}: give 0 or more")
    folder_of_output = os.path.dirname(os.path.abspath(output)) if output else None
    if folder_of_output and not os.path.isdir(folder_of_output):
        raise UsageError(f"--output {output}: the folder {folder_of_output} does not exist")
    if scratch and os.path.isdir(scratch) and os.listdir(scratch):
        raise MirrorspecError(f"--scratch {scratch} is not empty")
    plan = optional_plan(params, needed=not warehouse and not names_folder(table))
    progress = live_progress(console, 5)  # history, staging, replaying, reading, counting
    reading = progress.begin(table, "history", "reading its history")
    (located, history, pending, keys, lfs), spark = local_then_session(
        lambda files: _locate(table, warehouse, landing_path, key, plan, files),
        lambda: start_spark(plan, master, extra_conf, console, warm=True))
    unique_id, path, folder = located.unique_id, located.path, str(history.landing_path)
    found = history.paths
    reading.done(f"read its history: {len(found)} applied file(s)", files=len(found))
    if pending:
        console.info(f"{unique_id}: {len(pending)} pending file(s) not replayed (not applied "
                     f"yet): {', '.join(pending[:5])}")
    parent = os.path.basename(os.path.dirname(os.path.normpath(folder)))
    schema = parent[:-len(".schema")] if parent.endswith(".schema") else None
    name = os.path.basename(os.path.normpath(folder))

    from mirrorspec.spark.ops import reconcile as rec
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    # absolute: a relative path means this folder, not the warm Spark server's
    work = os.path.abspath(scratch) if scratch else tempfile.mkdtemp(prefix="mirrorspec-replay-")
    try:
        if scratch:
            os.makedirs(scratch, exist_ok=True)
            if os.listdir(scratch):
                raise MirrorspecError(f"--scratch {scratch} is not empty")
        staging = progress.begin(unique_id, "stage", f"staging {len(found)} file(s)")
        landing = rp.stage(folder, found, work, schema, name, history.mode, lfs)
        staging.done(f"staged {len(found)} file(s) in {work}", files=len(found))
        rebuilt_warehouse = os.path.join(work, "warehouse")
        spark = spark or start_spark(plan, master, extra_conf, console, warm=True)
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
        rebuilt_id, rebuilt_path = resolve_table(unique_id, rebuilt_warehouse)
        reading = progress.begin(unique_id, "read", "reading the live table and the replay")
        live, rebuilt = rec.read_mirror(spark, path), rec.read_mirror(spark, rebuilt_path)
        reading.done(f"read the live table and the replay: {len(live.columns)} and "
                     f"{len(rebuilt.columns)} column(s)", columns=len(live.columns))
        result = rec.reconcile(spark, live, rebuilt, keys, unique_id,
                               f"replay of {len(found)} file(s)", progress=progress)
        progress.stop()
    finally:
        if not scratch:
            shutil.rmtree(work, ignore_errors=True)
    for line in rec.render(result, shown):
        click.echo(line)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            doc = result.to_json()
            doc["replayed_files"] = history.files
            doc["pending_files"] = pending
            json.dump(doc, handle, indent=2)
            handle.write("\n")
    if not result.equal:
        raise FailedRun(f"{unique_id} differs from the replay of its own landing files "
                        "(changed behind the mirror's back, or an engine bug)",
                        hint="'missing' rows are in the replay but not in the live table; "
                             "'extra' rows only in the live table")


COMMANDS = [replay]
