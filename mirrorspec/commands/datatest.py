"""`mirrorspec test`: run the data tests declared in the YAML on the mirrored Delta tables."""

from __future__ import annotations

from typing import Any

import click

from mirrorspec.commands.params import DEFAULT_THREADS, get_console, plan_options, selection_options
from mirrorspec.compile import load_plan_context
from mirrorspec.base.errors import FailedRun


@click.command("test")
@plan_options
@selection_options
@click.option("--threads", type=click.IntRange(min=1), default=DEFAULT_THREADS, show_default=True,
              help="Tests run concurrently.")
def test(threads: int, **params: Any) -> None:
    """Run the data tests (unique, not_null, accepted_values, relationships, row_count,
    freshness) of the selected tables."""
    from mirrorspec.project.selection import select_with_warnings
    from mirrorspec.docsite.build import refresh_site
    from mirrorspec.spark.ops.datatests import execute_tests

    console = get_console()
    ctx = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                            params["profiles_dir"], params["plan_path"], console)
    tables = select_with_warnings(ctx.plan, params["select"], params["exclude"],
                                  state_path=params["state_path"], console=console,
                                  results_dir=ctx.target_dir)
    results = execute_tests(console, ctx, [t.unique_id for t in tables], threads=threads)
    refresh_site(console, ctx.plan, ctx.target_dir)
    if results.failed:
        raise FailedRun(results.verdict(),
                        hint="see FAIL / ERROR above; severity: warn makes a test only warn")


COMMANDS = [test]
