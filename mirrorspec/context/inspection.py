"""Looking at mirrored tables without a JVM: the tables a command names and a table's export
to one file — for `mirrorspec show`, `history`, `changes`, `export` (and
`status --select`) and `Project.history`, `Project.export`, `Project.show`, `Project.changes`.

A table is named through the project's plan (a name or unique id) or as schema.table in a
warehouse folder (`--warehouse`: no project is read). Reads go through delta-rs
(`mirrorspec/readers/`); only what delta-rs can't read falls back to Spark (the plan's session
settings, else a local session), said as a warning (`reading.py`: rows, change data feed, history).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from mirrorspec.base.errors import MirrorspecError

if TYPE_CHECKING:
    from mirrorspec.artifacts.plan import Plan
    from mirrorspec.context.project import ProjectContext
    from mirrorspec.readers.export import Exported


class TableTarget(NamedTuple):
    """A table a command reads: its display name, Delta folder, plan (None with --warehouse)
    and key columns (rows are sorted by them)."""

    name: str
    path: str
    plan: "Plan | None"
    keys: list[str]


def plan_or_none(project: "ProjectContext", warehouse: str | None) -> "Plan | None":
    """The project's plan, or None when `warehouse` is given (it reads no project)."""
    return None if warehouse else project.load(say_inferred=False).plan


def resolve(table_name: str, project: "ProjectContext", warehouse: str | None) -> TableTarget:
    """TABLE in the project's plan, or schema.table in `warehouse`."""
    plan = plan_or_none(project, warehouse)
    if plan is None:
        from mirrorspec.openmirroring import mirroring

        schema, _, name = table_name.rpartition(".")
        schema = mirroring.warehouse_schema(schema or None)
        return TableTarget(f"{schema}.{name}", str(Path(str(warehouse)) / schema / name), None,
                           [])
    from mirrorspec.project.selection import resolve_table

    table = resolve_table(plan, table_name)
    return TableTarget(table.unique_id, table.delta_path, plan, list(table.key_columns))


def targets(table_name: str | None, project: "ProjectContext", warehouse: str | None,
            select: Sequence[str] = (), exclude: Sequence[str] = (),
            state_path: str | None = None, console: Any = None) -> list[TableTarget]:
    """What TABLE and/or --select/--exclude name, each once, TABLE first."""
    if not (select or exclude):
        if not table_name:
            raise MirrorspecError("name a TABLE or give --select", hint="e.g. `sales.orders`, "
                                  "or --select 'sales.*'")
        return [resolve(table_name, project, warehouse)]
    plan = plan_or_none(project, warehouse)
    if plan is None:
        raise MirrorspecError("--select/--exclude choose among the project's tables, and "
                              "--warehouse reads no project",
                              hint="drop --warehouse (run it in the project), or name TABLE")
    from mirrorspec.project.selection import select_with_warnings

    named = [resolve(table_name, project, warehouse)] if table_name else []
    chosen = select_with_warnings(plan, tuple(select), tuple(exclude), state_path=state_path,
                                  console=console)
    found = named + [TableTarget(t.unique_id, t.delta_path, plan, list(t.key_columns))
                     for t in chosen]
    return list({entry.name: entry for entry in found}.values())


# --- export --------------------------------------------------------------------------------

def export_table(project: "ProjectContext", table: str, dest: str, version: int | None = None,
                 force: bool = False, warehouse: str | None = None) -> "Exported":
    """Write TABLE (as of `version`, default the latest) to `dest` (FILE.parquet or FILE.csv),
    deletion vectors applied; `dest` is refused before anything is read when it lies in a
    warehouse or landing zone, or exists without `force`."""
    from mirrorspec.readers.errors import DeltaRsUnsupported
    from mirrorspec.readers.export import check_destination, export_table as write_file
    from mirrorspec.readers.storage import plan_storage_options

    protected = _export_protected(project, warehouse)
    check_destination(dest, protected, force)  # refused before anything is read
    target = resolve(table, project, warehouse)
    if target.plan is not None:
        protected += [("warehouse", target.plan.warehouse),
                      ("landing zone", target.plan.landing_zone)]
    try:
        return write_file(target.path, target.name, dest, version,
                          storage_options=plan_storage_options(target.plan), force=force,
                          protected=protected)
    except DeltaRsUnsupported as exc:
        raise MirrorspecError(
            f"{target.name}: export reads through delta-rs, which can't read this table: {exc}",
            hint="read it with Spark instead (docs/readers.md#spark), e.g. "
                 "spark.read.format('delta').load(path).write.parquet(...)") from None


def _export_protected(project: "ProjectContext", warehouse: str | None
                      ) -> list[tuple[str, str]]:
    """The folders `export --to` must stay out of that are known before the table is read:
    --warehouse, and the warehouse and landing zone of the project in --project-dir (when
    there is one: with --warehouse it is read only for this check)."""
    protected = [("warehouse", warehouse)] if warehouse else []
    from mirrorspec.load.project import PROJECT_FILE

    if project.plan_path or not (Path(str(project.project_dir)) / PROJECT_FILE).is_file():
        return protected
    try:
        plan = project.validate(check_landing=False).plan
    except MirrorspecError:
        if warehouse:
            return protected  # --warehouse reads no project: a broken one is not its concern
        raise
    return protected + [("warehouse", plan.warehouse), ("landing zone", plan.landing_zone)]
