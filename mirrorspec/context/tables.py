"""Finding the mirrored table a command names: through the project's plan (a name or unique id)
or a Delta folder / schema.table in a warehouse (reconcile, replay)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from mirrorspec.base.files import Files


class MirroredTable(NamedTuple):
    """A mirrored table a command was pointed at (reconcile, replay)."""

    unique_id: str
    path: str                   # the Delta table
    landing_path: str | None    # the project's landing folder of the table (None outside one)


def locate_table(table: str, warehouse: str | None, plan: Any,
                 files: Files | None = None) -> MirroredTable:
    """TABLE through the project's plan (a name or unique id in its warehouse) when there is one
    and TABLE is not a folder, else a Delta folder or schema.table in --warehouse. `files` serves
    the paths (`progress.mirror.resolve_table`: local only by default)."""
    from mirrorspec.progress.mirror import names_folder, resolve_table

    if plan is not None and not warehouse and not names_folder(table):
        from mirrorspec.project.selection import resolve_table as plan_table

        planned = plan_table(plan, table)
        unique_id, path = resolve_table(planned.unique_id, plan.warehouse, files)
        return MirroredTable(unique_id, path, planned.landing_path)
    return MirroredTable(*resolve_table(table, warehouse, files), None)
