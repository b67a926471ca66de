"""Two plans compared table by table: tables added, removed or renamed, and each table's changes
from the checks of each kind (schema, file format, table properties)."""

from __future__ import annotations

from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.sources.extract import EXTRACT_TYPES
from mirrorspec.project.diff.format_changes import dialect_changes, detection_changes, other_metadata_changes
from mirrorspec.project.diff.normalise import columns_of, folder_of, keys_of, metadata_of, type_of
from mirrorspec.project.diff.result import Change, PlanDiff, TableDiff
from mirrorspec.project.diff.rules import ADDED, MODIFIED, REMOVED, SEVERITIES, UNCHANGED
from mirrorspec.project.diff.schema_changes import column_changes, key_changes
from mirrorspec.project.diff.table_changes import table_property_changes


# --- comparing ------------------------------------------------------------------------------

def diff_plans(base: Plan | None, head: Plan, base_label: str = "base",
               head_label: str = "head", allow_breaking: bool = False) -> PlanDiff:
    """Compare two plans table by table. `base` None means no previous plan: all tables added."""
    old = {t.unique_id: t for t in (base.tables if base else [])}
    new = {t.unique_id: t for t in head.tables}
    tables = []
    for uid in sorted(set(old) | set(new)):
        before, after = old.get(uid), new.get(uid)
        if before is None:
            assert after is not None  # the uid came from one of the two plans
            tables.append(TableDiff(uid, ADDED, folder_of(after), after.recreate,
                                    (Change("table_added"),)))
        elif after is None:
            tables.append(TableDiff(uid, REMOVED, folder_of(before), False,
                                    (Change("table_removed"),)))
        else:
            changes = tuple(diff_tables(before, after))
            status = MODIFIED if changes else UNCHANGED
            tables.append(TableDiff(uid, status, folder_of(after), after.recreate, changes))
    return PlanDiff(base_label, head_label, tuple(_pair_renamed_tables(tables, old, new)),
                    allow_breaking)


def _pair_renamed_tables(tables: list[TableDiff], old: dict[str, TablePlan],
                         new: dict[str, TablePlan]) -> list[TableDiff]:
    """Mark an added table that looks like a removed one (same name in another schema, or the
    same declared columns and keys) as a possible rename."""
    removed = [t.unique_id for t in tables if t.status == REMOVED]
    out = []
    for table in tables:
        if table.status == ADDED and removed:
            after = new[table.unique_id]
            match = next((uid for uid in removed if _same_table(old[uid], after)), None)
            if match is not None:
                removed.remove(match)
                table = TableDiff(table.unique_id, table.status, table.landing_folder,
                                  table.recreate, table.changes + (
                                      Change("table_renamed", None, match, table.unique_id),))
        out.append(table)
    return out


def _same_table(before: TablePlan, after: TablePlan) -> bool:
    if before.name == after.name:
        return True
    columns = [(c.name, type_of(c)) for c in before.columns]
    return bool(columns) and columns == [(c.name, type_of(c)) for c in after.columns] \
        and keys_of(before) == keys_of(after)


def diff_tables(before: TablePlan, after: TablePlan) -> list[Change]:
    """Every change between two versions of one table, breaking ones first."""
    old_md, new_md = metadata_of(before), metadata_of(after)
    changes: list[Change] = []
    changes += key_changes(before, after)
    columns = column_changes(columns_of(before, old_md), columns_of(after, new_md))
    if after.source.type in EXTRACT_TYPES:
        columns = [Change("extract_column_added", c.subject, c.before, c.after)
                   if c.kind == "column_added" else c for c in columns]
    changes += columns
    changes += dialect_changes(before, after)
    changes += detection_changes(old_md, new_md)
    changes += other_metadata_changes(before.metadata, after.metadata, old_md, new_md)
    changes += table_property_changes(before, after)
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(changes, key=lambda c: order[c.severity])  # stable: keeps the check order
