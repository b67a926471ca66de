"""Changes to a table's schema: its key columns, and its columns (added, removed, renamed, retyped,
nullability, descriptions)."""

from __future__ import annotations

from mirrorspec.artifacts.plan import ColumnSpec, TablePlan
from mirrorspec.openmirroring.mirroring import keys_differ
from mirrorspec.project.diff.normalise import keys_of, nullability_of, type_of
from mirrorspec.project.diff.result import Change


def key_changes(before: TablePlan, after: TablePlan) -> list[Change]:
    """keyColumns added, reordered or changed."""
    old, new = keys_of(before), keys_of(after)
    if old == new:
        return []
    if not old:
        return [Change("key_columns_added", None, None, new)]
    if not keys_differ(old, new):
        return [Change("key_columns_reordered", None, old, new)]
    return [Change("key_columns_changed", None, old, new)]


def column_changes(old: list[ColumnSpec], new: list[ColumnSpec]) -> list[Change]:
    """Columns declared or undeclared, added, removed, renamed, retyped; their
    nullability and descriptions."""
    if not old and not new:
        return []
    if old and not new:
        return [Change("columns_undeclared", None, [c.name for c in old], None)]
    if new and not old:
        return [Change("columns_declared", None, None, [c.name for c in new])]
    old_by_name = {c.name: c for c in old}
    new_by_name = {c.name: c for c in new}
    removed = [(i, c) for i, c in enumerate(old) if c.name not in new_by_name]
    added = [(i, c) for i, c in enumerate(new) if c.name not in old_by_name]
    changes: list[Change] = []
    # A removed and an added column of the same type at the same position look like a rename.
    added_at = {i: c for i, c in added}
    renamed_new: set[str] = set()
    for index, column in removed:
        partner = added_at.get(index)
        if partner is not None and partner.name not in renamed_new \
                and type_of(partner) == type_of(column):
            renamed_new.add(partner.name)
            changes.append(Change("column_renamed", partner.name, column.name, partner.name))
        else:
            changes.append(Change("column_removed", column.name, type_of(column), None))
    for column in old:
        other = new_by_name.get(column.name)
        if other is None:
            continue
        old_type, new_type = type_of(column), type_of(other)
        if old_type != new_type:
            if old_type is None:
                changes.append(Change("column_type_declared", column.name, None, new_type))
            elif new_type is not None:
                changes.append(Change("column_type_changed", column.name, old_type, new_type))
        if (column.description or None) != (other.description or None):
            changes.append(Change("description_changed", column.name, column.description,
                                  other.description))
        if bool(column.nullable) != bool(other.nullable):
            changes.append(Change("column_nullability_changed", column.name,
                                  nullability_of(column), nullability_of(other)))
    for _, column in added:
        if column.name not in renamed_new:
            changes.append(Change("column_added", column.name, None, type_of(column)))
    return changes
