"""`mirrorspec reconcile`: is a mirrored table equal to a trusted snapshot of its source?

Parses the options, calls `mirrorspec/context/operations.py` (`reconcile`) and renders what
it found: the summary lines, the `--output` JSON, exit 1 on a difference."""

from __future__ import annotations

import json

import click

from mirrorspec.artifacts.reconciliation import render
from mirrorspec.commands.params import (get_console, optional_plan, parse_conf, plan_options,
                                        spark_conf, spark_master)
from mirrorspec.context import operations
from mirrorspec.base.errors import UsageError
from mirrorspec.progress.mirror import names_folder


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
    operations.check_as_of(version, timestamp)
    if shown < 0:
        raise UsageError(f"--show {shown}: give 0 or more")
    extra_conf = parse_conf(conf)
    operations.check_output(output)
    in_project = not warehouse and not names_folder(table)
    result = operations.reconcile(
        lambda: optional_plan(params, needed=in_project), table, source, warehouse=warehouse,
        key=key, version=version, timestamp=timestamp, dbtable=dbtable, user_secret=user_secret,
        password_secret=password_secret, source_format=source_format, master=master,
        conf=extra_conf, console=get_console())
    for line in render(result, shown):
        click.echo(line)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            json.dump(result.to_json(), handle, indent=2)
            handle.write("\n")
    failed = operations.reconcile_failure(result, strict_columns)
    if failed is not None:
        raise failed


COMMANDS = [reconcile]
