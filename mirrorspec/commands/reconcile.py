"""`mirrorspec reconcile`: is a mirrored table equal to a trusted snapshot of its source?"""

from __future__ import annotations

import json

import click

from mirrorspec.errors import FailedRun, MirrorspecError
from mirrorspec.jdbc_urls import redact
from mirrorspec.progress.mirror import resolve_table, table_keys


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
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
def reconcile(table, source, warehouse, key, version, timestamp, dbtable, user_secret,
              password_secret, source_format, shown, output, strict_columns, master) -> None:
    """Compare the mirrored TABLE with SOURCE by key; exit 1 on any difference."""
    if version is not None and timestamp is not None:
        raise MirrorspecError("pass --version or --timestamp, not both")
    unique_id, path = resolve_table(table, warehouse)
    keys = table_keys(path, key)
    from mirrorspec.spark.ops import reconcile as rec
    from mirrorspec.spark.platform.session import build_session

    # a jdbc: source needs its driver's jar set (fetched once: python -m mirrorspec.spark.platform.jars)
    conf = {"mirrorspec.extra.jars": "postgres"} if source.startswith("jdbc:postgresql:") else {}
    spark = build_session(master, conf)
    mirror = rec.read_mirror(spark, path, version, timestamp)
    snapshot = rec.read_source(spark, source, dbtable, user_secret, password_secret,
                               source_format)
    name = redact(source) + (f" ({dbtable})" if dbtable else "")
    result = rec.reconcile(spark, mirror, snapshot, keys, unique_id, name, version)
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
