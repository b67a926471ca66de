"""`mirrorspec reconcile`: is a mirrored table equal to a trusted snapshot of its source?"""

from __future__ import annotations

import json
import os

import click

from mirrorspec.commands.params import (get_console, live_progress, optional_plan, parse_conf,
                                        plan_options, spark_conf, spark_master)
from mirrorspec.context.sessions import local_then_session, start_spark
from mirrorspec.context.tables import locate_table
from mirrorspec.base.errors import FailedRun, MirrorspecError, UsageError
from mirrorspec.base.files import Files, is_remote, normalize
from mirrorspec.security.jdbc_urls import redact
from mirrorspec.progress.mirror import names_folder, table_keys


def check_output(output: str | None) -> None:
    """--output's folder must exist: said before Spark starts, not after the comparison."""
    folder = os.path.dirname(os.path.abspath(output)) if output else None
    if folder and not os.path.isdir(folder):
        raise UsageError(f"--output {output}: the folder {folder} does not exist")


def _locate(table: str, warehouse: str | None, key: str | None, source: str, plan,
            files: Files) -> tuple[str, str, list[str]]:
    """(unique id, Delta path, key columns) of TABLE, and a URI snapshot checked to exist, each
    path through `files` (local before Spark starts, URIs through the session:
    `context.sessions.local_then_session`)."""
    found = locate_table(table, warehouse, plan, files)
    if not source.startswith("jdbc:") and is_remote(source) and not files.exists(source):
        raise UsageError(f"--against {source}: the source snapshot does not exist",
                         hint="pass a Delta/Parquet/CSV path or a jdbc: URL")
    return found.unique_id, found.path, table_keys(found.path, key, files.fs(found.path))


@click.command("reconcile")
@click.argument("table")
@click.option("--against", "source", required=True,
              help="The trusted snapshot: a Delta/Parquet/CSV path, or a jdbc: URL.")
@click.option("--warehouse", type=click.Path(file_okay=False), default=None,
              help="Where the mirrored tables live (TABLE is then schema.table).")
@click.option("--key", default=None, help="Key columns, comma-separated (default: the table's "
              "keyColumns as the engine recorded them).")
@click.option("--version", "version", type=int, default=None,
              help="Compare the mirror as of this Delta version.")
@click.option("--timestamp", default=None, help="Compare the mirror as of this time.")
@click.option("--dbtable", default=None, help="jdbc: the source table (or a query in "
              "parentheses with an alias).")
@click.option("--user-secret", default=None, metavar="MIRRORSPEC_SECRET_NAME",
              help="jdbc: the environment variable holding the user name.")
@click.option("--password-secret", default=None, metavar="MIRRORSPEC_SECRET_NAME",
              help="jdbc: the environment variable holding the password.")
@click.option("--source-format", type=click.Choice(["delta", "parquet", "csv"]), default=None,
              help="The snapshot's format when its path doesn't tell.")
@click.option("--show", "shown", type=int, default=10, show_default=True,
              help="How many differing keys of each kind to print.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write every difference to this JSON file.")
@click.option("--strict-columns", is_flag=True,
              help="Columns present on one side only fail too.")
@plan_options
@spark_master
@spark_conf
def reconcile(table, source, warehouse, key, version, timestamp, dbtable, user_secret,
              password_secret, source_format, shown, output, strict_columns, master, conf,
              **params) -> None:
    """Compare the mirrored TABLE with SOURCE by key; exit 1 on any difference.

    TABLE is a name in the project (--project-dir, --target; Spark gets the profile's settings),
    schema.table in --warehouse, or a Delta folder (a path or a URI such as s3a://: the profile's
    Spark settings reach it). Local paths are checked before Spark starts, URIs right after."""
    if version is not None and timestamp is not None:
        raise MirrorspecError("pass --version or --timestamp, not both")
    if version is not None and version < 0:
        raise UsageError(f"--version {version}: give a Delta version (0 or more)")
    if shown < 0:
        raise UsageError(f"--show {shown}: give 0 or more")
    extra_conf = parse_conf(conf)
    check_output(output)
    local = source[len("file:"):] if source.startswith("file:") else source
    if not source.startswith("jdbc:") and "://" not in source and not os.path.exists(local):
        raise UsageError(f"--against {source}: the source snapshot does not exist",
                         hint="pass a Delta/Parquet/CSV path or a jdbc: URL")
    in_project = not warehouse and not names_folder(table)
    plan = optional_plan(params, needed=in_project)
    # a jdbc: source needs its driver's jar set (fetched once: python -m mirrorspec.spark.platform.jars)
    if source.startswith("jdbc:postgresql:"):
        extra_conf.setdefault("mirrorspec.extra.jars", "postgres")
    console = get_console()
    # the warm server reaches local snapshots only (a URI or a JDBC driver needs Spark here)
    warm = not source.startswith("jdbc:") and "://" not in source
    if warm:  # a relative path means this folder, not the Spark server's
        source = normalize(source)
    (unique_id, path, keys), spark = local_then_session(
        lambda files: _locate(table, warehouse, key, source, plan, files),
        lambda: start_spark(plan, master, extra_conf, console, warm=warm))
    from mirrorspec.spark.ops import reconcile as rec

    spark = spark or start_spark(plan, master, extra_conf, console, warm=warm)
    # phase lines and the stage-task bar (or timed lines in a log) while Spark works
    progress = live_progress(console, 3, spark)
    reading = progress.begin(unique_id, "read mirror", "reading the mirror")
    mirror = rec.read_mirror(spark, path, version, timestamp)
    reading.done(f"read the mirror: {len(mirror.columns)} column(s)", columns=len(mirror.columns))
    reading = progress.begin(unique_id, "read source", "reading the source")
    snapshot = rec.read_source(spark, source, dbtable, user_secret, password_secret,
                               source_format)
    reading.done(f"read the source: {len(snapshot.columns)} column(s)",
                 columns=len(snapshot.columns))
    name = redact(source) + (f" ({dbtable})" if dbtable else "")
    result = rec.reconcile(spark, mirror, snapshot, keys, unique_id, name, version, progress)
    progress.stop()
    for line in rec.render(result, shown):
        click.echo(line)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            json.dump(result.to_json(), handle, indent=2)
            handle.write("\n")
    one_sided = result.only_in_mirror or result.only_in_source
    if not result.equal or (strict_columns and one_sided):
        raise FailedRun(f"{unique_id} differs from {name}" if not result.equal else
                        f"{unique_id}: columns on one side only (--strict-columns)")


COMMANDS = [reconcile]
