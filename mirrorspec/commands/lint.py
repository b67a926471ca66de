"""`mirrorspec lint`: check a landing zone against the open-mirroring contract (no JVM)."""

from __future__ import annotations

import json

import click

from mirrorspec import __version__
from mirrorspec.context import lint as linting


@click.command("lint")
@click.argument("landing_zone", type=click.Path(file_okay=False))
@click.argument("tables", nargs=-1)
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif"]),
              default="text", show_default=True,
              help="text grouped by table, json, or sarif (SARIF 2.1.0 for code scanning).")
@click.option("--warehouse", default=None, type=click.Path(file_okay=False),
              help="Also check against the mirrored tables here (applied files, key changes, "
                   "column types).")
@click.option("--strict", is_flag=True,
              help="Warnings fail too (exit 1); a __rowMarker__ that isn't the last column "
                   "(or, in Parquet, isn't an integer column) stops its table, as "
                   "`mirror --strict` does.")
@click.option("--output", "-o", default=None, type=click.Path(dir_okay=False),
              help="Write the report to this file instead of standard output.")
def lint(landing_zone: str, tables: tuple[str, ...], output_format: str, warehouse: str | None,
         strict: bool, output: str | None) -> None:
    """Check LANDING_ZONE against Fabric's open-mirroring landing-zone rules.

    TABLES (optional) narrows the check to some tables: schema.table, names or globs. The rules
    are those of Microsoft's "Open mirroring landing zone requirements and format": folder
    layout, _metadata.json, 20-digit file names, __rowMarker__ values, file contents.

    Exit 1 on errors (or warnings with --strict), 0 otherwise.
    """
    from mirrorspec.landing.lint import to_json, to_sarif, to_text

    result = linting.lint(landing_zone, tables, warehouse=warehouse, strict=strict)
    if output_format == "json":
        text = json.dumps(to_json(result), indent=2) + "\n"
    elif output_format == "sarif":
        text = json.dumps(to_sarif(result, __version__), indent=2) + "\n"
    else:
        text = to_text(result)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)
    failed = linting.failure(result, strict)
    if failed is not None:
        raise failed


COMMANDS = [lint]
