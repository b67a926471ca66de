"""`mirrorspec diff`: what a change to the project does to the mirrored tables (code review).

Parses the options, calls `mirrorspec/context/diff.py` (the two sides, the verdict) and
renders the report (text, JSON, Markdown). Never imports pyspark.
"""

from __future__ import annotations

from pathlib import Path

import click

from mirrorspec.commands.params import get_console, project_options
from mirrorspec.context.diff import diff_project, failure
from mirrorspec.project.diff import (
    BREAKING, CAUTION, PlanDiff, headline, iter_lines, report_json, report_markdown)

_STYLES = {BREAKING: "bold red", CAUTION: "yellow", "safe": "green", "heading": "bold",
           "plain": "dim"}


@click.command("diff")
@project_options
@click.option("--state", "state", type=click.Path(path_type=Path),
              help="A previous target/ directory (or its plan.json) to compare with.")
@click.option("--base", "base_ref", metavar="GIT_REF",
              help="A git revision of the project to compare with (e.g. origin/main).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="Report format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the report (in --format) to this file.")
@click.option("--allow-breaking", is_flag=True,
              help="Exit 0 even when a breaking change isn't acknowledged by `recreate: true`.")
def diff(project_dir: str, state: Path | None, base_ref: str | None, target: str | None,
         vars_text: str | None, profiles_dir: str | None, fmt: str, output: Path | None,
         allow_breaking: bool) -> None:
    """Show what the project's changes do to the mirrored tables.

    Compares a fresh compile of the project with --state (a previous target/) or --base (a git
    revision). Exits 1 when a change is breaking (the table folder must be recreated) unless
    the table says `recreate: true` or --allow-breaking is given.
    """
    console = get_console()
    result = diff_project(project_dir, state, base_ref, target, vars_text,
                          None if profiles_dir is None else Path(profiles_dir),
                          allow_breaking=allow_breaking)
    _report(console, result, fmt, output)
    failed = failure(result)
    if failed is not None:
        raise failed


def _report(console, result: PlanDiff, fmt: str, output: Path | None) -> None:
    if fmt == "json":
        text = report_json(result)
        console.raw(text)
    elif fmt == "markdown":
        text = report_markdown(result)
        console.raw(text)
    else:
        text = "\n".join(line for _, line in iter_lines(result)) + "\n"
        if console.log_format == "json":
            console.event("diff", headline(result).replace("`", ""), **result.to_dict())
        else:
            console.styled_lines((_STYLES[style], line) for style, line in iter_lines(result))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")



COMMANDS = [diff]
