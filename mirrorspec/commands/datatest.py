"""`mirrorspec test`: run the data tests declared in the YAML on the mirrored Delta tables."""

from __future__ import annotations

from typing import Any

import click

from mirrorspec.base.errors import FailedRun
from mirrorspec.commands.params import (get_console, plan_options, project_context,
                                        selection_options)
from mirrorspec.context.threads import DEFAULT_THREADS


@click.command("test")
@plan_options
@selection_options
@click.option("--threads", type=click.IntRange(min=1), default=DEFAULT_THREADS, show_default=True,
              help="Tests run concurrently.")
def test(threads: int, **params: Any) -> None:
    """Run the data tests (unique, not_null, accepted_values, relationships, row_count,
    freshness) of the selected tables."""
    project = project_context(params, get_console())
    ctx, results = project.test(params["select"], params["exclude"], params["state_path"],
                                threads)
    project.refresh_site(ctx)
    if results.failed:
        raise FailedRun(results.verdict(),
                        hint="see FAIL / ERROR above; severity: warn makes a test only warn")


COMMANDS = [test]
