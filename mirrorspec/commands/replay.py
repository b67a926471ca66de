"""`mirrorspec replay`: does a mirrored table equal its own history of landing files?

Parses the options, calls `mirrorspec/context/operations.py` (`replay`) and renders what it
found: the summary lines, the `--output` JSON, exit 1 on a difference."""

from __future__ import annotations

import json

import click

from mirrorspec.artifacts.reconciliation import render
from mirrorspec.commands.params import (get_console, optional_plan, parse_conf, plan_options,
                                        spark_conf, spark_master)
from mirrorspec.context import operations
from mirrorspec.base.errors import UsageError
from mirrorspec.progress.mirror import names_folder


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
    console = get_console()
    extra_conf = parse_conf(conf)
    if shown < 0:
        raise UsageError(f"--show {shown}: give 0 or more")
    operations.check_output(output)
    operations.check_scratch(scratch)
    plan = optional_plan(params, needed=not warehouse and not names_folder(table))
    result = operations.replay(plan, table, warehouse=warehouse, landing_path=landing_path,
                               key=key, scratch=scratch, master=master, conf=extra_conf,
                               console=console)
    for line in render(result.reconciliation, shown):
        click.echo(line)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            json.dump(result.to_json(), handle, indent=2)
            handle.write("\n")
    failed = operations.replay_failure(result)
    if failed is not None:
        raise failed


COMMANDS = [replay]
