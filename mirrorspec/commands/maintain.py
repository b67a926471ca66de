"""`mirrorspec maintain`: purge deletion vectors, OPTIMIZE and VACUUM mirrored tables (Spark).

Parses the options and calls `mirrorspec/context/operations.py` (`maintain`), which checks the
arguments before Spark starts (the tables must exist, and a VACUUM retention below a table's
`delta.deletedFileRetentionDuration` is refused unless --allow-short-retention) and says each
table's outcome; exit 1 when a table failed.
"""

from __future__ import annotations

from typing import Any

import click

from mirrorspec.commands.params import (get_console, plan_options, project_context,
                                        selection_options)
from mirrorspec.commands.params import threads as threads_option
from mirrorspec.context.operations import maintain as maintain_tables


@click.command("maintain")
@click.argument("tables", nargs=-1)
@plan_options
@selection_options
@click.option("--purge/--no-purge", default=True, show_default=True,
              help="REORG TABLE … APPLY (PURGE): rewrite files with deletion vectors.")
@click.option("--optimize/--no-optimize", default=True, show_default=True,
              help="OPTIMIZE: compact small files.")
@click.option("--vacuum/--no-vacuum", default=True, show_default=True,
              help="VACUUM: delete files no version within the retention needs.")
@click.option("--retain-hours", type=click.FloatRange(min=0), default=None,
              help="VACUUM retention (default: the table's delta.deletedFileRetentionDuration, "
                   "7 days unless set).")
@threads_option
@click.option("--allow-short-retention", is_flag=True,
              help="Allow --retain-hours below the table's retention (nothing may read or "
                   "write the table meanwhile).")
def maintain(tables: tuple[str, ...], purge: bool, optimize: bool, vacuum: bool,
             retain_hours: float | None, allow_short_retention: bool, threads: int,
             **params: Any) -> None:
    """Purge deletion vectors, OPTIMIZE and VACUUM mirrored tables (TABLES or --select; all by
    default), applying each table's `deletion_vectors` switch first."""
    maintain_tables(project_context(params, get_console()), tables, params["select"],
                    params["exclude"], params["state_path"], purge, optimize, vacuum,
                    retain_hours, allow_short_retention, threads).raise_if_failed()


COMMANDS = [maintain]
