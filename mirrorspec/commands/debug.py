"""`mirrorspec debug`: what this installation and project need, checked one line each.

Parses the options, runs the checks of `mirrorspec/context/debug.py` and renders them as a
table; exit 1 when a check failed, each failure naming its fix (docs/deploy.md).
"""

from __future__ import annotations

from typing import Any

import click

from mirrorspec.commands.params import get_console, project_dir, profiles_dir, target, vars_text
from mirrorspec.context.debug import _services, failure, run_checks

__all__ = ["COMMANDS", "_services"]


@click.command("debug")
@project_dir
@profiles_dir
@target
@vars_text
@click.option("--spark/--no-spark", "start_spark", default=True, show_default=True,
              help="Start Spark and round-trip a one-row Delta table (10-30 s).")
@click.option("--jdbc", default=None, metavar="URL",
              help="Also check that this JDBC server answers (reconcile --against URL).")
def debug(start_spark: bool, jdbc: str | None, **params: Any) -> None:
    """Check the installation and the project: Python, Java, jars, profile, paths, Spark,
    Kafka/S3/JDBC reachability. Exit 1 when a check failed, each failure naming its fix."""
    console = get_console()
    checks = run_checks(params, start_spark, jdbc, console)
    console.table("mirrorspec debug", ("check", "status", "detail", "fix"),
                  [(c.name, c.status, c.detail, c.fix) for c in checks], kind="debug")
    failed = failure(checks)
    if failed is not None:
        raise failed
    console.result("all checks passed" + ("" if start_spark else " (Spark not started: "
                                          "--no-spark)"))


COMMANDS = [debug]
