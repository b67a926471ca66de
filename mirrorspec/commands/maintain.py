"""`mirrorspec maintain`: purge deletion vectors, OPTIMIZE and VACUUM mirrored tables (Spark).

Arguments are checked before Spark starts: the tables must exist, and a VACUUM retention below a
table's `delta.deletedFileRetentionDuration` is refused unless --allow-short-retention.
"""

from __future__ import annotations

from typing import Any

import click

from mirrorspec.commands.params import get_console, plan_options, selection_options
from mirrorspec.commands.params import threads as threads_option
from mirrorspec.compile import load_plan_context
from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.base.errors import FailedRun


def _chosen(names: tuple[str, ...], plan, params: dict[str, Any], console) -> list[TablePlan]:
    from mirrorspec.project.selection import resolve_table, select_with_warnings

    if names and not (params["select"] or params["exclude"]):
        return list({t.unique_id: t for t in (resolve_table(plan, n) for n in names)}.values())
    tables = select_with_warnings(plan, params["select"], params["exclude"],
                                  state_path=params["state_path"], console=console)
    named = [resolve_table(plan, n) for n in names]
    return list({t.unique_id: t for t in named + tables}.values())


def _retention_hours(delta_path: str) -> float:
    """The table's delta.deletedFileRetentionDuration in hours, read without Spark."""
    from mirrorspec.readers.delta import table_uri
    from mirrorspec.operate.retention import RETENTION_PROPERTY, interval_hours

    try:
        from deltalake import DeltaTable

        configuration = DeltaTable(table_uri(delta_path)).metadata().configuration
    except Exception:  # noqa: BLE001 - unreadable here: Delta's own check still applies
        configuration = {}
    return interval_hours(configuration.get(RETENTION_PROPERTY))


def _say_readers(console, table: TablePlan, storage: dict[str, str]) -> None:
    """Which readers open the table now, and why the others refuse it (readers/compat.py)."""
    from mirrorspec.readers.compat import summary, verdicts
    from mirrorspec.readers.delta import open_table
    from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError

    try:
        found = verdicts(open_table(table.delta_path, table.unique_id, storage_options=storage))
    except (DeltaRsUnsupported, InspectError) as exc:
        console.info(f"{table.unique_id}: readers not checked (delta-rs can't open it: {exc})",
                     table=table.unique_id)
        return
    opening, refusing = summary(found)
    console.result(f"{table.unique_id}: {opening}", table=table.unique_id,
                   readers={v.reader: v.opens for v in found})
    for line in refusing:
        hint = ("; set `deletion_vectors: false` on the table and run `mirrorspec maintain` "
                "again, or use `mirrorspec export`" if "deletionVectors" in line else
                "; use `mirrorspec export` for it (docs/readers.md)")
        console.warning(f"{table.unique_id}: {line}{hint}", table=table.unique_id)


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
    from mirrorspec.operate.retention import check_retention

    console = get_console()
    ctx = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                            params["profiles_dir"], params["plan_path"], console)
    chosen = _chosen(tables, ctx.plan, params, console)
    if not chosen:
        return
    from mirrorspec.readers.delta import open_table
    from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError

    present = []
    for table in chosen:
        try:
            open_table(table.delta_path, table.unique_id)
        except InspectError:
            console.warning(f"{table.unique_id}: no Delta table yet, nothing to maintain",
                            table=table.unique_id)
            continue
        except DeltaRsUnsupported:
            pass  # Spark will read it
        if vacuum and retain_hours is not None:
            check_retention(table.unique_id, retain_hours, _retention_hours(table.delta_path),
                            allow_short_retention)
        present.append(table)
    if not present:
        return
    from concurrent.futures import as_completed

    from mirrorspec.base.interrupts import worker_pool

    from mirrorspec.readers.storage import plan_storage_options
    from mirrorspec.spark.ops.maintain import MaintainSteps, maintain_table
    from mirrorspec.spark.platform.live import LiveProgress
    from mirrorspec.spark.platform.session import start_session

    steps = MaintainSteps(purge, optimize, vacuum, retain_hours, allow_short_retention)
    spark = start_session(ctx.plan, console, warm=True)  # the warm server when one runs
    storage = plan_storage_options(ctx.plan)
    failed = []

    def one(table: TablePlan):
        progress.started(table.unique_id)
        return maintain_table(spark, table.unique_id, table.delta_path, table.deletion_vectors,
                              steps, progress)

    # Tables in parallel (each in its own session): on small tables Delta's commands wait on the
    # driver more than they compute, so the tables' waits overlap. Each step says when it
    # starts and ends; the bar (or a line every 10 s in a log) counts tables and stage tasks.
    with LiveProgress(console, len(present), spark, rates=False) as progress, \
            worker_pool(min(threads, len(present)), "mirrorspec-maintain") as pool:
        jobs = {pool.submit(one, table): table for table in present}
        for done in as_completed(jobs):
            table = jobs[done]
            try:
                outcome = done.result()
            except Exception as exc:  # noqa: BLE001 - one table's failure doesn't stop the others
                from mirrorspec.spark.ops.inspect import safe_message

                failed.append(table.unique_id)
                progress.finish(table.unique_id, failed=True)
                console.error(f"{table.unique_id}: {safe_message(exc).strip().splitlines()[0]}",
                              table=table.unique_id)
                continue
            progress.finish(table.unique_id)
            console.result(f"{table.unique_id}: " + ("; ".join(outcome.done) or "nothing to do"),
                           table=table.unique_id, done=outcome.done)
            _say_readers(console, table, storage)
    if failed:
        raise FailedRun(f"{len(failed)} table(s) failed: {', '.join(failed)}",
                        hint="see the errors above; the other tables were maintained")


COMMANDS = [maintain]
