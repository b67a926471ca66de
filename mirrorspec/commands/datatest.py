"""`mirrorspec test`: run the data tests declared in the YAML on the mirrored Delta tables."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import click

from mirrorspec.cli import FailedRun, get_console
from mirrorspec.commands.run import (PlanContext, load_plan_context, project_options,
                                     refresh_docs, selection_options)
from mirrorspec.console import Console


def execute_tests(console: Console, ctx: PlanContext, table_ids: Iterable[str],
                  skip: Mapping[str, str] | Iterable[str] = (), threads: int = 4):
    """Run the tests of the given tables, print the dbt-style summary, write test_results.json."""
    from mirrorspec.spark.datatests import run_data_tests
    from mirrorspec.spark.runner import start_session

    wanted = set(table_ids)
    tables = [t for t in ctx.plan.tables if t.unique_id in wanted]
    if not any(t.tests for t in tables):
        console.warning("no data tests declared on the selected tables")
        results = run_data_tests(None, ctx.plan, [], console)
    else:
        results = run_data_tests(start_session(ctx.plan), ctx.plan, tables, console, skip=skip,
                                 threads=threads)
    path = results.write(ctx.target_dir)
    refresh_docs(console, ctx)
    counts = results.counts()
    console.result(f"Done. PASS={counts['pass']} WARN={counts['warn']} ERROR={counts['error']} "
                   f"FAIL={counts['fail']} SKIP={counts['skipped']} TOTAL={len(results.results)}"
                   f"; results in {path}", counts=counts)
    return results


@click.command("test")
@project_options
@selection_options
@click.option("--threads", type=click.IntRange(min=1), default=4, show_default=True,
              help="Tests run concurrently.")
def test(threads: int, **params: Any) -> None:
    """Run the data tests (unique, not_null, accepted_values, relationships, row_count,
    freshness) of the selected tables."""
    from mirrorspec.selection import select_with_warnings

    console = get_console()
    ctx = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                            params["profiles_dir"], params["plan_path"], console)
    tables = select_with_warnings(ctx.plan, params["select"], params["exclude"],
                                  state_path=params["state_path"], console=console)
    results = execute_tests(console, ctx, [t.unique_id for t in tables], threads=threads)
    if results.failed:
        raise FailedRun(results.verdict(),
                        hint="see FAIL / ERROR above; severity: warn makes a test only warn")


COMMANDS = [test]
